#!/usr/bin/env bash
# Compiles Weft's HIP build for gfx942 (MI300X), which Debian 12 cannot: its ROCm 5.2 clang (15)
# stops at gfx940, and gfx940 code objects do not load on gfx942 hardware. Debian 13 ships ROCm
# 5.7 with clang 17, which knows gfx942. This script makes a Debian 13 chroot once, bind-mounts
# the checkout into it and builds the library there for gfx942 and gfx90a, then checks that the
# library carries a code object for each target. It compiles only: nothing runs on a GPU.
#   bash tools/build-gfx942.sh                  chroot in /opt/weft-trixie, build in build-gfx942/
#   WEFT_TRIXIE_ROOT=/srv/trixie bash tools/build-gfx942.sh
#   WEFT_GFX942_ARCHS='gfx942' bash tools/build-gfx942.sh     other targets (';'-separated)
# Needs root and Debian's package archive (the first run downloads about 500 MB; the chroot takes
# about 1.5 GB). Later runs reuse the chroot and the build folder. docs/gpu.md, "gfx942".
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
root=${WEFT_TRIXIE_ROOT:-/opt/weft-trixie}
archs=${WEFT_GFX942_ARCHS:-gfx942;gfx90a}
mirror=${WEFT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
section() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

if [ "$(id -u)" != 0 ]; then
  echo "build-gfx942: needs root (debootstrap, chroot and bind mounts)" >&2
  exit 1
fi

# What the chroot needs: the HIP compiler and runtime, and what Weft's CMake asks for (hwloc through
# pkg-config; verbs and OpenSSL headers so that the same sources are compiled as on the host).
packages=(hipcc libamdhip64-dev rocm-device-libs-17 clang-17 cmake make g++ pkg-config libhwloc-dev
          libibverbs-dev libssl-dev)
if [ ! -x "$root/usr/bin/clang++-17" ] || [ ! -f "$root/usr/include/hip/hip_runtime.h" ]; then
  section "Debian 13 chroot in $root"
  command -v debootstrap >/dev/null || apt-get install -y -q --no-install-recommends debootstrap
  if [ ! -x "$root/usr/bin/apt-get" ]; then
    debootstrap --variant=minbase --include=ca-certificates trixie "$root" "$mirror"
  fi
  chroot "$root" apt-get update -q
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"
fi

# The checkout appears in the chroot at /weft; the mounts go when the script ends, however it ends.
mounts=()
cleanup() {
  local m
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    m=${mounts[i]}
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
}
trap cleanup EXIT
mountBind() {  # source, target inside the chroot
  mkdir -p "$root$2"
  if ! mountpoint -q "$root$2"; then
    mount --bind "$1" "$root$2"
    mounts+=("$root$2")
  fi
}
mountBind /proc /proc
mountBind /dev /dev
mountBind "$src" /weft

section "HIP build for $archs (clang 17, ROCm 5.7)"
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -c "
  set -e
  cd /weft
  cmake -S . -B build-gfx942 -DWEFT_GPU=hip -DCMAKE_HIP_COMPILER=clang++-17 -DCMAKE_HIP_ARCHITECTURES='$archs' \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=ON -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCHMARKS=OFF \
    -DWEFT_BUILD_PYTHON=OFF -DWEFT_BUILD_TORCH=OFF >/dev/null
  cmake --build build-gfx942 -j$(nproc)
"

# Each target's code object must be in the library: the offload bundles name them
# (amdgcn-amd-amdhsa--gfx942 ...).
section "code objects"
lib=$(readlink -f build-gfx942/libnccl.so.2)
status=0
IFS=';' read -r -a wanted <<<"$archs"
for a in "${wanted[@]}"; do
  if grep -aq "amdgcn-amd-amdhsa--$a" "$lib"; then
    echo "build-gfx942: $(basename "$lib") has code for $a"
  else
    echo "build-gfx942: $(basename "$lib") has no code object for $a" >&2
    status=1
  fi
done
exit $status
