#!/usr/bin/env bash
# Builds the libFuzzer targets (if needed) and runs each for a bounded time from a copy of its seed
# corpus; fails on the first crash, hang, leak or sanitizer report (docs/testing.md, "Fuzzing").
#   bash tests/fuzz/run.sh [seconds-per-target] [target...]
#   WEFT_FUZZ_BUILD=dir     the build directory (default build-fuzz at the top of the tree)
#   WEFT_FUZZ_KEEP=dir      keep each run's grown corpus and any crash input under dir
# Needs clang-14 with its libFuzzer runtime (tools/setup-debian.sh installs both).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
seconds=${1:-20}
shift || true
build=${WEFT_FUZZ_BUILD:-$top/build-fuzz}
cxx=${WEFT_FUZZ_CXX:-clang++-14}
cc=${WEFT_FUZZ_CC:-clang-14}
jobs=$(nproc)

if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cxx not found (tools/setup-debian.sh installs clang-14 and libclang-rt-14-dev)" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  CC=$cc CXX=$cxx cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_FUZZ=ON -DWEFT_WERROR=ON \
    -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
fi
cmake --build "$build" --target weft_fuzz -j"$jobs"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$here"/*_fuzz.cc; do
    name=$(basename "$f" _fuzz.cc)
    targets+=("$name")
  done
fi

work=${WEFT_FUZZ_KEEP:-}
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
# The targets read no Weft settings from the environment but NCCL_DEBUG's; keep them quiet and
# off any real cache directory.
export NCCL_DEBUG=${NCCL_DEBUG:-NONE}
export WEFT_CACHE_DIR="$work/cache"
# intercept_tls_get_addr=0: see tools/test_sanitizers.sh (clang 14's LeakSanitizer tracer can crash).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
for name in "${targets[@]}"; do
  exe="$build/tests/fuzz/weft_fuzz_$name"
  [ -x "$exe" ] || { echo "fuzz: no target $name ($exe)" >&2; exit 1; }
  corpus="$work/$name/corpus"
  rm -rf "$corpus"
  mkdir -p "$corpus" "$work/$name/crashes"
  cp "$here/corpus/$name"/* "$corpus"/
  dict=()
  [ -f "$here/$name.dict" ] && dict=(-dict="$here/$name.dict")
  log="$work/$name/fuzz.log"
  echo "== fuzz $name (${seconds}s)"
  if "$exe" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$work/$name/crashes/" "$corpus" >"$log" 2>&1; then
    grep -E '^#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|stat::average_exec_per_sec' "$log" | tail -3
  else
    echo "fuzz: $name FAILED; the input is under $work/$name/crashes/ (kept: set WEFT_FUZZ_KEEP)" >&2
    tail -60 "$log" >&2
    failed+=("$name")
    if [ -z "${WEFT_FUZZ_KEEP:-}" ]; then
      keep=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz-crash.XXXXXX")
      cp -r "$work/$name" "$keep/"
      echo "fuzz: copied to $keep/$name" >&2
    fi
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} target(s), ${seconds}s each: no crash"
