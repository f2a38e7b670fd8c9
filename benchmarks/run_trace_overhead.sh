#!/usr/bin/env bash
# What the operation timeline (WEFT_TRACE_FILE, docs/trace.md) costs: 2-rank float32 sum
# AllReduce over shared memory with the trace off and on, and, given --base-bin, a build without
# the trace hooks as the reference for "off". Runs alternate (the order rotates every repetition)
# and every figure is the median over --reps repetitions of all_reduce_perf's average time.
#
# usage: benchmarks/run_trace_overhead.sh [--reps N] [--sizes LIST] [--bin DIR] [--base-bin DIR] [--out DIR]
#   --reps N        repetitions (default 5)
#   --sizes LIST    bytes per rank, comma-separated, K/M suffixes (default 8,64K,4M)
#   --bin DIR       Weft's perf tools (default <repo>/build/benchmarks)
#   --base-bin DIR  another build's perf tools, measured as "base" (for example one without the hooks)
#   --out DIR       results (default ${TMPDIR:-/tmp}/weft-trace-cost/<timestamp>)
# Output: DIR/raw/*.txt, DIR/summary.md (printed). About a minute per repetition on 2 cores.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
REPS=5 SIZES=8,64K,4M BIN="$REPO/build/benchmarks" BASE_BIN="" OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift ;;
    --sizes) SIZES=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --base-bin) BASE_BIN=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run_trace_overhead.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=benchmarks/sizes.sh
. "$HERE/sizes.sh"
[ -x "$BIN/all_reduce_perf" ] || { echo "run_trace_overhead.sh: no $BIN/all_reduce_perf (build the benchmarks)" >&2; exit 2; }
OUT=${OUT:-${TMPDIR:-/tmp}/weft-trace-cost/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw" "$OUT/traces"
modes=(off on)
[ -n "$BASE_BIN" ] && modes=(base off on)

iters() {
  if [ "$1" -le 4096 ]; then echo "-n 5000 -w 500"; elif [ "$1" -le 1048576 ]; then echo "-n 500 -w 50"
  else echo "-n 20 -w 2"; fi
}
run() {  # mode size name
  local bin=$BIN env=(WEFT_DEVICE=host) rc=0
  [ "$1" = base ] && bin=$BASE_BIN
  # The trace keeps every event of the run: give it room, and count the file's size.
  [ "$1" = on ] && env+=(WEFT_TRACE_FILE="$OUT/traces/$3.%r.json" WEFT_TRACE_MAX_EVENTS=20000000)
  # shellcheck disable=SC2046  # iters is a list of options
  env "${env[@]}" timeout 300 "$bin/all_reduce_perf" -N 2 -b "$2" -e "$2" $(iters "$2") -d float -o sum \
    -a 3 --rotate 0 -c 1 >"$OUT/raw/$3.txt" 2>"$OUT/raw/$3.err" || rc=$?
  [ "$rc" = 0 ] || echo "   !! $3 failed (rc=$rc): $(tail -2 "$OUT/raw/$3.err" | tr '\n' ' ')"
}

for r in $(seq 1 "$REPS"); do
  for s in ${SIZES//,/ }; do
    b=$(bytes_of "$s")
    set -- "${modes[@]}"
    # Rotate the order so that no mode always runs first (or right after another).
    for _ in $(seq 1 $(( (r - 1) % $# ))); do set -- "${@:2}" "$1"; done
    for m in "$@"; do
      echo "== ${m}_$b.rep$r"
      run "$m" "$b" "${m}_$b.rep$r"
    done
  done
done

python3 - "$OUT" >"$OUT/summary.md" <<'PY'
import glob, os, re, statistics, sys
from collections import defaultdict
d = sys.argv[1]
times, events = defaultdict(list), defaultdict(list)
for f in glob.glob(os.path.join(d, "raw", "*.txt")):
    m = re.match(r"(base|off|on)_(\d+)\.rep(\d+)\.txt$", os.path.basename(f))
    if not m:
        continue
    mode, size = m.group(1), int(m.group(2))
    for line in open(f, errors="replace"):
        x = line.split()
        if len(x) == 13 and x[0] == str(size):
            times[(mode, size)].append(float(x[5]))
for f in glob.glob(os.path.join(d, "traces", "on_*.0.json")):
    size = int(re.match(r"on_(\d+)\.", os.path.basename(f)).group(1))
    events[size].append(os.path.getsize(f))
print("# Trace cost: 2 ranks, shared memory, float32 sum AllReduce, out-of-place\n")
print("Median of all_reduce_perf's time per operation over the repetitions.\n")
modes = [m for m in ("base", "off", "on") if any(k[0] == m for k in times)]
print("| bytes | " + " | ".join(modes) + " | off / base | on / off | rank 0's file |")
print("|---:|" + "---:|" * (len(modes) + 3))
for s in sorted({k[1] for k in times}):
    med = {m: statistics.median(times[(m, s)]) for m in modes if times.get((m, s))}
    cells = [f"{med[m]:.2f} us" if m in med else "failed" for m in modes]
    ob = f"{med['off'] / med['base']:.3f}" if "base" in med and "off" in med else "-"
    oo = f"{med['on'] / med['off']:.3f}" if "on" in med and "off" in med else "-"
    size = f"{statistics.median(events[s]) / 1e6:.1f} MB" if events.get(s) else "-"
    print(f"| {s} | " + " | ".join(cells) + f" | {ob} | {oo} | {size} |")
PY
cat "$OUT/summary.md"
echo "== done: $OUT/summary.md"
