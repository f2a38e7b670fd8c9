#!/usr/bin/env bash
# Checks that an executable's dynamic section asks for a given library by SONAME (NEEDED), e.g.
# that a program linked against Weft's libnccl.so.2 records "libnccl.so.2", as one linked
# against NVIDIA's would, and not a versioned file name or a path.
# Usage: check_needed.sh EXECUTABLE SONAME     Exit: 0 found, 1 not found, 2 bad usage.
set -u
[ $# -eq 2 ] || { echo "usage: $0 EXECUTABLE SONAME" >&2; exit 2; }
exe=$1
soname=$2
READELF=${READELF:-readelf}
[ -r "$exe" ] || { echo "error: cannot read '$exe'" >&2; exit 2; }
needed=$(LC_ALL=C "$READELF" -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p') || exit 2
echo "$exe needs:"
echo "$needed" | sed 's/^/    /'
if echo "$needed" | grep -qxF "$soname"; then
  echo "ok: NEEDED $soname"
  exit 0
fi
echo "FAIL: no NEEDED entry for $soname"
exit 1
