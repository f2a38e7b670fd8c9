#!/usr/bin/env bash
# The installed tree as a user gets it: `cmake --install` into a prefix that is then moved (so a path
# baked in at build time fails), or the .deb that cpack makes, checked with dpkg-deb and unpacked
# with dpkg-deb -x. Either tree is checked file by file, then the consumer (tests/install/consumer)
# is built against it with find_package(weft) and with pkg-config, and every build of it runs.
#   run_install_test.sh prefix BUILD SOURCE LIBDIR VERSION
#   run_install_test.sh deb    BUILD SOURCE LIBDIR VERSION
# LIBDIR: where the tree keeps the libraries, relative to its prefix (CMAKE_INSTALL_LIBDIR; for the
# .deb, Debian's multiarch directory). VERSION: Weft's. $CMAKE and $CPACK name the tools.
# $WEFT_PYTHON, when set, is the interpreter the Python package was built for (it is checked too).
set -euo pipefail
mode=$1 build=$(cd "$2" && pwd) src=$(cd "$3" && pwd) libdir=$4 version=$5
cmake=${CMAKE:-cmake} cpack=${CPACK:-cpack}
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
configured_prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")

# pkg-config on the tree's pc files. The .deb's name /usr as their prefix (cmake/WeftInstall.cmake
# says why): an unpacked copy is used by defining prefix, as a user of one would.
pc() {
  local define=()
  [ "$mode" = deb ] && define=(--define-variable=prefix="$prefix")
  PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig pkg-config "${define[@]}" "$@"
}

# dpkg-deb -f prints one control field; the checks below read the fields they name.
check_deb() {
  local deb=$1 field
  for field in Package Version Architecture Maintainer Section Description Depends Conflicts; do
    [ -n "$(dpkg-deb -f "$deb" "$field")" ] || fail "the .deb has no $field field"
  done
  [ "$(dpkg-deb -f "$deb" Package)" = weft ] || fail "package name: $(dpkg-deb -f "$deb" Package)"
  [ "$(dpkg-deb -f "$deb" Version)" = "$version-1" ] || fail "version: $(dpkg-deb -f "$deb" Version)"
  [ "$(dpkg-deb -f "$deb" Architecture)" = "$(dpkg --print-architecture)" ] || fail "architecture"
  grep -Eq '^[^<]+ <[^>]+@[^>]+>$' <<<"$(dpkg-deb -f "$deb" Maintainer)" || fail "Maintainer is not 'Name <address>'"
  local depends
  depends=$(dpkg-deb -f "$deb" Depends)
  for dep in libc6 libstdc++6 libhwloc15; do
    [[ ", $depends," == *", $dep "* ]] || fail "Depends lacks $dep: $depends"
  done
  grep -qw libnccl2 <<<"$(dpkg-deb -f "$deb" Conflicts)" || fail "the .deb does not conflict with libnccl2"
  # The shlibs file names the three libraries; dpkg runs ldconfig after installing (the trigger).
  dpkg-deb -e "$deb" "$work/control"
  for lib in 'libnccl 2' 'librccl 1' 'libweft 0'; do
    grep -q "^$lib weft " "$work/control/shlibs" || fail "shlibs lacks '$lib'"
  done
  grep -qx 'activate-noawait ldconfig' "$work/control/triggers" || fail "the .deb has no ldconfig trigger"
  # Every path is under /usr, and nothing but the multiarch directory is directly in /usr/lib.
  local contents
  contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
  echo "$contents" | grep -v '^\./usr/' | grep -v '^\./$' && fail "the .deb has files outside /usr (above)"
  echo "$contents" | grep -E '^\./usr/lib/[^/]+$' | grep -v "^\./usr/$libdir/\?$" \
    && fail "the .deb has files directly in /usr/lib (above), not in /usr/$libdir"
  grep -qx './usr/share/doc/weft/copyright' <<<"$contents" || fail "no /usr/share/doc/weft/copyright"
  dpkg-deb -x "$deb" "$work/root"
}

# The tree under $1: headers, tools, docs, the three libraries with their links, the packages.
check_tree() {
  local prefix=$1 lib=$1/$libdir
  for f in include/nccl.h include/rccl.h include/rccl/rccl.h include/weft/weft.h \
           share/doc/weft/LICENSE share/doc/weft/README.md \
           "$libdir/pkgconfig/weft.pc" "$libdir/pkgconfig/nccl.pc" "$libdir/cmake/weft/weftConfig.cmake" \
           "$libdir/cmake/weft/weftConfigVersion.cmake" "$libdir/cmake/weft/weftTargets.cmake"; do
    [ -f "$prefix/$f" ] || fail "missing $f under the prefix"
  done
  local nccl_version
  nccl_version=$(pc --modversion nccl)
  # lib<name>.so -> lib<name>.so.<soversion> -> lib<name>.so.<version>, a file whose SONAME is
  # lib<name>.so.<soversion>. libnccl's file carries the NCCL version nccl.pc reports.
  local name soversion fileversion
  for entry in "weft 0 $version" "nccl 2 $nccl_version" "rccl 1 1.0.0"; do
    read -r name soversion fileversion <<<"$entry"
    local so=lib$name.so.$soversion real=lib$name.so.$fileversion
    [ "$(readlink "$lib/lib$name.so")" = "$so" ] || fail "lib$name.so should link to $so"
    [ "$(readlink "$lib/$so")" = "$real" ] || fail "$so should link to $real, not $(readlink "$lib/$so")"
    if [ ! -f "$lib/$real" ] || [ -L "$lib/$real" ]; then fail "$real is not a file"; fi
    grep -q "(SONAME).*\[$so\]" <<<"$(readelf -d "$lib/$real")" || fail "$real's SONAME is not $so"
  done
  "$prefix/bin/weft-info" >"$work/weft-info.out" || fail "bin/weft-info failed"
  head -1 "$work/weft-info.out" | grep -q "^Weft $version " || fail "bin/weft-info printed $(head -1 "$work/weft-info.out")"
  # The CMake and pkg-config files find the tree from where they lie: no path of the source or
  # build tree, of this test's directories, or of the prefix configured may be written in them
  # (the .deb's pc files excepted, on their prefix= line only, which must say /usr).
  local forbidden=("$src" "$build" "$work" "$configured_prefix")
  if [ "$mode" = deb ]; then
    forbidden+=(/usr)
    for f in weft nccl; do
      [ "$(pkg-config --variable=prefix "$lib/pkgconfig/$f.pc")" = /usr ] || fail "$f.pc's prefix is not /usr"
    done
  fi
  for f in "$lib"/cmake/weft/*.cmake "$lib"/pkgconfig/*.pc; do
    for p in "${forbidden[@]}"; do
      ! grep -v '^prefix=/usr$' "$f" | grep -qF "$p" || fail "$f holds the path $p: the tree could not be moved"
    done
  done
}

# The Python package weft in the tree (when the build made it: $WEFT_PYTHON names its interpreter),
# imported from there alone, running a one-rank AllReduce on the tree's own libweft.so.
check_python() {
  local prefix=$1 pkg=$1/lib/python3/dist-packages
  [ -n "${WEFT_PYTHON:-}" ] || return 0
  for f in __init__.py nccl.py _rendezvous.py; do
    [ -f "$pkg/weft/$f" ] || fail "missing lib/python3/dist-packages/weft/$f"
  done
  compgen -G "$pkg/weft/_weft.*.so" >/dev/null || fail "no extension module weft/_weft.*.so"
  PYTHONPATH=$pkg "$WEFT_PYTHON" -s - "$pkg" "$prefix/$libdir" >"$work/python.out" 2>&1 <<'PY' \
    || fail "import weft from the installed tree: $(cat "$work/python.out")"
import sys
import numpy as np
import weft
import weft.nccl
pkg, libdir = sys.argv[1], sys.argv[2]
assert weft.__file__.startswith(pkg), weft.__file__
with weft.Communicator(1, weft.get_unique_id(), 0) as comm:
    x = np.arange(4, dtype=np.float32)
    comm.all_reduce(x)
    assert (x == np.arange(4)).all(), x
libs = {line.split()[-1] for line in open("/proc/self/maps") if "libweft.so" in line}
assert libs and all(path.startswith(libdir) for path in libs), libs
print("python ok")
PY
  grep -qx 'python ok' "$work/python.out" || fail "the Python check printed: $(cat "$work/python.out")"
}

# Runs one consumer build ($1) and checks what it printed; $2 is the library it must have loaded.
# (Output is checked from a variable or a file, never through `cmd | grep -q`: grep's early exit
# would kill cmd with SIGPIPE and pipefail would call that a failure.)
run_consumer() {
  local exe=$1 want=$2
  local libs
  libs=$(ldd "$exe")
  grep -qF "=> $want " <<<"$libs" || fail "$exe does not load $want: $(grep -E 'lib(nccl|rccl|weft)' <<<"$libs")"
  "$exe" >"$exe.out" || fail "$exe failed: $(cat "$exe.out")"
  grep -qx 'allreduce ok' "$exe.out" || fail "$exe printed: $(cat "$exe.out")"
}

# Configures the CMake consumer with $1 against $prefix: it must fail, saying $2.
refused() {
  local log=$work/out/refused.log
  if "$cmake" -S "$src/tests/install/consumer" -B "$work/out/refused" -DCMAKE_PREFIX_PATH="$prefix" "$1" >"$log" 2>&1; then
    fail "find_package(weft) accepted $1"
  fi
  grep -qF "$2" "$log" || fail "find_package(weft) with $1 did not say '$2': $(cat "$log")"
  rm -rf "$work/out/refused"
}

# The consumer built with CMake (one program per imported target) and with pkg-config (weft, nccl).
build_consumers() {
  local prefix=$1 lib=$1/$libdir out=$work/out
  mkdir -p "$out"
  "$cmake" -S "$src/tests/install/consumer" -B "$out/cmake" -DCMAKE_PREFIX_PATH="$prefix" >"$out/cmake.log" 2>&1 \
    || fail "find_package(weft) failed: $(cat "$out/cmake.log")"
  "$cmake" --build "$out/cmake" >>"$out/cmake.log" 2>&1 || fail "the CMake consumer does not build: $(cat "$out/cmake.log")"
  for name in weft nccl rccl; do
    run_consumer "$out/cmake/consumer-$name" "$lib/$(readlink "$lib/lib$name.so")"
  done
  # The package refuses a version it is not compatible with, and a component it does not have.
  refused "-DWEFT_CONSUMER_VERSION=9.0" 'requested version "9.0"'
  refused "-DWEFT_CONSUMER_COMPONENTS=nccl;mpi" "weft has no component 'mpi'"

  for name in weft nccl; do
    local flags
    read -ra flags <<<"$(pc --cflags --libs "$name")"
    cc -o "$out/pc-$name" "$src/tests/install/consumer/consumer.c" "${flags[@]}"
    (export LD_LIBRARY_PATH=$lib && run_consumer "$out/pc-$name" "$lib/$(readlink "$lib/lib$name.so")")
  done
  # The versions the pc files state are the ones the library reports.
  local code
  code=$(sed -n 's/^nccl version //p' "$out/pc-nccl.out")
  IFS=. read -r major minor patch <<<"$(pc --modversion nccl)"
  [ "$code" = $((major * 10000 + minor * 100 + patch)) ] || fail "nccl.pc says $major.$minor.$patch, the library $code"
  grep -q "^Weft $(pc --modversion weft) " "$out/pc-weft.out" \
    || fail "weft.pc's version is not the library's: $(head -2 "$out/pc-weft.out")"
}

export WEFT_DEVICE=host
if [ -z "${WEFT_CACHE_DIR:-}" ]; then export WEFT_CACHE_DIR=$work/cache; fi
case $mode in
  prefix)
    "$cmake" --install "$build" --prefix "$work/staged" >"$work/install.log" || fail "cmake --install: $(cat "$work/install.log")"
    mv "$work/staged" "$work/prefix"
    prefix=$work/prefix
    # The .deb's copy of the tree (component deb) is not part of a plain install.
    [ ! -e "$prefix/share/doc/weft/copyright" ] || fail "a plain install holds the .deb's files"
    ;;
  deb)
    (cd "$work" && "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" >"$work/cpack.log" 2>&1) \
      || fail "cpack: $(cat "$work/cpack.log")"
    debs=("$work"/deb/*.deb)
    if [ ${#debs[@]} != 1 ] || [ ! -f "${debs[0]}" ]; then fail "cpack made ${#debs[@]} .deb files: ${debs[*]}"; fi
    [ "$(basename "${debs[0]}")" = "weft_${version}-1_$(dpkg --print-architecture).deb" ] || fail "file name ${debs[0]}"
    check_deb "${debs[0]}"
    prefix=$work/root/usr
    # Stripped: with their debug information the libraries would make the package ten times larger.
    for f in "$prefix/$libdir"/lib*.so.*.* "$prefix/bin/weft-info"; do
      ! grep -q '\.debug_info' <<<"$(readelf -S -W "$f")" || fail "$f is not stripped"
    done
    ;;
  *) fail "unknown mode $mode (prefix or deb)" ;;
esac
check_tree "$prefix"
check_python "$prefix"
build_consumers "$prefix"
echo "install test ($mode): the tree checked${WEFT_PYTHON:+, weft imported from it}; consumers built with find_package(weft) and pkg-config ran"
