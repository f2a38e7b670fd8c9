#!/usr/bin/env bash
# Weft vs Open MPI and MPICH, side by side, in one run: Weft's perf tools with -N 2 and -N 4 (float,
# sum, 8 B .. 64 MiB) against the Open MPI baseline (../shared/baselines: mpi_allreduce_bench over
# shared memory, for allreduce and allgather), Weft's own MPI program for the other collectives
# (benchmarks/mpi_reference.cc, built with Open MPI), the same program built with MPICH when
# Debian's mpich is installed (mpicxx.mpich, mpirun.mpich; every collective), and mem_bench (the
# memcpy bound). Configurations are interleaved (Weft and the MPIs alternate, the order flips every
# repetition) and every figure is the median over --reps repetitions, because the machine is shared
# and noisy.
#
# usage: benchmarks/run_compare.sh [--reps N] [--quick] [--install] [--out DIR]
#                                  [--bin DIR | --build-dir DIR] [--baselines DIR] [--target S]
#                                  [--ops LIST] [--sizes LIST] [--ranks LIST]
#   --reps N        repetitions (default 3; --quick: 1)
#   --quick         sizes up to 1 MiB, fewer iterations, 1 rep (about 2 minutes)
#   --ops LIST      collectives, comma-separated, of allreduce,allgather,reducescatter,broadcast,
#                   reduce,alltoall, or all (default allreduce,allgather)
#   --sizes LIST    only these sizes in bytes, comma-separated (K and M suffixes), e.g. 8,64M:
#                   a before/after check of a change in a few minutes rather than the whole grid
#   --ranks LIST    rank counts, comma-separated (default 2,4)
#   --install       apt-get install Open MPI and the compilers first (needs root)
#   --out DIR       where results go (default ${TMPDIR:-/tmp}/weft-compare/<timestamp>)
#   --bin DIR       use the perf tools already built in DIR (e.g. build/benchmarks)
#   --build-dir DIR configure and build Weft there (default <repo>/build-compare)
#   --baselines DIR the reference scripts (default <repo>/../shared/baselines)
#   --target S      seconds per size for the Open MPI benchmark (default 0.3; --quick 0.05)
# Output: DIR/raw/*.txt (every run), DIR/load.log (CPU load during each run), DIR/env.txt and
# DIR/summary.md (the tables, also printed at the end). Default run: about 6-10 minutes on 2 cores.
set -euo pipefail

# Internal: one Weft configuration over the Open MPI benchmark's size grid (8 B, then 16 B x4 ..
# MAXB), or over the --sizes list, one run of the perf tool per size (its start costs about 0.1 s).
# Weft reports the max over ranks (-a 3) and reuses the same buffer bytes every iteration
# (--rotate 0), as the Open MPI benchmark does; every size is validated (-c 1).
# Iterations: about 0.1 s of calls per size and placement (--quick: 0.02 s), from an estimate of
# a call's time here (0.6 us on 2 ranks, 4 us a rank on more, plus 2 GB/s). The MPI side runs for
# --target (0.3 s). A run of a few milliseconds, as a fixed 2000 calls of 8 B were, is decided by
# where the scheduler happens to put the unbound ranks at the start: 2.3-5.6 us a call out of
# place, then 0.6 in place in the same run, against 0.53-0.57 over 0.2 s.
if [ "${1:-}" = --weft-sizes ]; then
  tool=$2 n=$3 quick=$4 maxb=$5 sizes=${6:-} status=0
  common=(-N "$n" -d float -o sum -a 3 --rotate 0 -c 1 --timeout 280)
  budget=1000000  # tenths of a microsecond: 0.1 s
  [ "$quick" = 1 ] && budget=200000
  if [ -z "$sizes" ]; then
    sizes=8
    for ((b = 16; b <= maxb; b *= 4)); do sizes="$sizes,$b"; done
  fi
  for b in ${sizes//,/ }; do
    if [ "$n" -le 2 ]; then est=6; else est=$((40 * n)); fi
    est=$((est + b / 200))
    it=$((budget / est))
    [ "$it" -lt 10 ] && it=10
    [ "$it" -gt 200000 ] && it=200000
    "$tool" "${common[@]}" -b "$b" -e "$b" -n "$it" -w $((it / 20 + 2)) || status=$?
  done
  exit "$status"
fi

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo --mca btl_tcp_if_include lo)
WORK=${TMPDIR:-/tmp}/weft-compare
# Internal: one MPI program (LAUNCHER N PROGRAM TARGET OPS MAXB [SIZES]) over the whole grid, or at
# the sizes of a list: the programs take a range, not a list, so each size is a range of its own;
# the output of all of them is one run's.
if [ "${1:-}" = --mpi-run ]; then
  launcher=$2 n=$3 prog=$4 target=$5 ops=$6 maxb=$7 sizes=${8:-}
  if [ "$launcher" = mpich ]; then launch=(mpirun.mpich -n "$n"); else launch=("${MPIRUN[@]}" -n "$n"); fi
  if [ -z "$sizes" ]; then exec "${launch[@]}" "$prog" --target "$target" --max "$maxb" --ops "$ops"; fi
  for b in ${sizes//,/ }; do
    "${launch[@]}" "$prog" --target "$target" --min "$b" --max "$b" --ops "$ops"
  done
  exit 0
fi

HERE=$(cd "$(dirname "$0")" && pwd)
SELF="$HERE/$(basename "$0")"
REPO=$(cd "$HERE/.." && pwd)
BASE="$REPO/../shared/baselines"
REPS="" QUICK=0 INSTALL=0 OUT="" BIN="" BUILD="$REPO/build-compare" TARGET="" OPS=allreduce,allgather SIZES=""
RANKS=2,4
# Bytes from 8, 64K, 64M.
# shellcheck source=benchmarks/sizes.sh
. "$HERE/sizes.sh"
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift ;;
    --quick) QUICK=1 ;;
    --install) INSTALL=1 ;;
    --out) OUT=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --build-dir) BUILD=$2; shift ;;
    --baselines) BASE=$2; shift ;;
    --target) TARGET=$2; shift ;;
    --ops) OPS=$2; shift ;;
    --sizes) SIZES=$2; shift ;;
    --ranks) RANKS=$2; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "run_compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$QUICK" = 1 ]; then
  REPS=${REPS:-1} TARGET=${TARGET:-0.05} MAXB=1048576
else
  REPS=${REPS:-3} TARGET=${TARGET:-0.3} MAXB=67108864
fi
[ "$OPS" = all ] && OPS=allreduce,allgather,reducescatter,broadcast,reduce,alltoall
# The perf tool of a collective, and the ops the baseline program covers (the rest: mpi_reference).
perf_tool() {
  case "$1" in
    allreduce) echo all_reduce_perf ;; allgather) echo all_gather_perf ;; reducescatter) echo reduce_scatter_perf ;;
    broadcast) echo broadcast_perf ;; reduce) echo reduce_perf ;; alltoall) echo alltoall_perf ;;
    *) echo "run_compare.sh: unknown collective $1" >&2; exit 2 ;;
  esac
}
BASE_OPS="" REF_OPS=""
for op in ${OPS//,/ }; do
  perf_tool "$op" >/dev/null
  case "$op" in allreduce|allgather) BASE_OPS="$BASE_OPS${BASE_OPS:+,}$op" ;; *) REF_OPS="$REF_OPS${REF_OPS:+,}$op" ;; esac
done
if [ -n "$SIZES" ]; then
  list=""
  for b in ${SIZES//,/ }; do list="$list${list:+,}$(bytes_of "$b")"; done
  SIZES=$list
fi
[ -d "$BASE" ] || { echo "run_compare.sh: no baselines at $BASE (use --baselines DIR)" >&2; exit 2; }
BASE=$(cd "$BASE" && pwd)
OUT=${OUT:-$WORK/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw" "$WORK/build"

if [ "$INSTALL" = 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get update
  timeout 900 apt-get install -y g++ make cmake python3 procps openmpi-bin libopenmpi-dev
fi
for tool in mpic++ mpirun g++ python3; do
  command -v "$tool" >/dev/null || { echo "run_compare.sh: $tool not found (try --install)" >&2; exit 2; }
done

echo "== build"
if [ -z "$BIN" ]; then
  cmake -S "$REPO" -B "$BUILD" -DWEFT_BUILD_TESTS=OFF >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
  targets=()
  for op in ${OPS//,/ }; do targets+=("$(perf_tool "$op")"); done
  cmake --build "$BUILD" --target "${targets[@]}" -j 2 >>"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
  BIN="$BUILD/benchmarks"
fi
BIN=$(cd "$BIN" && pwd)
timeout 300 mpic++ -O2 -std=c++17 -o "$WORK/build/mpi_allreduce_bench" "$BASE/mpi_allreduce_bench.cpp"
timeout 300 mpic++ -O2 -std=c++17 -o "$WORK/build/mpi_reference" "$HERE/mpi_reference.cc"
MPICH=0
if command -v mpicxx.mpich >/dev/null && command -v mpirun.mpich >/dev/null; then
  timeout 300 mpicxx.mpich -O2 -std=c++17 -o "$WORK/build/mpich_reference" "$HERE/mpi_reference.cc" && MPICH=1
fi
timeout 300 g++ -O3 -march=native -std=c++17 -pthread -o "$WORK/build/mem_bench" "$BASE/mem_bench.cpp"

{
  echo "date: $(date -Is)"
  echo "kernel: $(uname -r)"
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L2|L3" || true
  echo "mem: $(free -g | awk '/Mem:/{print $2" GiB"}')"
  echo "g++: $(g++ --version | head -1)"
  echo "mpirun: $(mpirun --version 2>&1 | head -1)"
  if [ "$MPICH" = 1 ]; then echo "mpich: $(mpirun.mpich --version 2>&1 | grep -m1 -i version)"; else
    echo "mpich: not installed (apt-get install mpich libmpich-dev adds it)"; fi
  echo "weft tools: $BIN"
  echo "reps: $REPS  quick: $QUICK  mpi target: $TARGET s/size  max bytes: $MAXB"
  echo "ops: $OPS  ranks: $RANKS  sizes: ${SIZES:-all}"
} >"$OUT/env.txt"
cat "$OUT/env.txt"

# run NAME TIMEOUT CMD... : one measured run (load logged by the baselines' measure.py).
run() {
  local name=$1 to=$2; shift 2
  echo "== $name"
  local rc=0
  python3 "$BASE/measure.py" --timeout "$to" --max-wait 5 --name "$name" --log "$OUT/load.log" \
    --out "$OUT/raw/$name.txt" --err "$OUT/raw/$name.err" -- "$@" || rc=$?
  if [ "$rc" != 0 ]; then
    echo "   !! $name failed (rc=$rc), see $OUT/raw/$name.err" | tee -a "$OUT/load.log"
    tail -5 "$OUT/raw/$name.err" || true
  fi
  return 0
}

for r in $(seq 1 "$REPS"); do
  run "mem.rep$r" 120 "$WORK/build/mem_bench" --reps 7 --pingpong-iters 200000
  # Weft's own sum pass in place and out of place, two threads at once: what memory charges for
  # out of place (README.md, reduce_passes); absent from tool folders built before it existed.
  if [ -x "$BIN/reduce_passes" ]; then
    run "passes.rep$r" 120 "$BIN/reduce_passes" --bytes 64M --threads 2 --reps 5
  fi
  for n in ${RANKS//,/ }; do
    order="weft mpi"
    [ "$MPICH" = 1 ] && order="$order mpich"
    # Rotate the order every repetition (and differently per rank count).
    read -r -a turn <<<"$order"
    k=$(( (r + n / 2) % ${#turn[@]} ))
    for who in "${turn[@]:k}" "${turn[@]:0:k}"; do
      case "$who" in
        weft)
          for op in ${OPS//,/ }; do
            run "weft_${op}_n$n.rep$r" 600 "$SELF" --weft-sizes "$BIN/$(perf_tool "$op")" "$n" "$QUICK" "$MAXB" "$SIZES"
          done ;;
        mpi)
          if [ -n "$BASE_OPS" ]; then
            run "mpi_shm_n$n.rep$r" 300 "$SELF" --mpi-run openmpi "$n" "$WORK/build/mpi_allreduce_bench" "$TARGET" \
              "$BASE_OPS" "$MAXB" "$SIZES"
          fi
          if [ -n "$REF_OPS" ]; then
            run "mpi_ref_n$n.rep$r" 600 "$SELF" --mpi-run openmpi "$n" "$WORK/build/mpi_reference" "$TARGET" \
              "$REF_OPS" "$MAXB" "$SIZES"
          fi ;;
        mpich)
          run "mpich_shm_n$n.rep$r" 600 "$SELF" --mpi-run mpich "$n" "$WORK/build/mpich_reference" "$TARGET" "$OPS" \
            "$MAXB" "$SIZES" ;;
      esac
    done
  done
done

python3 "$HERE/compare_summary.py" "$OUT" >"$OUT/summary.md"
cat "$OUT/summary.md"
echo "== done: $OUT/summary.md"
