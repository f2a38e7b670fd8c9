#!/usr/bin/env bash
# Weft's IB network against its bound, in the Soft-RoCE lab (tests/ib/lab): two QEMU guests joined
# by an emulated link, one rank in each. Interleaved in each repetition: perftest's ib_write_bw at
# the largest size, one way and both ways at once (the bounds for a 2-rank busbw), ib_write_lat at
# 8 B, then Weft's AllReduce over NCCL_NET=IB and NCCL_NET=Socket, and its SendRecv and Broadcast
# (data one way only) over IB, on the same guests. Medians over --reps.
# The guests are emulated (TCG), so absolute numbers describe the lab, not hardware: the ratios
# are what to read.
#
# usage: benchmarks/run_ib_compare.sh [--reps N] [--max-bytes 4M] [--iters N] [--bin DIR] [--out DIR]
# Output: DIR/raw/lab.log and DIR/summary.md (also printed). About 3 minutes with --reps 3.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
BIN="$REPO/build/benchmarks" REPS=3 MAXB=4M ITERS=5 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift ;;
    --max-bytes) MAXB=$2; shift ;;
    --iters) ITERS=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "run_ib_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$BIN/all_reduce_perf" ] || { echo "no $BIN/all_reduce_perf: build with -DWEFT_BUILD_BENCHMARKS=ON" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/weft-ib-compare.XXXXXX)}
mkdir -p "$OUT/raw"
set +e
LAB_TIMEOUT=${LAB_TIMEOUT:-900} LAB_EXPORT="REPS=$REPS MAXB=$MAXB ITERS=$ITERS" \
  bash "$REPO/tests/ib/lab/lab.sh" pair "$HERE/ib_lab_guest.sh" "$BIN/all_reduce_perf" "$BIN/sendrecv_perf" \
  "$BIN/broadcast_perf" \
  > "$OUT/raw/lab.log" 2>&1
rc=$?
set -e
if [ $rc -eq 77 ]; then
  grep "SKIP" "$OUT/raw/lab.log"
  exit 77
fi
[ $rc -eq 0 ] || { tail -40 "$OUT/raw/lab.log"; echo "run_ib_compare.sh: the lab failed (log: $OUT/raw/lab.log)" >&2; exit 1; }
python3 - "$OUT/raw/lab.log" "$OUT/summary.md" "$REPS" "$MAXB" <<'PY'
import re, statistics, sys, datetime
log, out, reps, maxb = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
res = {"ib_write_bw": [], "ib_write_bw_bidir": [], "ib_write_lat": []}
weft = {}
for line in open(log, errors="replace"):
    m = re.search(r"LAB-RESULT (\S+) (.*)", line)
    if not m:
        continue
    kv = dict(x.split("=", 1) for x in m.group(2).split())
    if m.group(1) in ("ib_write_bw", "ib_write_bw_bidir"):
        res[m.group(1)].append(float(kv["MBps"]) / 1000)
    elif m.group(1) == "ib_write_lat":
        res["ib_write_lat"].append(float(kv["usec_typical"]))
    elif m.group(1) == "weft":
        # 2 ranks: busbw = algbw = bytes / time for AllReduce, SendRecv and Broadcast alike
        us = float(kv["usec"])
        weft.setdefault((kv["tool"], kv["net"], int(kv["bytes"])), []).append((us, int(kv["bytes"]) / us / 1e3))
nan = float("nan")
med = lambda v: statistics.median(v) if v else nan
uni = med(res["ib_write_bw"])
bidir = med(res["ib_write_bw_bidir"]) / 2  # per direction
lat = med(res["ib_write_lat"])
lines = [f"# Weft's IB network in the Soft-RoCE lab ({datetime.date.today()}, {reps} repetitions, medians)", "",
         "Two TCG-emulated guests (1 vCPU each), one rank each, joined by a QEMU socket link; RoCEv2 through",
         "rdma_rxe. Absolute numbers describe the emulation, not hardware.",
         f"Command: benchmarks/run_ib_compare.sh --reps {reps} --max-bytes {maxb}", "",
         f"- bound, perftest ib_write_bw at the largest size, one direction: {uni:.4f} GB/s",
         f"- perftest ib_write_bw -b (both directions at once), per direction: {bidir:.4f} GB/s",
         f"- perftest ib_write_lat, 8 B: {lat:.0f} us (typical)", "",
         "| tool | bytes | IB time (us) | IB busbw (GB/s) | / one-way bound | / two-way bound | Socket time (us) | IB / Socket (time) |",
         "|---|---:|---:|---:|---:|---:|---:|---:|"]
for tool in ("all_reduce_perf", "sendrecv_perf", "broadcast_perf"):
    for b in sorted({b for (t, _, b) in weft if t == tool}):
        ib = weft.get((tool, "IB", b), [])
        so = weft.get((tool, "Socket", b), [])
        it, ibw = med([x[0] for x in ib]), med([x[1] for x in ib])
        st = med([x[0] for x in so])
        lines.append(f"| {tool} | {b} | {it:.0f} | {ibw:.4f} | {ibw / uni:.2f}x | {ibw / bidir:.2f}x | "
                     f"{st:.0f} | {st / it:.2f}x |")
small = med([x[0] for x in weft.get(("all_reduce_perf", "IB", 8), [])])
lines += ["", f"8 B AllReduce over IB: {small:.0f} us against ib_write_lat's {lat:.0f} us ({lat / small:.2f}x of "
          "perftest's speed; a 2-rank AllReduce is one exchange each way)."]
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print(text)
PY
echo "raw: $OUT/raw/lab.log"
