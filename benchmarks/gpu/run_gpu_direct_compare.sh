#!/usr/bin/env bash
# The direct lane on a GPU against the ring, side by side: gpu_allreduce_bench (-t ranks as
# threads on device 0, AllReduce float sum) run with NCCL_ALGO=Ring, DDAFlat and DDATree, and with
# FP8 low precision (RCCL_LOW_PRECISION_ENABLE=1, results not checked: they are approximate),
# alternating in that order --reps times. Prints, per size, the median time of each and its ratio
# to the ring's.
#
# usage: benchmarks/gpu/run_gpu_direct_compare.sh [--bin DIR] [--ranks N] [--reps N] [--out DIR]
#   --bin DIR   where gpu_allreduce_bench is (default <repo>/build-gpu/benchmarks/gpu)
#   --ranks N   ranks (threads) on device 0 (default 4)
#   --reps N    alternating repetitions (default 5)
#   --out DIR   raw outputs (default ${TMPDIR:-/tmp}/weft-gpu-direct/<timestamp>)
# Exit status: 0 done, 1 a run failed, 77 no GPU.
# NOT YET RUN ON A GPU: written on a machine without one, where it exits 77.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN="$REPO/build-gpu/benchmarks/gpu" RANKS=4 REPS=5 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift ;;
    --ranks) RANKS=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run_gpu_direct_compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU' && ! rocm-smi --showid 2>/dev/null | grep -q 'GPU\['; then
  echo "run_gpu_direct_compare.sh: skipped: no GPU here (neither nvidia-smi nor rocm-smi lists one)"
  exit 77
fi
[ -x "$BIN/gpu_allreduce_bench" ] || { echo "no $BIN/gpu_allreduce_bench (build with -DWEFT_GPU=cuda or hip)" >&2; exit 1; }
OUT=${OUT:-${TMPDIR:-/tmp}/weft-gpu-direct/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

# name|environment|check: sizes up to the DDA tree limit's default (30 MB), where DDA applies.
VARIANTS=(
  "ring|NCCL_ALGO=Ring|1"
  "ddaflat|NCCL_ALGO=DDAFlat RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES=1073741824|1"
  "ddatree|NCCL_ALGO=DDATree|1"
  "fp8|RCCL_LOW_PRECISION_ENABLE=1 WEFT_LOW_PRECISION_MIN_BYTES=0|0"
)
for rep in $(seq 1 "$REPS"); do
  for v in "${VARIANTS[@]}"; do
    IFS='|' read -r name envs check <<<"$v"
    # shellcheck disable=SC2086
    if ! env $envs "$BIN/gpu_allreduce_bench" -t "$RANKS" -b 8 -e 16777216 -f 4 -c "$check" \
        >"$OUT/$name.$rep.txt" 2>&1; then
      echo "run_gpu_direct_compare.sh: $name run $rep failed; see $OUT/$name.$rep.txt" >&2
      exit 1
    fi
  done
done

/usr/bin/python3 - "$OUT" "$REPS" <<'PY'
import statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
names = ["ring", "ddaflat", "ddatree", "fp8"]
times = {}  # (name, size) -> [us]
for n in names:
    for r in range(1, reps + 1):
        for line in open(f"{out}/{n}.{r}.txt"):
            f = line.split()
            if len(f) >= 4 and not line.startswith("#") and f[0].isdigit():
                times.setdefault((n, int(f[0])), []).append(float(f[3]))
sizes = sorted({s for (_, s) in times})
print(f"# median time per AllReduce (us) over {reps} alternating runs; x = ring time / this time")
print("%10s" % "size(B)" + "".join("%18s" % n for n in names))
for s in sizes:
    ring = statistics.median(times.get(("ring", s), [float("nan")]))
    cells = []
    for n in names:
        t = statistics.median(times.get((n, s), [float("nan")]))
        cells.append("%10.2f (%4.2fx)" % (t, ring / t if t else float("nan")))
    print("%10d" % s + "".join("%18s" % c for c in cells))
print(f"# raw outputs: {out}")
PY
