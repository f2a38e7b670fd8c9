#!/usr/bin/env bash
# The regression guard: Weft's key performance figures, each as a ratio to its reference measured
# in the same run, in a few minutes. It runs the comparison scripts with short settings (all
# interleaved, medians of --reps):
#   run_compare.sh       shared memory, AllReduce and AllGather, 2 and 4 ranks, vs Open MPI; memcpy;
#                        and AllReduce with 8 and 16 ranks (more ranks than cores), both MPIs oversubscribed
#   run_net_compare.sh   TCP loopback, 2 ranks, vs Open MPI TCP, gloo and the loopback duplex bound
#   run_netns_compare.sh 2 network namespaces x 2 ranks (TCP between them), vs Open MPI and gloo;
#                        as root only
#   run_load_compare.sh  2 ranks beside one busy loop per core, shm and TCP, vs Open MPI
# and prints one table: figure, Weft, reference, ratio, the goal it is held to, and whether this
# run meets it. It always exits 0 when the runs themselves worked (a machine's noise is no
# failure); read the ratios. Nothing in CI times anything.
#
# usage: benchmarks/guard.sh [--reps N] [--bin DIR] [--baselines DIR] [--out DIR]
#   --reps N   repetitions of each comparison (default 3)
#   --bin DIR  Weft's perf tools (default <repo>/build/benchmarks)
#   --out DIR  results (default ${TMPDIR:-/tmp}/weft-guard/<timestamp>); each script's own
#              summary is kept in DIR/<script>/summary.md
# About 13 minutes on 2 cores. Needs Open MPI's compiler (tools/setup-debian.sh installs it).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
REPS=3 BIN="$REPO/build/benchmarks" BASE="$REPO/../shared/baselines" OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --baselines) BASE=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "guard.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ ! -x "$BIN/all_reduce_perf" ] || [ ! -x "$BIN/all_gather_perf" ]; then
  echo "guard.sh: no perf tools in $BIN (build them: cmake --build build --target weft_benchmarks)" >&2
  exit 2
fi
OUT=${OUT:-${TMPDIR:-/tmp}/weft-guard/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
status=0
echo "== shared memory vs Open MPI (run_compare.sh)"
# 64 B and 4 MiB besides the key sizes: the full grid's weakest points (benchmarks/README.md, "The
# comparison as curves"), a payload just beyond a slot's inline bytes and a 2-rank AllGather whose
# halves the MPIs move with one copy.
"$HERE/run_compare.sh" --bin "$BIN" --baselines "$BASE" --reps "$REPS" --ranks 2,4 --sizes 8,64,64K,1M,4M,16M,64M \
  --out "$OUT/compare" >"$OUT/compare.log" 2>&1 || { status=1; tail -5 "$OUT/compare.log"; }
echo "== more ranks than cores: 8 and 16 ranks, AllReduce (run_compare.sh)"
"$HERE/run_compare.sh" --bin "$BIN" --baselines "$BASE" --reps "$REPS" --ops allreduce --ranks 8,16 --sizes 8,64K,16M \
  --out "$OUT/scale" >"$OUT/scale.log" 2>&1 || { status=1; tail -5 "$OUT/scale.log"; }
echo "== TCP vs Open MPI and gloo (run_net_compare.sh)"
"$HERE/run_net_compare.sh" --bin "$BIN" --baselines "$BASE" --reps "$REPS" --out "$OUT/net" >"$OUT/net.log" 2>&1 ||
  { status=1; tail -5 "$OUT/net.log"; }
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v unshare >/dev/null; then
  echo "== across hosts: 2 network namespaces x 2 ranks (run_netns_compare.sh)"
  "$HERE/run_netns_compare.sh" --bin "$BIN" --baselines "$BASE" --reps "$REPS" --out "$OUT/netns" >"$OUT/netns.log" 2>&1 ||
    { status=1; tail -5 "$OUT/netns.log"; }
else
  echo "== across hosts: skipped (network namespaces need root, ip and unshare)"
fi
echo "== under load (run_load_compare.sh)"
"$HERE/run_load_compare.sh" --bin "$BIN" --reps "$REPS" --sizes 8,1M,16M --out "$OUT/load" \
  >"$OUT/load.log" 2>&1 || { status=1; tail -5 "$OUT/load.log"; }
python3 "$HERE/guard_summary.py" "$OUT" | tee "$OUT/summary.md"
echo "== done: $OUT/summary.md"
exit "$status"
