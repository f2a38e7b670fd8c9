#!/usr/bin/env bash
# One-sided puts against two-sided sends, side by side in one run: put_signal_perf and
# sendrecv_perf, 2 ranks as processes, float, 8 B .. 64 MiB (x4), out of place, over shared memory
# (a put is one process_vm_writev) and over the network transport (NCCL_SHM_DISABLE=1: loopback
# TCP through the proxies). The tools alternate and their order flips every repetition; every
# figure is the median over --reps repetitions. The ratio is sendrecv's time over the put's, so
# > 1 means the put is faster.
#
# usage: benchmarks/run_put_compare.sh [--reps N] [--bin DIR] [--out DIR] [--rotate 0|1]
#   --bin DIR     Weft's perf tools (default <repo>/build/benchmarks)
#   --rotate 0|1  1 (default): walk through the 64 MiB buffers as nccl-tests does (cold caches);
#                 0: reuse the same bytes every iteration (warm caches)
# Output: DIR/raw/*.txt and DIR/summary.md (also printed). About 3 minutes with --reps 3.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN="$HERE/../build/benchmarks" REPS=3 OUT="" ROTATE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --out) OUT=$2; shift ;;
    --rotate) ROTATE=$2; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "run_put_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
for t in put_signal_perf sendrecv_perf; do
  [ -x "$BIN/$t" ] || { echo "run_put_compare.sh: $BIN/$t not found (build the weft_benchmarks target)" >&2; exit 2; }
done
OUT=${OUT:-${TMPDIR:-/tmp}/weft-put-compare/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw"
for rep in $(seq 1 "$REPS"); do
  order="put_signal sendrecv"
  [ $((rep % 2)) -eq 0 ] && order="sendrecv put_signal"
  for transport in shm net; do
    shmOff=0
    [ "$transport" = net ] && shmOff=1
    for tool in $order; do
      NCCL_SHM_DISABLE=$shmOff "$BIN/${tool}_perf" -N 2 -b 8 -e 64M -f 4 -c 1 --rotate "$ROTATE" \
        >"$OUT/raw/$tool.$transport.$rep.txt" 2>&1
    done
  done
  echo "repetition $rep of $REPS done"
done
python3 - "$OUT" "$REPS" <<'PY' | tee "$OUT/summary.md"
import statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def times(path):
    got = {}
    for line in open(path):
        f = line.split()
        if len(f) > 6 and f[0].isdigit():
            if f[8] not in ("0", "N/A"):
                sys.exit(f"{path}: {f[8]} wrong values at {f[0]} bytes")
            got[int(f[0])] = float(f[5])  # out of place, us
    return got
print(f"# put_signal_perf vs sendrecv_perf, 2 ranks, out of place, medians of {reps} (us)\n")
for transport in ("shm", "net"):
    put = [times(f"{out}/raw/put_signal.{transport}.{r}.txt") for r in range(1, reps + 1)]
    two = [times(f"{out}/raw/sendrecv.{transport}.{r}.txt") for r in range(1, reps + 1)]
    print(f"## {transport}\n\n| bytes | put + signal | send/recv | send/recv / put |\n|---:|---:|---:|---:|")
    for size in sorted(put[0]):
        p = statistics.median(r[size] for r in put)
        s = statistics.median(r[size] for r in two)
        print(f"| {size} | {p:.2f} | {s:.2f} | {s / p:.2f}x |")
    print()
PY
echo "results in $OUT"
