#!/usr/bin/env bash
# Registered buffers against plain ones, side by side in one run: all_reduce_perf with DDA flat and
# DDA tree forced (NCCL_ALGO, size limits lifted), with -R 0 (plain buffers), -R 1
# (ncclCommRegister) and -R 2 (symmetric windows), float32 sum, 8 B to 1 MiB. Ranks as threads of
# one process (-T), where DDA reads a registered input in place instead of staging it, and as
# processes (-N), where every rank still stages (a control: no change expected). Interleaved: each
# repetition runs every variant back to back, the order rotating; medians of the repetitions,
# out-of-place (a call in place stages, registered or not).
#
# usage: benchmarks/run_register_compare.sh [--ranks N] [--reps R] [--bin DIR] [--out DIR]
# Output: DIR/raw/*.txt and DIR/summary.md (also printed): per size, the median time of each
# variant and the ratio plain / registered (> 1: registration is faster).
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
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run_register_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-${TMPDIR:-/tmp}/weft-register-compare/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw"
VARIANTS=(T.DDAFlat.0 T.DDAFlat.1 T.DDAFlat.2 T.DDATree.0 T.DDATree.1 N.DDAFlat.0 N.DDAFlat.1)
COMMON=(-b 8 -e 1M -f 4 -n 1000 -w 100 -d float -o sum -a 3 --rotate 0 -c 1 --timeout 280)
LIFT=(RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES=1G RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES=1G)
for r in $(seq 1 "$REPS"); do
  for k in "${!VARIANTS[@]}"; do
    v=${VARIANTS[$(( (k + r) % ${#VARIANTS[@]} ))]}
    IFS=. read -r mode algo reg <<<"$v"
    echo "== $v rep $r"
    env NCCL_ALGO="$algo" "${LIFT[@]}" "$BIN/all_reduce_perf" "-$mode" "$N" -R "$reg" "${COMMON[@]}" \
      >"$OUT/raw/$v.rep$r.txt" 2>&1 || echo "   $v failed (see $OUT/raw/$v.rep$r.txt)"
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
print("AllReduce out of place, median us of", max(len(x) for v in variants for x in t[v].values()),
      "repetitions; ratio = plain / registered (> 1: registration is faster)\n")
print("| bytes | flat plain | flat -R 1 | flat -R 2 | ratio -R 1 | ratio -R 2 | tree plain | tree -R 1 | ratio "
      "| procs flat plain | procs -R 1 | ratio |")
print("|---:|" + "---:|" * 11)
for s in sizes:
    f0, f1, f2, t0, t1, p0, p1 = (med(v, s) for v in variants)
    print(f"| {s} | {f0:.2f} | {f1:.2f} | {f2:.2f} | {f0 / f1:.2f}x | {f0 / f2:.2f}x | {t0:.2f} | {t1:.2f} | "
          f"{t0 / t1:.2f}x | {p0:.2f} | {p1:.2f} | {p0 / p1:.2f}x |")
print(f"\nwrong elements: {wrong}")
PY
cat "$OUT/summary.md"
