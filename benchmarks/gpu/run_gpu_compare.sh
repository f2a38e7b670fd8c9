#!/usr/bin/env bash
# Per-call overhead of an 8-byte GPU AllReduce, Weft vs NVIDIA's NCCL, side by side: the same
# gpu_allreduce_overhead binary runs with LD_PRELOAD naming Weft's libnccl.so.2, then NVIDIA's
# (LD_PRELOAD wins over the binary's RUNPATH, and the loader then takes the preloaded file for the
# binary's libnccl.so.2), alternating, --reps times; figures are medians over the repetitions. Each
# run prints the library it actually mapped, and a run that mapped another one fails the script.
#
# usage: benchmarks/gpu/run_gpu_compare.sh [--bin DIR] [--weft-lib FILE] [--nccl FILE]
#                                          [--build-dir DIR] [--reps N] [--iters N] [--out DIR]
#   --bin DIR        where gpu_allreduce_overhead is (default: build it, see --build-dir)
#   --weft-lib FILE  Weft's libnccl.so.2 (default: <build-dir>/libnccl.so.2)
#   --nccl FILE      NVIDIA's libnccl.so.2 (default: the nvidia-nccl wheel PyTorch uses, then
#                    torch/lib, then /usr/local/cuda/lib64)
#   --build-dir DIR  configure (-DWEFT_GPU=cuda) and build there (default <repo>/build-gpu)
#   --reps N         alternating repetitions (default 5); --iters N calls per run (default 5000)
#   --out DIR        raw outputs (default ${TMPDIR:-/tmp}/weft-gpu-compare/<timestamp>)
# Exit status: 0 done, 1 a run failed, 77 no NVIDIA GPU (or no NVIDIA NCCL to compare with).
# NOT YET RUN ON A GPU.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN="" WEFT_LIB="" NCCL_LIB="" BUILD="$REPO/build-gpu" REPS=5 ITERS=5000 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift ;;
    --weft-lib) WEFT_LIB=$2; shift ;;
    --nccl) NCCL_LIB=$2; shift ;;
    --build-dir) BUILD=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --iters) ITERS=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "run_gpu_compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "run_gpu_compare.sh: skipped: no NVIDIA GPU here (nvidia-smi -L lists none)"
  exit 77
fi

if [ -z "$BIN" ]; then
  echo "== build ($BUILD)"
  cmake -S "$REPO" -B "$BUILD" -DWEFT_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF >/dev/null
  cmake --build "$BUILD" --target weft_nccl gpu_allreduce_overhead -j "${JOBS:-$(nproc)}" >/dev/null
  BIN="$BUILD/benchmarks/gpu"
fi
WEFT_LIB=${WEFT_LIB:-$BUILD/libnccl.so.2}
TOOL="$BIN/gpu_allreduce_overhead"
[ -x "$TOOL" ] || { echo "run_gpu_compare.sh: no $TOOL" >&2; exit 1; }
[ -e "$WEFT_LIB" ] || { echo "run_gpu_compare.sh: no Weft library at $WEFT_LIB (--weft-lib)" >&2; exit 1; }

# NVIDIA's NCCL: the wheel PyTorch depends on (nvidia-nccl-cu*), older torch wheels' own copy,
# then the CUDA toolkit's.
find_nccl() {
  local d
  d=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null) &&
    [ -e "$d/lib/libnccl.so.2" ] && { echo "$d/lib/libnccl.so.2"; return; }
  d=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null) &&
    [ -e "$d/libnccl.so.2" ] && { echo "$d/libnccl.so.2"; return; }
  [ -e /usr/local/cuda/lib64/libnccl.so.2 ] && { echo /usr/local/cuda/lib64/libnccl.so.2; return; }
  return 1
}
NCCL_LIB=${NCCL_LIB:-$(find_nccl || true)}

OUT=${OUT:-${TMPDIR:-/tmp}/weft-gpu-compare/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
echo "# weft: $(readlink -f "$WEFT_LIB")"
echo "# nccl: ${NCCL_LIB:+$(readlink -f "$NCCL_LIB")}"
echo "# raw outputs: $OUT"

# run NAME LIB REP: one run; its RESULT line goes to $OUT/NAME.results.
run() {
  local name=$1 lib=$2 rep=$3 log="$OUT/$1.$3.txt" rc=0
  LD_PRELOAD="$lib" timeout 300 "$TOOL" -n "$ITERS" >"$log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    echo "run_gpu_compare.sh: $name run $rep failed (rc=$rc):" >&2
    tail -5 "$log" >&2
    exit 1
  fi
  local mapped
  mapped=$(sed -n 's/^RESULT lib=\([^ ]*\).*/\1/p' "$log")
  if [ "$(readlink -f "$mapped")" != "$(readlink -f "$lib")" ]; then
    echo "run_gpu_compare.sh: $name run $rep mapped $mapped, not $lib" >&2
    exit 1
  fi
  grep '^RESULT' "$log" >>"$OUT/$name.results"
}

for rep in $(seq 1 "$REPS"); do
  # Alternate which library goes first, so drift (clocks, other load) hits both alike.
  if [ $((rep % 2)) = 1 ] || [ -z "$NCCL_LIB" ]; then order="weft nccl"; else order="nccl weft"; fi
  for who in $order; do
    if [ "$who" = weft ]; then run weft "$WEFT_LIB" "$rep"; elif [ -n "$NCCL_LIB" ]; then run nccl "$NCCL_LIB" "$rep"; fi
  done
done

# median KEY FILE: the median of KEY=value over the RESULT lines of FILE.
median() {
  sed -n "s/.* $1=\([0-9.]*\).*/\1/p" "$2" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
printf '\n%-34s %12s %12s %10s\n' "8-byte AllReduce, 1 rank" "Weft" "NCCL" "Weft/NCCL"
for key in enqueue_us latency_median_us latency_mean_us latency_p99_us; do
  w=$(median "$key" "$OUT/weft.results")
  n=$([ -n "$NCCL_LIB" ] && median "$key" "$OUT/nccl.results" || echo "-")
  ratio=$(awk -v w="$w" -v n="$n" 'BEGIN { if (n + 0 > 0) printf "%.2f", w / n; else print "-" }')
  printf '%-34s %12s %12s %10s\n' "$key (median of $REPS)" "$w" "$n" "$ratio"
done
if [ -z "$NCCL_LIB" ]; then
  echo "run_gpu_compare.sh: no NVIDIA libnccl.so.2 found (pip nvidia-nccl-cu*, torch/lib, /usr/local/cuda/lib64); use --nccl FILE"
  exit 77
fi
