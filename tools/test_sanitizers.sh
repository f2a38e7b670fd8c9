#!/usr/bin/env bash
# Builds Weft twice more, with AddressSanitizer + UndefinedBehaviorSanitizer and with
# ThreadSanitizer, and runs the tiers each can judge (docs/testing.md, "Sanitizers"):
#   ASan+UBSan (build-asan): unit, threads, and a procs subset that touches every transport and
#     algorithm family and every failure path (PROCS_SUBSET below).
#   TSan (build-tsan): unit and the threads tier (ranks as threads: where races live).
#   bash tools/test_sanitizers.sh               both
#   bash tools/test_sanitizers.sh asan|tsan     one
# A report fails the test that met it: UBSan does not recover (-fno-sanitize-recover), ASan and TSan
# exit non-zero, and a forked rank that leaks fails its test (tests/collectives/harness.cc).
# tools/test.sh runs this after the host tests. Needs no more than tools/setup-debian.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
jobs=$(nproc)
supp=$PWD/tools/sanitizers
status=0  # a failing run fails the script, after the runs that follow it have run too
section() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

# What the runs need and nothing more: no benchmarks, no Python or torch extensions. -O1 with line
# tables only (-g1), as the sanitizers' authors advise: reports keep file and line, and the builds
# compile in a fraction of -O2 -g's time on two cores. The library compiles one unit per folder
# (WEFT_UNITY_BUILD, cmake/WeftUnity.cmake): half the time again. Warnings are the host build's to
# judge: at -O1 GCC 12 warns falsely inside libstdc++'s <regex> (maybe-uninitialized), so no
# -Werror here.
configure() {
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DWEFT_WERROR=OFF -DWEFT_BUILD_TESTS=ON \
    -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_BUILD_PYTHON=OFF -DWEFT_BUILD_TORCH=OFF -DWEFT_UNITY_BUILD=ON "${@:2}" >/dev/null
}
build() {
  cmake --build "$1" -j"$jobs" --target weft_unit_tests weft_coll_threads_tests "${@:2}"
}

# The calibration cache: tools/test.sh exports one; alone, this script makes its own.
if [ -z "${WEFT_CACHE_DIR:-}" ]; then
  WEFT_CACHE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/weft-san-cache.XXXXXX")
  export WEFT_CACHE_DIR
  trap 'rm -rf "$WEFT_CACHE_DIR"' EXIT
fi
export WEFT_DEVICE=host

# The threads tier, one process per variant: the binary runs every case of a variant in one process
# (docs/testing.md, "How a case reaches CTest"). Through CTest each case is a process of its own, and
# under a sanitizer a process's start costs about 0.2 s: the tier's 2100 cases would take 4 minutes
# more on two cores than the 20 variants do. The matrix's large cases
# (*_big: megabytes per rank, the same code paths as the small ones over more chunks) are left out:
# under a sanitizer they took three quarters of the tier's time. A failing variant prints its log's
# report and fails the run after the others have run.
# A second argument names variants to leave out (a regular expression), a third more cases to leave
# out (a gtest filter's negative patterns, joined with ':').
threads_tier() {
  local bin=$1/tests/collectives/weft_coll_threads_tests skip=${2:-'^$'} more=${3:+:$3} log failed=0 v start
  log=$(mktemp "${TMPDIR:-/tmp}/weft-san-threads.XXXXXX")
  for v in $("$bin" --weft-list-variants | awk '$1 == "variant" {print $2}'); do
    if [[ $v =~ $skip ]]; then
      echo "threads variant $v: left out here"
      continue
    fi
    start=$SECONDS
    if timeout 1200 "$bin" --weft-variant="$v" --gtest_filter="-*_big$more" >"$log" 2>&1; then
      echo "threads variant $v: passed ($(grep -c '^\[       OK' "$log") cases, $((SECONDS - start)) s)"
    else
      echo "threads variant $v: FAILED; the end of its output:"
      tail -n 60 "$log"
      failed=1
    fi
  done
  rm -f "$log"
  return $failed
}

# The procs subset (ctest -R): the default variant's cases outside the matrix (failure paths,
# /dev/shm hygiene, point-to-point, groups, split and shrink, robustness, uneven collectives, the
# agreement checks), every collective's 3-rank float32 matrix case, the main collectives' under
# every variant that changes the transport or the algorithm (ring only, tree, DDA flat and tree,
# tiny FIFOs, the network transport), the failure, point-to-point and group cases of the tree, DDA
# and network variants, and one mismatch lane.
PROCS_SUBSET='^procs\.[A-Z][A-Za-z]*\.|^procs\.(tree|net|ddaflat)\.(Failure|P2P|Groups|ShmHygiene)\.'
PROCS_SUBSET+='|^procs\.Matrix/.*/procs_[A-Za-z]+_n3_float32_small$'
PROCS_SUBSET+='|^procs\.(ddaflat|ddatree|tree|net|ringonly|smallfifo)\.Matrix/.*/procs_'
PROCS_SUBSET+='(AllReduce|Broadcast|AllGather|ReduceScatter|AlltoAll)_n3_float32_small$'
PROCS_SUBSET+='|^procs\.mismatch\.ring\.|^agreement\.'

if [ "$which" = all ] || [ "$which" = asan ]; then
  section "ASan+UBSan build"
  configure build-asan -DWEFT_ASAN=ON
  # net_check and the example tuner: the agreement checks in the procs subset run them.
  build build-asan weft_kernel_emulation_tests weft_coll_procs_tests net_check weft_example_tuner_v6
  section "ASan+UBSan tests"
  # intercept_tls_get_addr=0: up to GCC 13 and LLVM 16 the runtime guesses a pre-2.25 glibc header in
  # front of a dynamic TLS block when the block's address is 16 past a page (chance, with malloc'd
  # blocks) and reads two words before it; LeakSanitizer's stop-the-world tracer then dies
  # ("Tracer caught signal 11") in about one forked rank's leak check in a hundred, reporting no
  # leak. Without the interceptor only dlopen'd plugins' TLS goes unscanned: Weft and the tests are
  # linked at start, so their thread_local storage is in the static TLS block, which is scanned.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0:intercept_tls_get_addr=0"
  ASAN_OPTIONS+=":suppressions=$supp/asan.supp"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
  # ASan's dlopen interceptor searches from its own runtime, not from the test binary's run path.
  LD_LIBRARY_PATH=$PWD/build-asan/tests/net${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    ctest --test-dir build-asan --output-on-failure -j2 --timeout 600 -L unit -LE architecture || status=1
  threads_tier build-asan || status=1
  ctest --test-dir build-asan --output-on-failure -j2 --timeout 600 -L procs -R "$PROCS_SUBSET" || status=1
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
fi

if [ "$which" = all ] || [ "$which" = tsan ]; then
  section "TSan build"
  configure build-tsan -DWEFT_TSAN=ON
  build build-tsan
  section "TSan tests"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  # Not the kernel emulation: the device code it runs hands data over through volatile flags and
  # fences, the GPU's memory model, which C++'s (and so TSan's) does not describe; TSan reports every
  # hand-off. ASan+UBSan above runs it.
  LD_LIBRARY_PATH=$PWD/build-tsan/tests/net${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    ctest --test-dir build-tsan --output-on-failure -j2 --timeout 600 -L unit -LE architecture \
    -E '^KernelEmulation\.' || status=1
  # Not the stream variant: it changes only how the last copy of an output is stored (non-temporal
  # stores), not who touches what when; ASan+UBSan runs it, and TSan's time goes further elsewhere.
  # The matrix in float32 and int8 only: who touches which piece when depends on the collective,
  # the ranks and the size, not on the datatype (the pieces of a 1-byte and a 4-byte type cover
  # both element sizes' boundaries). ASan+UBSan runs every datatype, where offsets and tails
  # matter. Three quarters of the matrix, and of TSan's time on it.
  other_types=''
  for t in float16 bfloat16 float64 int32 int64 uint8 uint32 uint64 f8e4m3 f8e5m2; do
    other_types+="${other_types:+:}*/threads_*_${t}_*"
  done
  threads_tier build-tsan '^stream$' "$other_types" || status=1
  unset TSAN_OPTIONS
fi
exit $status
