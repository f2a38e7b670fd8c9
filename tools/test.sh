#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Weft and runs the whole test suite (host mode).
#   bash tools/test.sh            everything: unit, threads, procs, abi (+ the nvcc primitives check)
#   WEFT_TEST_LABELS=unit bash tools/test.sh     only the tiers whose ctest label matches
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=ON -DWEFT_BUILD_TESTS=ON -DWEFT_BUILD_BENCHMARKS=ON
cmake --build build -j"$jobs"

# The single-source primitives must keep compiling with nvcc (compile only: no GPU needed).
if [ -x /usr/local/cuda/bin/nvcc ]; then
  cmake -S . -B build-cuda-check -DWEFT_CUDA_PRIMITIVES_CHECK=ON -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
    -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build build-cuda-check --target weft_cuda_primitives_check -j"$jobs"
  echo "nvcc check: the reduction primitives compile for CUDA"
else
  echo "nvcc check: skipped (no /usr/local/cuda/bin/nvcc on this machine)"
fi

export WEFT_DEVICE=host
ctest --test-dir build --output-on-failure -j2 --timeout 600 ${WEFT_TEST_LABELS:+-L "$WEFT_TEST_LABELS"}
