#!/usr/bin/env bash
# Weft over TCP vs Open MPI's TCP transport and gloo, side by side in one run: 2 ranks on this
# machine with NCCL_SHM_DISABLE=1, so Weft's ranks talk through its network transport (proxy +
# built-in Socket network) over loopback, exactly as ranks on two hosts would. Also measures the
# bound: what loopback TCP carries in both directions at once (../shared/baselines
# tcp_loopback_bench "duplex"). Configurations are interleaved, medians over --reps repetitions.
#
# usage: benchmarks/run_net_compare.sh [--reps N] [--bin DIR] [--baselines DIR] [--out DIR] [--tls]
#                                      [--weft-only]
#   --bin DIR    Weft's perf tools (default <repo>/build/benchmarks)
#   --tls        also Weft with TLS on its sockets (WEFT_TLS_KEY_FILE, docs/security.md), interleaved
#   --weft-only  leave out Open MPI, gloo and the loopback bound (nothing to build)
# Output: DIR/raw/*.txt and DIR/summary.md (also printed). About 5 minutes with --reps 3.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
BASE="$REPO/../shared/baselines" BIN="$REPO/build/benchmarks" REPS=3 OUT="" TLS=0 OTHERS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --baselines) BASE=$2; shift ;;
    --out) OUT=$2; shift ;;
    --tls) TLS=1 ;;
    --weft-only) OTHERS=0 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run_net_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ $OTHERS = 1 ] && [ ! -e /usr/include/gloo/allreduce.h ] && [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y libgloo-dev openmpi-bin libopenmpi-dev >/dev/null
fi
WORK=${TMPDIR:-/tmp}/weft-net-compare
OUT=${OUT:-$WORK/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw" "$WORK/build"
if [ $OTHERS = 1 ]; then
  timeout 300 mpic++ -O2 -std=c++17 -o "$WORK/build/mpi_allreduce_bench" "$BASE/mpi_allreduce_bench.cpp"
  timeout 300 g++ -O2 -std=c++17 -pthread -o "$WORK/build/gloo_allreduce_bench" "$BASE/gloo_allreduce_bench.cpp" -lgloo
  timeout 300 g++ -O2 -std=c++17 -pthread -o "$WORK/build/tcp_loopback_bench" "$BASE/tcp_loopback_bench.cpp"
fi
# A fresh random key for the TLS runs (the file stays private to this user).
KEYFILE="$OUT/tls.key"
(umask 077 && head -c 48 /dev/urandom | base64 -w0 >"$KEYFILE")
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self --mca btl_tcp_if_include lo
        --mca oob_tcp_if_include lo)
SIZES="8 65536 1048576 16777216 67108864"
weft() {  # one Weft run per size band: small sizes get many iterations, large ones few
  local common=(-N 2 -d float -o sum -a 3 --rotate 0 -c 1 --timeout 280)
  NCCL_SHM_DISABLE=1 "$BIN/all_reduce_perf" "${common[@]}" -b 8 -e 8 -n 2000 -w 200
  NCCL_SHM_DISABLE=1 "$BIN/all_reduce_perf" "${common[@]}" -b 64K -e 1M -f 16 -n 200 -w 20
  NCCL_SHM_DISABLE=1 "$BIN/all_reduce_perf" "${common[@]}" -b 16M -e 64M -f 4 -n 10 -w 2
}
for r in $(seq 1 "$REPS"); do
  order="weft"; [ $TLS = 1 ] && order="$order wefttls"; [ $OTHERS = 1 ] && order="$order mpi gloo"
  [ $((r % 2)) = 0 ] && order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
  for who in $order; do
    echo "== $who rep $r"
    case $who in
      weft) weft >"$OUT/raw/weft.rep$r.txt" 2>&1 || echo "weft failed (see raw)" ;;
      wefttls) WEFT_TLS_KEY_FILE=$KEYFILE weft >"$OUT/raw/wefttls.rep$r.txt" 2>&1 || echo "weft TLS failed (see raw)" ;;
      mpi) timeout 600 "${MPIRUN[@]}" -n 2 "$WORK/build/mpi_allreduce_bench" --target 0.3 --max 67108864 \
             --ops allreduce >"$OUT/raw/mpi.rep$r.txt" 2>&1 || echo "mpi failed" ;;
      gloo) timeout 600 "$WORK/build/gloo_allreduce_bench" --np 2 --algos ring --max 67108864 --target 0.3 \
              >"$OUT/raw/gloo.rep$r.txt" 2>&1 || echo "gloo failed" ;;
    esac
  done
  [ $OTHERS = 0 ] || timeout 300 "$WORK/build/tcp_loopback_bench" >"$OUT/raw/tcp.rep$r.txt" 2>&1 ||
    echo "tcp bench failed"
done
python3 - "$OUT" "$SIZES" >"$OUT/summary.md" <<'PY'
import glob, re, statistics, sys
d, sizes = sys.argv[1], [int(s) for s in sys.argv[2].split()]
t = {k: {s: [] for s in sizes} for k in ("weft", "wefttls", "mpi", "gloo")}
duplex = []
for f in glob.glob(d + "/raw/*.txt"):
    who = f.split("/")[-1].split(".")[0]
    for line in open(f, errors="replace"):
        p = line.split()
        if who in ("weft", "wefttls") and len(p) >= 6 and p[0].isdigit() and int(p[0]) in sizes:
            t[who][int(p[0])].append(float(p[5]))  # out-of-place time, us
        elif who == "mpi" and len(p) >= 5 and p[0] == "allreduce" and int(p[2]) in sizes:
            t["mpi"][int(p[2])].append(float(p[4]))
        elif who == "gloo" and len(p) >= 6 and p[0] == "allreduce" and p[3].isdigit() and int(p[3]) in sizes:
            t["gloo"][int(p[3])].append(float(p[5]))
        elif who == "tcp" and p and p[0] == "duplex":
            duplex.append(float(p[4]))
def med(v): return statistics.median(v) if v else float("nan")
bound = med(duplex)
print("# Weft over TCP (NCCL_SHM_DISABLE=1) vs Open MPI TCP vs gloo ring, 2 ranks, AllReduce float32 sum\n")
print(f"loopback TCP duplex bound (sum of both directions): {bound:.3f} GB/s; busbw of a 2-rank AllReduce "
      "moves each byte once each way, so its bound is half of that per direction summed: "
      f"{bound/2:.3f} GB/s\n")
print("| bytes | Weft us | Weft busbw | Open MPI TCP us | busbw | gloo ring us | busbw | Weft / best other | Weft / bound |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    w, m, g = med(t["weft"][s]), med(t["mpi"][s]), med(t["gloo"][s])
    bw = lambda us: s / us / 1e3 if us == us and us > 0 else float("nan")  # 2(n-1)/n = 1 for n=2
    best = min(x for x in (m, g) if x == x) if (m == m or g == g) else float("nan")
    print(f"| {s} | {w:.2f} | {bw(w):.3f} | {m:.2f} | {bw(m):.3f} | {g:.2f} | {bw(g):.3f} | "
          f"{best / w:.2f}x | {bw(w) / (bound / 2):.2f} |")
if any(t["wefttls"][s] for s in sizes):
    print("\n## Weft with TLS (WEFT_TLS_KEY_FILE) vs without, same runs interleaved\n")
    print("| bytes | plain us | TLS us | TLS busbw GB/s | TLS / plain time |")
    print("|---:|---:|---:|---:|---:|")
    for s in sizes:
        w, e = med(t["weft"][s]), med(t["wefttls"][s])
        print(f"| {s} | {w:.2f} | {e:.2f} | {s / e / 1e3:.3f} | {e / w:.2f}x |")
PY
cat "$OUT/summary.md"
echo "== done: $OUT/summary.md"
