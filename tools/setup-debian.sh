#!/usr/bin/env bash
# Installs what building and testing Weft needs on Debian 12 (run as root). Safe to run again.
#   bash tools/setup-debian.sh          the host build and its tests
#   bash tools/setup-debian.sh --hip    also Debian's ROCm 5.2 compiler and runtime (WEFT_GPU=hip)
# CUDA is not in Debian: the CUDA build uses the toolkit at /usr/local/cuda when it is there.
set -euo pipefail
pkgs=(cmake make g++ gcc pkg-config dpkg-dev libgtest-dev libgmock-dev libhwloc-dev python3 iproute2 procps)
# gdb: a collective test whose rank hangs prints that rank's thread stacks (tests/collectives/harness.cc).
pkgs+=(gdb)
# TLS for Weft's sockets (src/sockets/tls*): OpenSSL 3's headers to build it, its library to run it
# (loaded at run time; libnccl.so.2 does not link it).
pkgs+=(libssl-dev libssl3)
# The IB network (transports/net/ib): libibverbs' headers to build it (the library is loaded at run
# time). Its lab (tests/ib/lab, ctest label ib) boots QEMU guests with Debian's kernel and Soft-RoCE
# and copies the verbs tools and the rxe provider into them.
pkgs+=(libibverbs-dev qemu-system-x86 busybox-static cpio kmod rdma-core ibverbs-utils ibverbs-providers perftest)
# The style checks (tools/check_style.sh, ctest label style) pin clang 14's formatter and linter.
pkgs+=(clang-format-14 clang-tidy-14)
# The fuzz targets (tests/fuzz/run.sh): clang 14 and its libFuzzer and sanitizer runtimes
# (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev).
pkgs+=(clang-14 libclang-rt-14-dev)
# The Python package (src/python: pybind11), its examples and tests (NumPy, mpi4py under Open MPI),
# and the torch.distributed backend (src/torch: libtorch 1.13 and its Python module).
pkgs+=(python3-dev python3-numpy python3-mpi4py pybind11-dev openmpi-bin libtorch-dev python3-torch)
# The comparisons in benchmarks/ build the Open MPI reference programs (mpi.h, mpic++), and the
# MPICH one when MPICH is there (mpicxx.mpich, mpirun.mpich). Open MPI stays the default mpirun and
# mpic++: Debian ranks its alternatives above MPICH's (50 against 40).
pkgs+=(libopenmpi-dev mpich libmpich-dev)
# ccache: tools/test.sh builds the library five ways, and a rebuild of a clone that changed little
# compiles only what changed (cmake/WeftCcache.cmake).
pkgs+=(ccache)
# The trace tools draw timelines with matplotlib (tools/weft_trace_plot.py, tests/trace), and
# benchmarks/plot_compare.py the comparison curves.
pkgs+=(python3-matplotlib)
if [ "${1:-}" = "--hip" ]; then
  pkgs+=(hipcc libamdhip64-dev rocm-device-libs libhsa-runtime-dev)
fi
missing=()
for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
