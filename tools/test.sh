#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Weft and runs the whole test suite (host mode), then
# checks the GPU builds: CUDA (built with its tests, which run in host mode here) and HIP (compiled).
#   bash tools/test.sh            everything: unit, threads, procs, abi, and the GPU builds
#   WEFT_TEST_LABELS=unit bash tools/test.sh     only the tiers whose ctest label matches
#   WEFT_TEST_GPU_BUILDS=0 bash tools/test.sh    no CUDA or HIP build (the nvcc primitives check stays)
#   WEFT_TEST_CUDA_LABELS='unit' ...             the tiers the CUDA build runs (default: unit|abi)
#   WEFT_TEST_FUZZ=0 bash tools/test.sh          no fuzzing (WEFT_TEST_FUZZ_SECONDS: per target, default 10)
#   WEFT_TEST_SANITIZERS=0 bash tools/test.sh    no ASan+UBSan or TSan build (tools/test_sanitizers.sh)
#   WEFT_TEST_GFX942=1 bash tools/test.sh        also the gfx942 (MI300X) compile in a Debian 13 chroot
#                                                (tools/build-gfx942.sh: root, a download the first time)
# The tests run on an empty calibration cache of their own (WEFT_CACHE_DIR, removed at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
gpu_builds=${WEFT_TEST_GPU_BUILDS:-1}
bash tools/setup-debian.sh
jobs=$(nproc)
nvcc=/usr/local/cuda/bin/nvcc
section() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }
# ccache (cmake/WeftCcache.cmake) keyed on paths relative to this clone, so that a clone elsewhere
# (a CI runner's next checkout) finds what an earlier one compiled. Objects from the cache keep
# the earlier clone's directory in their debug information: debuggers look there for sources.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true
command -v ccache >/dev/null && ccache --zero-stats >/dev/null

section "host build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=ON -DWEFT_BUILD_TESTS=ON -DWEFT_BUILD_BENCHMARKS=ON \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
cmake --build build -j"$jobs"

# clang-tidy on the files changed since the merge-base with main (docs/style.md); the format of
# every file is checked by ctest's style label below.
section "clang-tidy (changed files)"
bash tools/check_style.sh --tidy -p build -j "$jobs"

# The single-source primitives must keep compiling with nvcc (compile only: no GPU needed). The
# CUDA build below does this too; without it, a check of its own.
if [ "$gpu_builds" = 0 ]; then
  if [ -x "$nvcc" ]; then
    cmake -S . -B build-cuda-check -DWEFT_CUDA_PRIMITIVES_CHECK=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
      -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCHMARKS=OFF >/dev/null
    cmake --build build-cuda-check --target weft_cuda_primitives_check -j"$jobs"
    echo "nvcc check: the reduction primitives compile for CUDA"
  else
    echo "nvcc check: skipped (no $nvcc on this machine)"
  fi
fi

# Every run starts from an empty calibration cache: no result may depend on what this machine
# measured and kept before (a cache is per host, and a CI runner is reused). WEFT_CACHE_DIR is the
# primary name, so tests that need a directory of their own set WEFT_CACHE_DIR, not XDG_CACHE_HOME
# (its alias, which this would shadow): the calibration unit tests and the stress test do.
WEFT_CACHE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/weft-test-cache.XXXXXX")
export WEFT_CACHE_DIR
# At exit: the cache directory goes, and what ccache saved this run is printed.
trap 'rm -rf "$WEFT_CACHE_DIR"; if command -v ccache >/dev/null; then echo "== ccache"; ccache --show-stats | head -6; fi' EXIT
echo "calibration cache for this run: $WEFT_CACHE_DIR (removed at exit)"

export WEFT_DEVICE=host
section "host tests"
# The soak (label soak, about 2 minutes alone) is run by hand: ctest --test-dir build -L soak.
ctest --test-dir build --output-on-failure -j2 --timeout 600 -LE soak ${WEFT_TEST_LABELS:+-L "$WEFT_TEST_LABELS"}

# ---- fuzz: the libFuzzer targets, a few seconds each from their seed corpora (tests/fuzz) ----
section "fuzz"
if [ "${WEFT_TEST_FUZZ:-1}" = 1 ]; then
  bash tests/fuzz/run.sh "${WEFT_TEST_FUZZ_SECONDS:-10}"
else
  echo "fuzz: skipped (WEFT_TEST_FUZZ=0)"
fi
# ---- end fuzz ----

# ---- sanitizers: ASan+UBSan (unit, threads, a procs subset) and TSan (unit, threads) --------------
# tools/test_sanitizers.sh, docs/testing.md "Sanitizers": two more builds (-O1 -g1) and their runs,
# about 25 minutes cold on 2 cores.
if [ "${WEFT_TEST_SANITIZERS:-1}" != 0 ]; then
  section "sanitizers"
  bash tools/test_sanitizers.sh
else
  echo "sanitizers: skipped (WEFT_TEST_SANITIZERS=0)"
fi
# ---- end sanitizers ---------------------------------------------------------------------------------

if [ "$gpu_builds" = 0 ]; then
  echo "GPU builds: skipped (WEFT_TEST_GPU_BUILDS=0)"
  exit 0
fi

# CUDA: the library with its .cu files (sm_80 and sm_90), the primitives check, and the tests. No
# GPU and no driver here, so the tests run in host mode; the library must still load. The Python
# and torch extensions are the host build's to test: they add nothing CUDA-specific here. This build
# and the HIP one compile the library's C++ one unit per folder (WEFT_UNITY_BUILD): the host build
# above checks each file on its own.
section "CUDA build"
if [ -x "$nvcc" ]; then
  cmake -S . -B build-cuda -DWEFT_GPU=cuda -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="80;90" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=ON -DWEFT_BUILD_TESTS=ON -DWEFT_BUILD_BENCHMARKS=OFF \
    -DWEFT_BUILD_PYTHON=OFF -DWEFT_BUILD_TORCH=OFF -DWEFT_CUDA_PRIMITIVES_CHECK=ON -DWEFT_UNITY_BUILD=ON >/dev/null
  cmake --build build-cuda -j"$jobs"
  # The CUDA runtime is linked statically and the driver is found at run time: libnccl.so.2 must
  # not need libcuda.so.1 (absent without a driver) or libcudart.so.
  if ldd build-cuda/libnccl.so.2 | grep -E 'libcuda\.so|libcudart\.so|not found'; then
    echo "CUDA build: libnccl.so.2 needs a CUDA library at load time (see above)" >&2
    exit 1
  fi
  # WEFT_DEVICE unset: the runtime itself must find no device (no driver here) and every test
  # must then run in host mode. (The collective tiers set WEFT_DEVICE=host per test anyway.)
  env -u WEFT_DEVICE ctest --test-dir build-cuda --output-on-failure -j2 --timeout 600 \
    -L "${WEFT_TEST_CUDA_LABELS:-unit|abi}"
  # The threads tier's default variant in one process (its cases as the host build ran them one per
  # process above): the collectives of a CUDA-built library, in host mode, in a minute.
  env -u WEFT_DEVICE timeout 900 build-cuda/tests/collectives/weft_coll_threads_tests --weft-variant=default \
    --gtest_brief=1
  echo "CUDA build: built, loads without a driver, host-mode tests pass"
else
  echo "CUDA build: skipped (no $nvcc on this machine)"
fi

# HIP: Debian's ROCm 5.2 (clang 15) compiles the library for gfx90a. Tests are not built: they
# would be the CUDA build's host-mode tests again.
section "HIP build"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  bash tools/setup-debian.sh --hip
fi
if [ -f /usr/include/hip/hip_runtime.h ] || [ -f /opt/rocm/include/hip/hip_runtime.h ]; then
  cmake -S . -B build-hip -DWEFT_GPU=hip -DCMAKE_HIP_ARCHITECTURES=gfx90a -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DWEFT_WERROR=ON -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCHMARKS=OFF \
    -DWEFT_BUILD_PYTHON=OFF -DWEFT_BUILD_TORCH=OFF -DWEFT_UNITY_BUILD=ON >/dev/null
  cmake --build build-hip -j"$jobs"
  echo "HIP build: the library compiles for gfx90a"
else
  echo "HIP build: skipped (no HIP headers; tools/setup-debian.sh --hip installs Debian's ROCm)"
fi

# gfx942: Debian 12's clang stops at gfx940; a Debian 13 chroot compiles it (docs/gpu.md). Opt-in:
# the first run downloads ROCm 5.7 and takes about 10 minutes.
if [ "${WEFT_TEST_GFX942:-0}" = 1 ]; then
  section "HIP build for gfx942 (Debian 13 chroot)"
  bash tools/build-gfx942.sh
fi
