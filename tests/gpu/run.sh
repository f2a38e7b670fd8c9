#!/usr/bin/env bash
# Everything GPU in one go, on a machine with an NVIDIA GPU (see tests/gpu/README.md):
#   1. builds Weft for CUDA (cmake -DWEFT_GPU=cuda) into build-gpu;
#   2. runs the GPU tests (ctest -L gpu: both gtest tiers and the benchmark smoke runs), with
#      WEFT_GPU_TEST_REQUIRE=1 so that a test that finds no usable GPU fails instead of skipping;
#   3. runs benchmarks/gpu: gpu_allreduce_bench (4 ranks on one GPU, busbw vs D2D copy) and
#      run_gpu_compare.sh (8-byte AllReduce overhead, Weft vs NVIDIA's NCCL) and
#      run_gpu_direct_compare.sh (DDA flat, DDA tree and FP8 against the ring, 8 B .. 16 MiB);
#   4. runs PyTorch on Weft: LD_PRELOAD=<build>/libnccl.so.2, NCCL_DEBUG=VERSION, torchrun with 4
#      processes all on cuda:0 running tests/gpu/torch_check.py; checks every op PASSed on every
#      rank, Weft's version banner is in the output and each rank mapped Weft's libnccl.so.2.
#
# usage: tests/gpu/run.sh [--build-dir DIR] [--no-build] [--no-torch] [--no-bench] [--nproc N]
# Environment: JOBS (build jobs, default nproc), CTEST_JOBS (default 4), WEFT_CUDA_ARCH
# (CMAKE_CUDA_ARCHITECTURES, default native).
# Exit status: 0 all passed; 1 something failed; 77 no NVIDIA GPU, or PyTorch (with CUDA) missing
# while everything else passed (--no-torch makes that 0).
# NOT YET RUN ON A GPU: written on a machine without one, where it exits 77 at step 0.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD="$REPO/build-gpu" BUILD_IT=1 TORCH=1 BENCH=1 NPROC=4
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD=$2; shift ;;
    --no-build) BUILD_IT=0 ;;
    --no-torch) TORCH=0 ;;
    --no-bench) BENCH=0 ;;
    --nproc) NPROC=$2; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# 0. A GPU, or nothing to do here.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "run.sh: skipped: no NVIDIA GPU here (nvidia-smi -L lists none). The GPU tests need one; see tests/gpu/README.md."
  exit 77
fi
nvidia-smi -L
LOGS="$BUILD/gpu-run-logs"
mkdir -p "$LOGS"
FAILED=()

# 1. Build.
if [ "$BUILD_IT" = 1 ]; then
  echo "== build ($BUILD)"
  if ! cmake -S "$REPO" -B "$BUILD" -DWEFT_GPU=cuda -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CUDA_ARCHITECTURES="${WEFT_CUDA_ARCH:-native}" >"$LOGS/configure.log" 2>&1 ||
     ! cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target weft_nccl weft_gpu_threads_tests weft_gpu_procs_tests \
       gpu_allreduce_bench gpu_allreduce_overhead >"$LOGS/build.log" 2>&1; then
    tail -30 "$LOGS/configure.log" "$LOGS/build.log" 2>/dev/null
    echo "run.sh: FAIL: the CUDA build failed (logs in $LOGS)"
    exit 1
  fi
fi
LIB=$(readlink -f "$BUILD/libnccl.so.2")
[ -e "$LIB" ] || { echo "run.sh: FAIL: no $BUILD/libnccl.so.2"; exit 1; }

# 2. The GPU tests.
echo "== ctest -L gpu"
if ! (cd "$BUILD" && WEFT_GPU_TEST_REQUIRE=1 ctest -L gpu --output-on-failure -j "${CTEST_JOBS:-4}") 2>&1 |
     tee "$LOGS/ctest.log"; then
  FAILED+=("GPU tests (ctest -L gpu; $LOGS/ctest.log)")
fi

# 3. Benchmarks.
if [ "$BENCH" = 1 ]; then
  echo "== gpu_allreduce_bench"
  "$BUILD/benchmarks/gpu/gpu_allreduce_bench" 2>&1 | tee "$LOGS/gpu_allreduce_bench.txt" ||
    FAILED+=("gpu_allreduce_bench")
  echo "== run_gpu_compare.sh"
  rc=0
  "$REPO/benchmarks/gpu/run_gpu_compare.sh" --bin "$BUILD/benchmarks/gpu" --weft-lib "$LIB" --out "$LOGS/compare" || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 77 ] || FAILED+=("run_gpu_compare.sh (rc $rc)")
  echo "== run_gpu_direct_compare.sh"
  rc=0
  "$REPO/benchmarks/gpu/run_gpu_direct_compare.sh" --bin "$BUILD/benchmarks/gpu" --reps 3 --out "$LOGS/direct" || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 77 ] || FAILED+=("run_gpu_direct_compare.sh (rc $rc)")
fi

# 4. PyTorch on Weft.
TORCH_STATUS="not run (--no-torch)"
if [ "$TORCH" = 1 ]; then
  if ! python3 -c 'import sys, torch, torch.distributed as d; sys.exit(0 if torch.cuda.is_available() and d.is_nccl_available() else 1)' \
       2>/dev/null; then
    TORCH_STATUS="skipped: python3 has no PyTorch with CUDA and NCCL support"
  else
    echo "== torchrun --nproc_per_node=$NPROC tests/gpu/torch_check.py (LD_PRELOAD=$LIB)"
    log="$LOGS/torch_check.log"
    # NCCL_DEBUG=VERSION: Weft prints one banner line per process ("... NCCL version 2.30.7+weft-X.Y.Z").
    # torchrun is started as a module so the python3 found above is the one that runs it.
    LD_PRELOAD="$LIB" NCCL_DEBUG=VERSION timeout 900 python3 -m torch.distributed.run --standalone \
      --nproc_per_node="$NPROC" "$HERE/torch_check.py" >"$log" 2>&1
    rc=$?
    grep -E 'PASS|FAIL|mapped|weftGetVersionString|torch |\+weft-' "$log"
    problems=()
    [ "$rc" = 0 ] || problems+=("torchrun exited $rc")
    grep -q ': FAIL ' "$log" && problems+=("an op FAILed")
    want=$((NPROC * 9))  # 9 PASS lines per rank: 3 all_reduce, 5 other ops, barrier
    got=$(grep -c ': PASS ' "$log")
    [ "$got" = "$want" ] || problems+=("$got PASS lines, expected $want")
    grep -q '+weft-' "$log" || problems+=("no Weft version banner: PyTorch did not initialize NCCL through Weft")
    mapped=$(grep -c "libnccl mapped: $LIB\$" "$log")
    [ "$mapped" = "$NPROC" ] ||
      problems+=("$mapped of $NPROC ranks mapped $LIB (a PyTorch that links NCCL statically ignores LD_PRELOAD)")
    if [ ${#problems[@]} = 0 ]; then
      TORCH_STATUS="PASS ($NPROC ranks on cuda:0, every op checked, Weft's libnccl.so.2 in use)"
    else
      TORCH_STATUS="FAIL: $(IFS=';'; echo "${problems[*]}") (log: $log)"
      FAILED+=("PyTorch")
    fi
  fi
fi

echo
echo "== summary"
echo "PyTorch: $TORCH_STATUS"
if [ ${#FAILED[@]} != 0 ]; then
  printf 'FAILED: %s\n' "${FAILED[@]}"
  exit 1
fi
case "$TORCH_STATUS" in
  skipped*) echo "run.sh: everything else passed; PyTorch part skipped (exit 77; --no-torch makes this 0)"; exit 77 ;;
esac
echo "run.sh: all GPU checks passed"
