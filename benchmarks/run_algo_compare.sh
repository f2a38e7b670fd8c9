#!/usr/bin/env bash
# Weft's AllReduce algorithms side by side in one run, host mode: each algorithm forced with
# NCCL_ALGO (Ring, Tree, DDAFlat, DDATree) and the tuner's own choice (NCCL_ALGO unset), for every
# size from 8 B to 64 MiB, float32 sum, N ranks as processes. Also low precision at its sizes
# (RCCL_LOW_PRECISION_ENABLE=1, results not checked bit-exactly: the accuracy is reported by
# tests/collectives LowPrecisionColl). Interleaved repetitions, medians of the max over ranks.
#
# usage: benchmarks/run_algo_compare.sh [--ranks N] [--reps R] [--bin DIR] [--out DIR]
# Output: DIR/raw/*.txt and DIR/summary.md (also printed): one row per size with every algorithm's
# time, the fastest forced one, the tuner's time and its ratio to the fastest.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
BIN="$REPO/build/benchmarks" N=4 REPS=3 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) N=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "run_algo_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-${TMPDIR:-/tmp}/weft-algo-compare/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw"
ALGOS="default Ring Tree DDAFlat DDATree"
one() {  # algo: runs the size bands, small sizes with many iterations
  local algo=$1 common=(-N "$N" -d float -o sum -a 3 --rotate 0 --timeout 280)
  local env=(); [ "$algo" != default ] && env=(NCCL_ALGO="$algo")
  env "${env[@]}" "$BIN/all_reduce_perf" "${common[@]}" -c 1 -b 8 -e 4K -f 2 -n 2000 -w 200
  env "${env[@]}" "$BIN/all_reduce_perf" "${common[@]}" -c 1 -b 8K -e 1M -f 2 -n 200 -w 20
  env "${env[@]}" "$BIN/all_reduce_perf" "${common[@]}" -c 1 -b 2M -e 64M -f 2 -n 10 -w 2
}
for r in $(seq 1 "$REPS"); do
  list=$ALGOS; [ $((r % 2)) = 0 ] && list=$(echo "$ALGOS" | tr ' ' '\n' | tac | tr '\n' ' ')
  for a in $list; do
    echo "== $a rep $r"
    one "$a" >"$OUT/raw/$a.rep$r.txt" 2>&1 || echo "   $a failed (see $OUT/raw/$a.rep$r.txt)"
  done
  echo "== LowPrecision rep $r"
  RCCL_LOW_PRECISION_ENABLE=1 WEFT_LOW_PRECISION_MIN_BYTES=0 "$BIN/all_reduce_perf" -N "$N" -d float -o sum -a 3 \
    --rotate 0 --timeout 280 -c 0 -b 1M -e 64M -f 4 -n 10 -w 2 >"$OUT/raw/LowPrecision.rep$r.txt" 2>&1 ||
    echo "   LowPrecision failed"
done
python3 - "$OUT" "$ALGOS LowPrecision" >"$OUT/summary.md" <<'PY'
import glob, statistics, sys
d, algos = sys.argv[1], sys.argv[2].split()
t = {a: {} for a in algos}
wrong = {a: 0 for a in algos}
for a in algos:
    for f in glob.glob(f"{d}/raw/{a}.rep*.txt"):
        for line in open(f, errors="replace"):
            p = line.split()
            if len(p) >= 9 and p[0].isdigit():
                t[a].setdefault(int(p[0]), []).append(float(p[5]))  # out-of-place time, us
                if p[8].isdigit(): wrong[a] += int(p[8])
med = lambda v: statistics.median(v) if v else float("nan")
sizes = sorted(set(s for a in algos for s in t[a]))
forced = [a for a in algos if a not in ("default", "LowPrecision")]
print("| bytes | " + " | ".join(f"{a} us" for a in algos) + " | fastest forced | tuner / fastest |")
print("|---:|" + "---:|" * len(algos) + "---|---:|")
for s in sizes:
    m = {a: med(t[a].get(s, [])) for a in algos}
    best = min((m[a], a) for a in forced if m[a] == m[a])
    print(f"| {s} | " + " | ".join(f"{m[a]:.2f}" for a in algos) + f" | {best[1]} | {m['default'] / best[0]:.2f} |")
print("\nwrong elements reported by -c 1:", {a: wrong[a] for a in algos if a != "LowPrecision"})
PY
cat "$OUT/summary.md"
echo "== done: $OUT/summary.md"
