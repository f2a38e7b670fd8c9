#!/usr/bin/env bash
# Runs two programs and requires byte-identical standard output; used for the layout and
# signature dumps built against Weft's and NVIDIA's headers.
# Usage: compare_outputs.sh PROGRAM_WEFT PROGRAM_NVIDIA
#        compare_outputs.sh --skip REASON     (prints why and exits 77, which ctest reports as skipped)
# Exit: 0 identical, 1 different or a program failed, 2 bad usage, 77 skipped.
set -u
if [ "${1:-}" = "--skip" ]; then
  echo "skipped: ${2:-no reason given}"
  exit 77
fi
[ $# -eq 2 ] || { echo "usage: $0 PROGRAM_WEFT PROGRAM_NVIDIA | --skip REASON" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-abi-compare.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$1" >"$tmp/weft.txt" || { echo "FAIL: $1 exited with status $?"; exit 1; }
"$2" >"$tmp/nvidia.txt" || { echo "FAIL: $2 exited with status $?"; exit 1; }
if diff -u --label "NVIDIA's nccl.h" --label "Weft's nccl.h" "$tmp/nvidia.txt" "$tmp/weft.txt"; then
  echo "ok: $(wc -l <"$tmp/weft.txt") lines identical"
  exit 0
fi
echo "FAIL: Weft's header differs from NVIDIA's (lines marked + are Weft's)"
exit 1
