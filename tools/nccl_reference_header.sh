#!/usr/bin/env bash
# Makes NVIDIA's nccl.h for one release from a clone of github.com/NVIDIA/nccl, for the ABI tests:
# NCCL's build fills the version into src/nccl.h.in, and this does the same, nothing else.
#
#   tools/nccl_reference_header.sh NCCL_GIT_DIR TAG OUT_DIR
#   cmake -S . -B build -DWEFT_NVIDIA_NCCL_INCLUDE_DIR=OUT_DIR/include ...
#   ctest --test-dir build -L abi
#
# NCCL_GIT_DIR may be a work tree or a bare repository; TAG is a release tag such as v2.30.7-1.
# CUDA's toolkit ships one nccl.h, often older than the NCCL version Weft implements; with this
# header the abi tests compare every layout and signature, including the newer declarations
# (tests/abi/layout_dump.c says what is left out against an older one).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 NCCL_GIT_DIR TAG OUT_DIR" >&2; exit 2; }
repo=$1 tag=$2 out=$3
git_in() { git --git-dir="$repo" "$@" 2>/dev/null || git -C "$repo" "$@"; }
template=$(git_in show "$tag:src/nccl.h.in") || { echo "error: no src/nccl.h.in at $tag in $repo" >&2; exit 1; }
versions=$(git_in show "$tag:makefiles/version.mk") || { echo "error: no makefiles/version.mk at $tag" >&2; exit 1; }
field() { printf '%s\n' "$versions" | awk -v k="$1" '$1 == k { print $3 }'; }
major=$(field NCCL_MAJOR) minor=$(field NCCL_MINOR) patch=$(field NCCL_PATCH) suffix=$(field NCCL_SUFFIX)
if [ -z "$major" ] || [ -z "$minor" ] || [ -z "$patch" ]; then
  echo "error: no version in makefiles/version.mk" >&2
  exit 1
fi
# NCCL's version code: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 on.
if [ "$major" -le 2 ] && [ "$minor" -le 8 ]; then code=$((major * 1000 + minor * 100 + patch))
else code=$((major * 10000 + minor * 100 + patch)); fi
mkdir -p "$out/include"
printf '%s\n' "$template" | sed -e "s/\${nccl:Major}/$major/g" -e "s/\${nccl:Minor}/$minor/g" \
  -e "s/\${nccl:Patch}/$patch/g" -e "s/\${nccl:Suffix}/$suffix/g" -e "s/\${nccl:Version}/$code/g" \
  >"$out/include/nccl.h"
if grep -q "[$]{nccl:" "$out/include/nccl.h"; then
  echo "error: placeholders left in $out/include/nccl.h" >&2
  exit 1
fi
echo "$out/include/nccl.h: NCCL $major.$minor.$patch$suffix (NCCL_VERSION_CODE $code)"
