#!/usr/bin/env bash
# Registered buffers against plain ones, side by side in one run: all_reduce_perf with DDA flat and
# DDA tree forced (NCCL_ALGO, size limits lifted), with -R 0 (plain buffers), -R 1
# (ncclCommRegister) and -R 2 (symmetric windows over ncclMemAlloc memory), float32 sum, 8 B to
# 1 MiB, ranks as threads of one process (-T) and as processes (-N). DDA reads a registered input in
# place instead of staging it: between threads with either registration, between processes with
# windows only (-R 1 there is the control: no change expected). Interleaved: each repetition runs
# every variant back to back, the order rotating; medians of the repetitions, out-of-place (a call
# in place stages, registered or not). Also put_signal_perf between processes: a put into a window
# over ncclMemAlloc memory is a plain copy into the mapping, otherwise one process_vm_writev.
#
# usage: benchmarks/run_register_compare.sh [--ranks N] [--reps R] [--bin DIR] [--out DIR]
# Output: DIR/raw/*.txt and DIR/summary.md (also printed): a table per ranks mode and algorithm,
# with the median time of each registration and the ratio plain / registered (> 1: faster).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
BIN="$REPO/build/benchmarks" N=2 REPS=5 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) N=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run_register_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-${TMPDIR:-/tmp}/weft-register-compare/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw"
VARIANTS=()
for mode in T N; do for algo in DDAFlat DDATree; do for reg in 0 1 2; do VARIANTS+=("$mode.$algo.$reg"); done; done; done
VARIANTS+=(N.Put.0 N.Put.1 N.Put.2)
COMMON=(-b 8 -e 1M -f 4 -n 1000 -w 100 -d float -o sum -a 3 --rotate 0 -c 1 --timeout 280)
LIFT=(RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES=1G RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES=1G)
for r in $(seq 1 "$REPS"); do
  for k in "${!VARIANTS[@]}"; do
    v=${VARIANTS[$(( (k + r) % ${#VARIANTS[@]} ))]}
    IFS=. read -r mode algo reg <<<"$v"
    echo "== $v rep $r"
    tool=all_reduce_perf env_args=(NCCL_ALGO="$algo" "${LIFT[@]}")
    [ "$algo" = Put ] && tool=put_signal_perf env_args=()
    env "${env_args[@]}" "$BIN/$tool" "-$mode" "$N" -R "$reg" "${COMMON[@]}" >"$OUT/raw/$v.rep$r.txt" 2>&1 ||
      echo "   $v failed (see $OUT/raw/$v.rep$r.txt)"
  done
done
python3 - "$OUT" "${VARIANTS[*]}" >"$OUT/summary.md" <<'PY'
import glob, statistics, sys
d, variants = sys.argv[1], sys.argv[2].split()
t, wrong = {v: {} for v in variants}, 0
for v in variants:
    for f in glob.glob(f"{d}/raw/{v}.rep*.txt"):
        for line in open(f, errors="replace"):
            p = line.split()
            if len(p) >= 13 and p[0].isdigit():
                t[v].setdefault(int(p[0]), []).append(float(p[5]))
                wrong += int(p[8]) if p[8].isdigit() else 0
sizes = sorted({s for v in variants for s in t[v]})
med = lambda v, s: statistics.median(t[v][s]) if t[v].get(s) else float("nan")
reps = max(len(x) for v in variants for x in t[v].values())
print(f"AllReduce out of place, median us of {reps} repetitions; ratio = plain / registered (> 1: faster)")
for mode, name in (("T", "threads"), ("N", "processes")):
    for algo in ("DDAFlat", "DDATree") + (("Put",) if mode == "N" else ()):
        g = [f"{mode}.{algo}.{r}" for r in range(3)]
        print(f"\n{name}, {algo}\n")
        print("| bytes | plain | -R 1 | -R 2 | ratio -R 1 | ratio -R 2 |")
        print("|---:|---:|---:|---:|---:|---:|")
        for s in sizes:
            a, b, c = (med(v, s) for v in g)
            print(f"| {s} | {a:.2f} | {b:.2f} | {c:.2f} | {a / b:.2f}x | {a / c:.2f}x |")
print(f"\nwrong elements: {wrong}")
PY
cat "$OUT/summary.md"
