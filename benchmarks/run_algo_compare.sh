#!/usr/bin/env bash
# Weft's AllReduce (or AllGather, ReduceScatter) algorithms side by side in one run, host mode:
# each algorithm forced with NCCL_ALGO (Ring, Tree, DDAFlat, DDATree; for the other two Ring and
# DDAFlat) and the tuner's own choice (NCCL_ALGO unset), for every size from 8 B to 64 MiB, float32
# sum, N ranks as processes.
# Also low precision at its sizes (RCCL_LOW_PRECISION_ENABLE=1, results not checked bit-exactly:
# the accuracy is reported by tests/collectives LowPrecisionColl). Interleaved per size band; the
# best of the repetitions.
#
# usage: benchmarks/run_algo_compare.sh [--coll allreduce|allgather|reducescatter] [--ranks N] [--reps R]
#                                       [--bin DIR] [--out DIR]
# Output: DIR/raw/*.txt and DIR/summary.md (also printed): one row per size with every algorithm's
# time, the fastest forced one, the tuner's time and its ratio to the fastest.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
BIN="$REPO/build/benchmarks" N=4 REPS=3 OUT="" COLL=allreduce
while [ $# -gt 0 ]; do
  case "$1" in
    --coll) COLL=$2; shift ;;
    --ranks) N=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "run_algo_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-${TMPDIR:-/tmp}/weft-algo-compare/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw"
case $COLL in
  allreduce) ALGOS="default Ring Tree DDAFlat DDATree" TOOL=all_reduce_perf ;;
  allgather) ALGOS="default Ring DDAFlat" TOOL=all_gather_perf ;;
  reducescatter) ALGOS="default Ring DDAFlat" TOOL=reduce_scatter_perf ;;
  *) echo "run_algo_compare.sh: --coll takes allreduce, allgather or reducescatter, not $COLL" >&2; exit 2 ;;
esac
# Size bands: small sizes get many iterations, large ones few. The machine's speed drifts with its
# neighbours, so every band runs all algorithms back to back (order rotating per repetition) before
# the next band: the algorithms of one size are always measured close together in time.
BANDS=("-b 8 -e 4K -f 2 -n 2000 -w 200" "-b 8K -e 1M -f 2 -n 200 -w 20" "-b 2M -e 64M -f 2 -n 10 -w 2")
COMMON=(-N "$N" -d float -o sum -a 3 --rotate 0 --timeout 280)
read -r -a LIST <<<"$ALGOS"
for r in $(seq 1 "$REPS"); do
  for b in "${!BANDS[@]}"; do
    for k in "${!LIST[@]}"; do
      a=${LIST[$(( (k + r + b) % ${#LIST[@]} ))]}
      echo "== $a band $b rep $r"
      env_args=(); [ "$a" != default ] && env_args=(NCCL_ALGO="$a")
      # Forced by hand means at every size: lift DDA's default size limits for its own runs.
      case $a in DDA*) env_args+=(RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES=1G RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES=1G) ;; esac
      # shellcheck disable=SC2086  # a band is a list of options
      env "${env_args[@]}" "$BIN/$TOOL" "${COMMON[@]}" -c 1 ${BANDS[$b]} >>"$OUT/raw/$a.rep$r.txt" 2>&1 ||
        echo "   $a failed (see $OUT/raw/$a.rep$r.txt)"
    done
  done
  echo "== LowPrecision rep $r"
  RCCL_LOW_PRECISION_ENABLE=1 WEFT_LOW_PRECISION_MIN_BYTES=0 "$BIN/$TOOL" "${COMMON[@]}" -c 0 -b 1M -e 64M \
    -f 4 -n 10 -w 2 >"$OUT/raw/LowPrecision.rep$r.txt" 2>&1 || echo "   LowPrecision failed"
done
python3 - "$OUT" "$ALGOS LowPrecision" >"$OUT/summary.md" <<'PY'
import glob, statistics, sys
d, algos = sys.argv[1], sys.argv[2].split()
t = {a: {} for a in algos}
wrong = {a: 0 for a in algos}
for a in algos:
    for f in glob.glob(f"{d}/raw/{a}.rep*.txt"):
        for line in open(f, errors="replace"):
            p = line.split()
            if len(p) >= 9 and p[0].isdigit():
                t[a].setdefault(int(p[0]), []).append(float(p[5]))  # out-of-place time, us
                if p[8].isdigit(): wrong[a] += int(p[8])
# The best of the repetitions: on a machine whose speed drifts with its neighbours, the fastest run
# of each configuration is the one least disturbed (medians are printed beside it).
med = lambda v: min(v) if v else float("nan")
median = lambda v: statistics.median(v) if v else float("nan")
sizes = sorted(set(s for a in algos for s in t[a]))
forced = [a for a in algos if a not in ("default", "LowPrecision")]
print("| bytes | " + " | ".join(f"{a} us" for a in algos) + " | fastest forced | tuner / fastest |")
print("|---:|" + "---:|" * len(algos) + "---|---:|")
for s in sizes:
    m = {a: med(t[a].get(s, [])) for a in algos}
    best = min((m[a], a) for a in forced if m[a] == m[a])
    print(f"| {s} | " + " | ".join(f"{m[a]:.2f}" for a in algos) + f" | {best[1]} | {m['default'] / best[0]:.2f} |")
print("\nTimes are the best of the repetitions (us, out-of-place, max over ranks). Medians:")
for a in algos:
    print(f"- {a}: " + ", ".join(f"{s}: {median(t[a].get(s, [])):.1f}" for s in sizes if t[a].get(s)))
print("\nwrong elements reported by -c 1:", {a: wrong[a] for a in algos if a != "LowPrecision"})
PY
cat "$OUT/summary.md"
echo "== done: $OUT/summary.md"
