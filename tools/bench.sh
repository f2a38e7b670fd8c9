#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Weft and runs the main job: a 4-rank host-mode
# AllReduce benchmark from 8 B to 64 MiB (nccl-tests' all_reduce_perf command line and output).
# Extra arguments go to all_reduce_perf (e.g. -N 2, -d half, -o max).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build-release -j"$(nproc)" --target all_reduce_perf
WEFT_DEVICE=host ./build-release/benchmarks/all_reduce_perf -N 4 -b 8 -e 64M -f 2 -c 1 "$@"
