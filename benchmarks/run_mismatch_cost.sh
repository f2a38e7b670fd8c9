#!/usr/bin/env bash
# What collective mismatch detection costs: all_reduce_perf at 8 B (the size where a per-message
# cost shows most) on 2 and 4 ranks (forked processes), with WEFT_MISMATCH_CHECK=1 and =0.
# Configurations are interleaved (check on and off alternate, the order flips every repetition)
# and every figure is the median over --reps repetitions, because the machine is shared and noisy.
# Each run reports the max over ranks (-a 3) and reuses the same bytes (--rotate 0), as
# run_compare.sh does; runs are not validated (-c 0: validation would dominate an 8 B op).
#
# usage: benchmarks/run_mismatch_cost.sh [--bin DIR] [--reps N] [--iters N] [--ranks "2 4"] [--out DIR]
#   --bin DIR    where all_reduce_perf is (default <repo>/build-release/benchmarks; build it with
#                cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_BENCHMARKS=ON
#                && cmake --build build-release --target all_reduce_perf)
#   --reps N     repetitions of every configuration (default 9)
#   --iters N    timed iterations per run (default 20000; 2000 more warm up)
#   --ranks L    rank counts (default "2 4")
#   --out DIR    where results go (default ${TMPDIR:-/tmp}/weft-mismatch-cost/<timestamp>)
# Output: DIR/raw/*.txt (every run), DIR/times.tsv (ranks, check, rep, out-of-place and in-place
# µs) and DIR/summary.md (also printed). Default run: about 3-5 minutes on 2 cores.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
BIN="$REPO/build-release/benchmarks" REPS=9 ITERS=20000 RANKS="2 4" OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --iters) ITERS=$2; shift ;;
    --ranks) RANKS=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "run_mismatch_cost.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
TOOL="$BIN/all_reduce_perf"
[ -x "$TOOL" ] || { echo "run_mismatch_cost.sh: no all_reduce_perf in $BIN (see --help to build it)" >&2; exit 2; }
OUT=${OUT:-${TMPDIR:-/tmp}/weft-mismatch-cost/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw"
TIMES="$OUT/times.tsv"
printf 'ranks\tcheck\trep\toop_us\tip_us\n' >"$TIMES"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "tool: $TOOL"
  echo "git: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')"
} >"$OUT/env.txt"

for rep in $(seq 1 "$REPS"); do
  for n in $RANKS; do
    order="1 0"
    [ $((rep % 2)) -eq 0 ] && order="0 1"
    for check in $order; do
      raw="$OUT/raw/n$n-check$check-rep$rep.txt"
      WEFT_DEVICE=host WEFT_MISMATCH_CHECK=$check "$TOOL" -N "$n" -b 8 -e 8 -n "$ITERS" -w 2000 -c 0 -a 3 \
        --rotate 0 --timeout 300 >"$raw" 2>&1 || { echo "run failed: see $raw" >&2; exit 1; }
      # The one data row: size count type redop root time algbw busbw #wrong time algbw busbw #wrong.
      read -r oop ip < <(awk '!/^#/ && NF >= 10 { print $6, $10; exit }' "$raw")
      printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$check" "$rep" "$oop" "$ip" >>"$TIMES"
      echo "rep $rep/$REPS, $n ranks, WEFT_MISMATCH_CHECK=$check: $oop us out of place, $ip us in place"
    done
  done
done

python3 - "$TIMES" >"$OUT/summary.md" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("| ranks | variant | check=1 median (us) | check=0 median (us) | cost (medians) | check=1 / 0 best (us) | runs |")
print("|---|---|---|---|---|---|---|")
for n in sorted({r["ranks"] for r in rows}, key=int):
    for col, name in (("oop_us", "out of place"), ("ip_us", "in place")):
        on = [float(r[col]) for r in rows if r["ranks"] == n and r["check"] == "1"]
        off = [float(r[col]) for r in rows if r["ranks"] == n and r["check"] == "0"]
        m1, m0 = statistics.median(on), statistics.median(off)
        print(f"| {n} | {name} | {m1:.2f} | {m0:.2f} | {100 * (m1 - m0) / m0:+.1f}% | {min(on):.2f} / {min(off):.2f} "
              f"| {len(on)} + {len(off)} |")
EOF
echo
cat "$OUT/summary.md"
echo "results in $OUT"
