#!/usr/bin/env bash
# Installs the build into a temporary prefix (or unpacks the .deb that cpack makes) and builds a
# consumer program against it twice, with CMake's find_package(weft) and with pkg-config, then runs
# both. The prefix is moved after installing, so a path baked in at build time fails the test.
#   run_install_test.sh install BUILD_DIR SOURCE_DIR     cmake --install into a prefix
#   run_install_test.sh deb BUILD_DIR SOURCE_DIR         cpack -G DEB, checked and extracted
set -euo pipefail
mode=$1 build=$(cd "$2" && pwd) src=$(cd "$3" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "$mode" = install ]; then
  cmake --install "$build" --prefix "$work/staged" >/dev/null
  mv "$work/staged" "$work/prefix"
  prefix=$work/prefix
else
  (cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" >/dev/null)
  deb=$(ls "$work"/deb/weft_*.deb) || fail "cpack made no .deb"
  info=$(dpkg-deb -I "$deb")
  echo "$info" | grep -q '^ Package: weft$' || fail "package name"
  echo "$info" | grep -q '^ Depends:.*libhwloc15' || fail "Depends lacks libhwloc15: $(echo "$info" | grep Depends)"
  contents=$(dpkg-deb -c "$deb")
  # The library directory is the one the build was configured with: /usr/lib/<multiarch> when
  # CMAKE_INSTALL_PREFIX=/usr, /usr/lib otherwise; both are on Debian's default library path.
  for f in 'lib/(x86_64-linux-gnu/)?libnccl\.so\.2 ' 'lib/(x86_64-linux-gnu/)?librccl\.so\.1 ' \
           'lib/(x86_64-linux-gnu/)?libweft\.so ' 'include/nccl\.h$' 'include/weft/weft\.h$' \
           'lib/(x86_64-linux-gnu/)?cmake/weft/weftConfig\.cmake$' 'lib/(x86_64-linux-gnu/)?pkgconfig/nccl\.pc$' \
           'bin/weft-info$'; do
    echo "$contents" | grep -Eq "\./usr/$f" || fail "the .deb lacks /usr/$f"
  done
  # Stripped: the debug build's symbols would make the package several times larger.
  size=$(stat -c %s "$deb")
  [ "$size" -lt 20000000 ] || fail "the .deb is $size bytes: are the libraries stripped?"
  dpkg-deb -x "$deb" "$work/root"
  prefix=$work/root/usr
fi

for f in include/nccl.h include/rccl.h include/rccl/rccl.h include/weft/weft.h bin/weft-info; do
  [ -e "$prefix/$f" ] || fail "missing $f in the installed tree"
done
libdir=$(dirname "$(find "$prefix" -name libnccl.so.2 | head -1)")
for f in libnccl.so libnccl.so.2 libweft.so librccl.so.1 pkgconfig/weft.pc pkgconfig/nccl.pc cmake/weft/weftConfig.cmake; do
  [ -e "$libdir/$f" ] || fail "missing $libdir/$f"
done

export WEFT_DEVICE=host LD_LIBRARY_PATH=$libdir
cmake -S "$src/tests/install/consumer" -B "$work/with-cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/with-cmake" >/dev/null
"$work/with-cmake/consumer" | tee "$work/out-cmake"
# The program must have loaded the installed library, not the build tree's.
ldd "$work/with-cmake/consumer" | grep -q "$libdir/libnccl.so.2" || fail "consumer did not link the installed libnccl"

flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs nccl)
cc -o "$work/with-pkgconfig" "$src/tests/install/consumer/consumer.c" $flags
"$work/with-pkgconfig" >"$work/out-pc"
[ "$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --modversion weft)" = "$(sed -n 's/^Weft \([0-9.]*\).*/\1/p' "$work/out-pc")" ] \
  || fail "weft.pc's version differs from the library's"
grep -q '^allreduce ok$' "$work/out-cmake" && grep -q '^allreduce ok$' "$work/out-pc" || fail "consumer output"
echo "install test ($mode): consumer built with CMake and with pkg-config, both ran"
