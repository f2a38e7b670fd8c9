#!/usr/bin/env bash
# Weft vs Open MPI on a busy machine: 2-rank float32 sum AllReduce while one busy loop per core
# runs beside the ranks (what a training step's compute threads or a neighbour job do to a
# collective). Over shared memory and over TCP loopback (Weft with NCCL_SHM_DISABLE=1, Open MPI with
# its tcp BTL). The load is started before every measured run and stopped after it, so Weft and
# Open MPI see the same load; runs alternate (the order flips every repetition) and every figure is
# the median over --reps repetitions. Numbers under load are noisy: read the size of a gap, not
# its second digit.
#
# Placement matters as much as the load: mpirun binds each of 2 ranks to a core of its own, while
# processes nobody binds go where the scheduler puts them, and beside 2 busy loops on 2 cores it
# puts both ranks on one core in about half the runs (then every handoff is a context switch: an
# unbound Open MPI, spinning, took 0.9-4 ms for 8 B there). So by default Weft's ranks start under
# the same mpirun command as Open MPI's (--launch mpirun) and both get the same placement;
# --launch fork times Weft's own `all_reduce_perf -N`, unbound.
#
# usage: benchmarks/run_load_compare.sh [--reps N] [--sizes LIST] [--transports LIST] [--load N]
#                                       [--ranks N] [--launch mpirun|fork] [--bin DIR] [--out DIR]
#   --reps N          repetitions (default 3)
#   --sizes LIST      bytes per rank, comma-separated, K/M suffixes (default 8,64K,1M,4M,16M)
#   --transports LIST shm,tcp (default both)
#   --load N          busy loops (default: one per online CPU)
#   --ranks N         ranks (default 2)
#   --launch HOW      how Weft's ranks start: mpirun (default; mpirun's binding, as Open MPI's ranks)
#                     or fork (all_reduce_perf -N, unbound)
#   --bin DIR         Weft's perf tools (default <repo>/build/benchmarks; built there if missing)
#   --out DIR         results (default ${TMPDIR:-/tmp}/weft-load/<timestamp>)
# Open MPI's side is benchmarks/mpi_reference.cc, timed as the baseline's mpi_allreduce_bench
# (--target 0.3 s) but for at least 0.3 s in all (--min-seconds): beside the busy loops its
# calibration sometimes asks for a few hundred calls, a run that fits in one time slice.
# Output: DIR/raw/*.txt (every run), DIR/summary.md (printed at the end). The default run takes
# a few minutes on 2 cores.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
REPS=3 SIZES=8,64K,1M,4M,16M TRANSPORTS=shm,tcp LOAD=$(nproc) RANKS=2 LAUNCH=mpirun BIN="" OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift ;;
    --sizes) SIZES=$2; shift ;;
    --transports) TRANSPORTS=$2; shift ;;
    --load) LOAD=$2; shift ;;
    --ranks) RANKS=$2; shift ;;
    --launch) LAUNCH=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "run_load_compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$LAUNCH" in mpirun|fork) ;; *) echo "run_load_compare.sh: --launch is mpirun or fork" >&2; exit 2 ;; esac
# shellcheck source=benchmarks/sizes.sh
. "$HERE/sizes.sh"
list=""
for s in ${SIZES//,/ }; do list="$list $(bytes_of "$s")"; done
SIZES=$list
for tool in mpic++ mpirun python3; do
  command -v "$tool" >/dev/null || { echo "run_load_compare.sh: $tool not found (tools/setup-debian.sh installs it)" >&2; exit 2; }
done
WORK=${TMPDIR:-/tmp}/weft-load
OUT=${OUT:-$WORK/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw" "$WORK/build"

if [ -z "$BIN" ]; then
  BIN="$REPO/build/benchmarks"
  if [ ! -x "$BIN/all_reduce_perf" ]; then
    echo "== build (all_reduce_perf in $REPO/build)"
    if ! { cmake -S "$REPO" -B "$REPO/build" && cmake --build "$REPO/build" --target all_reduce_perf -j 2; } \
      >"$OUT/build.log" 2>&1; then
      tail -30 "$OUT/build.log"
      exit 1
    fi
  fi
fi
BIN=$(cd "$BIN" && pwd)
timeout 300 mpic++ -O2 -std=c++17 -o "$WORK/build/mpi_reference" "$HERE/mpi_reference.cc"
{
  echo "date: $(date -Is)"
  lscpu | grep -E "Model name|^CPU\(s\)" || true
  echo "mpirun: $(mpirun --version 2>&1 | head -1)"
  echo "ranks: $RANKS  busy loops: $LOAD  reps: $REPS  sizes:$SIZES  transports: $TRANSPORTS  Weft launched by: $LAUNCH"
} | tee "$OUT/env.txt"

# The load: LOAD processes spinning at normal priority. Started in this shell (not in a command
# substitution, whose output pipe they would hold open) and stopped by pid.
LOAD_PIDS=()
load_start() {
  for _ in $(seq 1 "$LOAD"); do
    bash -c 'while :; do :; done' &
    LOAD_PIDS+=($!)
  done
  sleep 0.3
}
load_stop() {
  [ ${#LOAD_PIDS[@]} -eq 0 ] && return 0
  kill "${LOAD_PIDS[@]}" 2>/dev/null || true
  wait "${LOAD_PIDS[@]}" 2>/dev/null || true
  LOAD_PIDS=()
}
trap load_stop EXIT INT TERM

# Iterations by size and transport, so that a Weft run lasts about as long as the MPI benchmark's
# (--target 0.3 s) on this kind of machine. Under load a figure is an average over the scheduler's
# time slices (a few ms each), and a run much shorter than that fits in one slice or straddles a
# few, a matter of luck: 300 calls of 8 B gave 0.5 to 250 us a call, 20000 calls 0.7 to 8, and
# 150 calls of 64 KiB took 47-58 us a call out of place and 3.6-4 us in place in the same run.
# The estimate per call is Weft's under this load, rounded up: 1 us + 3 GB/s over shared memory,
# 30 us + 1.5 GB/s over TCP.
weft_iters() {  # transport size
  local est n
  if [ "$1" = tcp ]; then est=$((30 + $2 / 1500)); else est=$((1 + $2 / 3000)); fi
  n=$((300000 / est))
  [ "$n" -lt 15 ] && n=15
  echo "-n $n -w $((n / 100 + 1))"
}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo)
run_weft() {  # transport size name
  local env=() launch=("$BIN/all_reduce_perf" -N "$RANKS") rc=0
  [ "$1" = tcp ] && env=(NCCL_SHM_DISABLE=1)
  # Under mpirun the ranks meet at 127.0.0.1:WEFT_BENCH_PORT (benchmarks/README.md, "External launch").
  [ "$LAUNCH" = mpirun ] && launch=("${MPIRUN[@]}" -n "$RANKS" "$BIN/all_reduce_perf")
  # shellcheck disable=SC2046  # weft_iters is a list of options
  env "${env[@]}" timeout 300 "${launch[@]}" -b "$2" -e "$2" $(weft_iters "$1" "$2") \
    -d float -o sum -a 3 --rotate 0 -c 1 --timeout 280 >"$OUT/raw/$3.txt" 2>"$OUT/raw/$3.err" || rc=$?
  [ "$rc" = 0 ] || echo "   !! $3 failed (rc=$rc): $(tail -2 "$OUT/raw/$3.err" | tr '\n' ' ')"
}
run_mpi() {  # transport size name
  local mca=(--mca btl "vader,self") rc=0
  [ "$1" = tcp ] && mca=(--mca btl "tcp,self" --mca btl_tcp_if_include lo)
  timeout 300 "${MPIRUN[@]}" "${mca[@]}" -n "$RANKS" "$WORK/build/mpi_reference" --ops allreduce --min "$2" --max "$2" --target 0.3 \
    --min-seconds 0.3 \
    >"$OUT/raw/$3.txt" 2>"$OUT/raw/$3.err" || rc=$?
  [ "$rc" = 0 ] || echo "   !! $3 failed (rc=$rc): $(tail -2 "$OUT/raw/$3.err" | tr '\n' ' ')"
}

for r in $(seq 1 "$REPS"); do
  for t in ${TRANSPORTS//,/ }; do
    for s in $SIZES; do
      if [ $((r % 2)) = 1 ]; then order="weft mpi"; else order="mpi weft"; fi
      for who in $order; do
        name="${who}_${t}_$s.rep$r"
        echo "== $name"
        load_start
        "run_$who" "$t" "$s" "$name"
        load_stop
      done
    done
  done
done

python3 - "$OUT" "$RANKS" "$LOAD" "$LAUNCH" >"$OUT/summary.md" <<'PY'
import glob, os, re, statistics, sys
from collections import defaultdict
d, ranks, load, launch = sys.argv[1:5]
times = defaultdict(list)  # (who, transport, size) -> [us]
wrong = 0
for f in glob.glob(os.path.join(d, "raw", "*.txt")):
    m = re.match(r"(weft|mpi)_(shm|tcp)_(\d+)\.rep\d+\.txt$", os.path.basename(f))
    if not m:
        continue
    who, t, size = m.group(1), m.group(2), int(m.group(3))
    for line in open(f, errors="replace"):
        x = line.split()
        if who == "weft" and len(x) == 13 and x[0] == str(size):
            times[(who, t, size)].append(float(x[5]))
            if x[8] not in ("0", "N/A"):
                wrong += int(float(x[8]))
        elif who == "mpi" and len(x) == 8 and x[0] == "allreduce" and x[2] == str(size):
            times[(who, t, size)].append(float(x[4]))
def fmt(us):
    return f"{us:.2f} us" if us < 1000 else f"{us / 1000:.2f} ms"
print(f"# AllReduce under load: {ranks} ranks, {load} busy loops, float32 sum, out-of-place\n")
how = ("the same mpirun command as Open MPI's (the same binding)" if launch == "mpirun"
       else "all_reduce_perf -N (forked, unbound; Open MPI's ranks bound by mpirun)")
print(f"Weft's ranks started by {how}.\n")
print("Median time per operation over the repetitions; ratio = Open MPI's time / Weft's "
      "(> 1: Weft is faster).\n")
for t in ("shm", "tcp"):
    sizes = sorted({k[2] for k in times if k[1] == t})
    if not sizes:
        continue
    print(f"## {t}\n\n| bytes | Weft | Open MPI | ratio | reps (Weft/Open MPI) |\n|---:|---:|---:|---:|---|")
    for s in sizes:
        w, m = times.get(("weft", t, s), []), times.get(("mpi", t, s), [])
        if w and m:
            mw, mm = statistics.median(w), statistics.median(m)
            print(f"| {s} | {fmt(mw)} | {fmt(mm)} | {mm / mw:.2f}x | {len(w)}/{len(m)} |")
        else:
            print(f"| {s} | {fmt(statistics.median(w)) if w else 'failed'} | "
                  f"{fmt(statistics.median(m)) if m else 'failed'} | - | {len(w)}/{len(m)} |")
    print()
print(f"Wrong elements in Weft's checks: {wrong}")
PY
cat "$OUT/summary.md"
echo "== done: $OUT/summary.md"
