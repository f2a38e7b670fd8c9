#!/usr/bin/env bash
# Checks the dynamic symbol table of a Weft library (libnccl.so.2 or librccl.so.1):
#   1. every function NVIDIA's nccl.h declares (and NVIDIA's libnccl.so.2 exports, when present)
#      is exported, and so is every function Weft's own public headers declare;
#   2. each ncclX (and RCCL's mscclX) is a weak symbol (W) and its twin pncclX (pmscclX) a strong
#      one (T), and neither comes without the other (profilers interpose on ncclX and call pncclX,
#      as with PMPI);
#   3. nothing else leaves the library: only nccl*, pnccl*, msccl*, pmsccl* and weft* names,
#      RCCL's one C++ function, ncclCommDump (checked by its demangled name), and the three
#      functions rccl-tests finds with dlsym (rcclGetAlgoInfo, rcclGetAlgoName,
#      rcclGetProtocolName: strong, and required, since no header declares them).
# Functions NVIDIA's library exports without declaring them in nccl.h (its device-API host
# functions, internals) are listed for information only.
#
# Usage: check_symbols.sh LIBRARY [--nvidia-lib FILE] [--nvidia-header FILE] [--weft-include DIR]
# Exit status: 0 all good, 1 a check failed, 2 bad usage or unreadable input.
set -u
export LC_ALL=C

usage() {
  echo "usage: $0 LIBRARY [--nvidia-lib FILE] [--nvidia-header FILE] [--weft-include DIR]" >&2
  exit 2
}

[ $# -ge 1 ] || usage
lib=$1
shift
nvidia_lib=""
nvidia_header=""
weft_include=""
while [ $# -gt 0 ]; do
  case $1 in
    --nvidia-lib) [ $# -ge 2 ] || usage; nvidia_lib=$2; shift 2 ;;
    --nvidia-header) [ $# -ge 2 ] || usage; nvidia_header=$2; shift 2 ;;
    --weft-include) [ $# -ge 2 ] || usage; weft_include=$2; shift 2 ;;
    *) usage ;;
  esac
done

NM=${NM:-nm}
command -v "$NM" >/dev/null 2>&1 || { echo "error: '$NM' not found (set NM)" >&2; exit 2; }
[ -r "$lib" ] || { echo "error: cannot read library '$lib'" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-abi-symbols.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# "name type" for every defined dynamic symbol, version suffixes (name@@VER) removed.
dynamic_symbols() {
  "$NM" -D --defined-only -P "$1" | awk '{ n = $1; sub(/@.*/, "", n); print n, $2 }' | sort -u
}

# Names of the nccl*/pnccl*/weft* functions a C header declares: comments are stripped, the text
# is joined into one line, and every such identifier directly followed by "(" is taken.
declared_functions() {
  awk '
    {
      line = $0; out = "";
      while (length(line) > 0) {
        if (incomment) {
          p = index(line, "*/");
          if (p == 0) line = ""; else { line = substr(line, p + 2); incomment = 0 }
        } else {
          p = index(line, "/*"); q = index(line, "//");
          if (q > 0 && (p == 0 || q < p)) { out = out substr(line, 1, q - 1); line = "" }
          else if (p > 0) { out = out substr(line, 1, p - 1) " "; line = substr(line, p + 2); incomment = 1 }
          else { out = out line; line = "" }
        }
      }
      printf "%s ", out
    }' "$@" |
    grep -oE '(^|[^A-Za-z0-9_])(p?nccl|p?msccl|weft)[A-Za-z0-9_]*[[:space:]]*\(' |
    sed -E 's/^[^A-Za-z0-9_]//; s/[[:space:]]*\($//' | sort -u
}

echo "checking: $lib"
real=$(readlink -f "$lib" 2>/dev/null || echo "$lib")
[ "$real" != "$lib" ] && echo "  (file: $real)"
dynamic_symbols "$lib" >"$tmp/ours" || { echo "error: $NM failed on $lib" >&2; exit 2; }
awk '{ print $1 }' "$tmp/ours" >"$tmp/ours.names"
# C++ functions (ncclCommDump) by name, for the list of required functions.
awk '$1 ~ /^_Z/ { print $1 }' "$tmp/ours" | c++filt | sed 's/(.*//' >>"$tmp/ours.names"
sort -u -o "$tmp/ours.names" "$tmp/ours.names"

failures=0
fail() {  # fail TITLE FILE: prints the list in FILE under TITLE when it is not empty
  if [ -s "$2" ]; then
    echo "FAIL: $1:"
    sed 's/^/    /' "$2"
    failures=$((failures + 1))
  fi
}

# --- 1. Required functions ------------------------------------------------------------------
: >"$tmp/required"
if [ -n "$nvidia_header" ]; then
  [ -r "$nvidia_header" ] || { echo "error: cannot read '$nvidia_header'" >&2; exit 2; }
  declared_functions "$nvidia_header" | grep -E '^p?nccl' >"$tmp/nv.declared"
  echo "NVIDIA's header: $nvidia_header ($(wc -l <"$tmp/nv.declared") functions)"
  if [ -n "$nvidia_lib" ]; then
    nvreal=$(readlink -f "$nvidia_lib" 2>/dev/null || echo "$nvidia_lib")
    [ -r "$nvreal" ] || { echo "error: cannot read '$nvidia_lib'" >&2; exit 2; }
    dynamic_symbols "$nvreal" | awk '$1 ~ /^p?nccl/ { print $1 }' >"$tmp/nv.exported"
    echo "NVIDIA's library: $nvreal ($(wc -l <"$tmp/nv.exported") nccl*/pnccl* symbols)"
    comm -12 "$tmp/nv.declared" "$tmp/nv.exported" >>"$tmp/required"
    comm -23 "$tmp/nv.exported" "$tmp/nv.declared" >"$tmp/nv.undeclared"
    if [ -s "$tmp/nv.undeclared" ]; then
      echo "info: NVIDIA's library exports $(wc -l <"$tmp/nv.undeclared") functions that nccl.h does not declare (not required):"
      while read -r name; do
        if grep -qx "$name" "$tmp/ours.names"; then state="also in Weft"; else state="not in Weft"; fi
        echo "    $name ($state)"
      done <"$tmp/nv.undeclared"
    fi
    comm -23 "$tmp/nv.declared" "$tmp/nv.exported" >"$tmp/nv.unexported"
    if [ -s "$tmp/nv.unexported" ]; then
      echo "info: declared in NVIDIA's nccl.h but not exported by NVIDIA's library (still required):"
      sed 's/^/    /' "$tmp/nv.unexported"
      cat "$tmp/nv.unexported" >>"$tmp/required"
    fi
  else
    echo "info: NVIDIA's libnccl.so.2 not available; requiring what NVIDIA's nccl.h declares"
    cat "$tmp/nv.declared" >>"$tmp/required"
  fi
else
  echo "info: NVIDIA's nccl.h not available; requiring what Weft's headers declare"
fi
if [ -n "$weft_include" ]; then
  headers=""
  for h in nccl.h rccl/rccl.h weft/weft.h; do
    [ -r "$weft_include/$h" ] && headers="$headers $weft_include/$h"
  done
  if [ -n "$headers" ]; then
    # shellcheck disable=SC2086
    declared_functions $headers >"$tmp/weft.declared"
    echo "Weft's headers:$headers ($(wc -l <"$tmp/weft.declared") functions)"
    cat "$tmp/weft.declared" >>"$tmp/required"
  fi
fi
sort -u -o "$tmp/required" "$tmp/required"
if [ ! -s "$tmp/required" ]; then
  echo "error: no list of required functions (give --nvidia-header and/or --weft-include)" >&2
  exit 2
fi
printf '%s\n' rcclGetAlgoInfo rcclGetAlgoName rcclGetProtocolName >>"$tmp/required"
sort -u -o "$tmp/required" "$tmp/required"
comm -23 "$tmp/required" "$tmp/ours.names" >"$tmp/missing"
fail "declared but not exported by $(basename "$lib")" "$tmp/missing"

# --- 2. Bindings: ncclX weak, pncclX strong, always in pairs ----------------------------------
awk '$1 ~ /^(nccl|msccl)/ && $2 != "W" { print $1 " is \"" $2 "\", expected W (weak)" }' "$tmp/ours" >"$tmp/bad.weak"
awk '$1 ~ /^(pnccl|pmsccl)/ && $2 != "T" { print $1 " is \"" $2 "\", expected T (strong)" }' "$tmp/ours" \
  >"$tmp/bad.strong"
awk '$1 ~ /^weft/ && $2 != "T" && $2 != "W" { print $1 " is \"" $2 "\", expected a function (T or W)" }' \
  "$tmp/ours" >"$tmp/bad.weft"
awk '$1 ~ /^rcclGet/ && $2 != "T" { print $1 " is \"" $2 "\", expected T (strong)" }' "$tmp/ours" >>"$tmp/bad.strong"
awk '$1 ~ /^(nccl|msccl)/ { print "p" $1 }' "$tmp/ours" | sort -u >"$tmp/want.p"
awk '$1 ~ /^(pnccl|pmsccl)/ { print substr($1, 2) }' "$tmp/ours" | sort -u >"$tmp/want.np"
comm -23 "$tmp/want.p" "$tmp/ours.names" | sed 's/^p\(.*\)/\1 has no p\1 twin/' >"$tmp/bad.twin"
comm -23 "$tmp/want.np" "$tmp/ours.names" | sed 's/^\(.*\)$/p\1 has no \1 twin/' >>"$tmp/bad.twin"
fail "ncclX must be weak" "$tmp/bad.weak"
fail "pncclX must be strong" "$tmp/bad.strong"
fail "weft* must be functions" "$tmp/bad.weft"
fail "ncclX and pncclX must come in pairs" "$tmp/bad.twin"

# --- 3. Nothing else exported ---------------------------------------------------------------
# Linker-defined markers (and absolute version-node symbols) are not part of the interface.
awk '$1 !~ /^(p?nccl|p?msccl|weft|_Z12ncclCommDump|rcclGet(AlgoInfo|AlgoName|ProtocolName)$)/ && $2 != "A" &&
     $1 !~ /^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)$/ {
       print $1 " (" $2 ")" }' "$tmp/ours" >"$tmp/extra"
fail "exported but not nccl*/pnccl*/msccl*/pmsccl*/weft*/ncclCommDump/rcclGet* (internal symbols leak)" "$tmp/extra"

n_nccl=$(grep -c '^nccl' "$tmp/ours.names")
n_pnccl=$(grep -c '^pnccl' "$tmp/ours.names")
n_weft=$(grep -c '^weft' "$tmp/ours.names")
echo "$(basename "$lib") exports $n_nccl nccl*, $n_pnccl pnccl*, $n_weft weft* symbols;" \
  "$(wc -l <"$tmp/required") functions required"
if [ "$failures" -ne 0 ]; then
  echo "abi symbols: $failures check(s) FAILED"
  exit 1
fi
echo "abi symbols: all checks passed"
exit 0
