#!/usr/bin/env python3
"""Runs tests/trace/trace_job with WEFT_TRACE_FILE and checks every rank's trace against the calls
the job made: the API calls in order, one op event per operation with its count and algorithm,
steps inside their operation that move exactly what a Send and a Recv carry, waits that name a
peer, network messages when shared memory is off, and clock offsets that are right to within the
stated uncertainty (all ranks share one clock here, so the true offset is 0). Then it merges the
files with tools/weft_trace_merge.py and, where matplotlib is installed, draws them.

  check_trace.py --job BUILD/tests/trace/trace_job --nranks 4 [--net] [--only-rank0] --work DIR
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EPS_US = 2.0  # timestamps are written to the nanosecond; allow rounding between nested events


def fail(msg):
    print("check_trace: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def expected_api():
    return (["ncclCommInitRank"] + ["ncclAllReduce"] * 3 +
            ["ncclAllGather", "ncclBroadcastConfig", "ncclBroadcast", "ncclReduceScatter", "ncclGroupStart", "ncclSend", "ncclRecv",
             "ncclGroupEnd", "ncclCommSplit", "ncclAllReduce", "ncclCommDestroy", "ncclCommDestroy"])


def within(inner, outer):
    return inner["ts"] >= outer["ts"] - EPS_US and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + EPS_US


def check_rank(path, rank, nranks, net):
    with open(path) as f:
        doc = json.load(f)
    info = doc["weft"]["ranks"]
    if [r["rank"] for r in info] != [rank] or info[0]["nranks"] != nranks:
        fail("%s: header names ranks %s, expected rank %d of %d" % (path, info, rank, nranks))
    off, unc = info[0]["clockOffsetUs"], info[0]["clockUncertaintyUs"]
    if rank == 0 and (off != 0 or unc != 0):
        fail("%s: rank 0's offset must be 0, is %s +- %s" % (path, off, unc))
    if unc < 0 or abs(off) > unc + 1.0:
        fail("%s: clock offset %s us +- %s us, but every rank here reads the same clock" % (path, off, unc))
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    if any(e["pid"] != rank for e in events):
        fail("%s: events of another rank: %s" % (path, sorted({e["pid"] for e in events})))
    by = lambda cat: sorted((e for e in events if e["cat"] == cat), key=lambda e: e["ts"])
    api, ops, steps = by("api"), by("op"), by("step")
    names = [e["name"] for e in api]
    if names != expected_api():
        fail("%s: API calls %s, expected %s" % (path, names, expected_api()))
    bad = [e for e in api if e["args"]["result"] != "no error"]
    if bad:
        fail("%s: calls that failed: %s" % (path, bad))
    want = ["AllReduce"] * 3 + ["AllGather", "Broadcast", "ReduceScatter", "Send", "Recv", "AllReduce"]
    if [o["name"] for o in ops] != want:
        fail("%s: operations %s, expected %s" % (path, [o["name"] for o in ops], want))
    counts = [1024, 65536, 2, 4096, 4096, 4096, 1000, 1000, 512]
    for o, count in zip(ops, counts):
        a = o["args"]
        if a["count"] != count or a["bytes"] != 4 * count or a["datatype"] != "float32" or not a["algorithm"]:
            fail("%s: operation %s says %s" % (path, o["name"], a))
    # Only the Broadcast was called with a ncclCollConfig_t tag.
    tags = [o["args"].get("userTag") for o in ops]
    if tags != [None] * 4 + ["0x0000000000007e57"] + [None] * 4:
        fail("%s: operations' userTag %s (only the Broadcast's is 0x7e57)" % (path, tags))
    # Each operation lies inside the call that ran it (a group's inside ncclGroupEnd).
    runners = [e for e in api if e["name"] not in ("ncclGroupStart", "ncclSend", "ncclRecv", "ncclCommSplit",
                                                   "ncclCommInitRank", "ncclCommDestroy", "ncclBroadcastConfig")]
    pairs = list(zip(ops[:6], runners[:6])) + [(ops[6], runners[6]), (ops[7], runners[6]), (ops[8], runners[7])]
    for o, call in pairs:
        if not within(o, call):
            fail("%s: %s (%.3f + %.3f) is not inside %s (%.3f + %.3f)" % (path, o["name"], o["ts"], o["dur"],
                                                                          call["name"], call["ts"], call["dur"]))
    groups = by("group")
    if len(groups) != 1 or groups[0]["args"]["operations"] != 2:
        fail("%s: expected one group of 2 operations, got %s" % (path, groups))
    split = ops[8]["args"]
    if split["comm"] == ops[0]["args"]["comm"] or split["nranks"] != (nranks + 1 - rank % 2) // 2:
        fail("%s: the split communicator's AllReduce says %s" % (path, split))
    # Steps: inside an operation of the same name and number, peers in range, and a Send's and a
    # Recv's steps move exactly their 4000 bytes to and from the ring neighbours.
    for s in steps:
        a = s["args"]
        if not any(o["name"] == a["op"] and o["args"]["seq"] == a["seq"] and within(s, o) for o in ops):
            fail("%s: step %s of %s #%d lies in no such operation" % (path, s["name"], a["op"], a["seq"]))
        for k in ("sendPeer", "recvPeer", "peer"):
            if k in a and not 0 <= a[k] < nranks:
                fail("%s: step %s names %s %d" % (path, s["name"], k, a[k]))
    sends = [s for s in steps if s["args"]["op"] == "Send"]
    recvs = [s for s in steps if s["args"]["op"] == "Recv"]
    if sum(s["args"]["bytes"] for s in sends) != 4000 or any(s["args"]["sendPeer"] != (rank + 1) % nranks
                                                               for s in sends):
        fail("%s: Send steps %s" % (path, sends))
    if sum(s["args"]["bytes"] for s in recvs) != 4000 or any(s["args"]["recvPeer"] != (rank - 1) % nranks
                                                               for s in recvs):
        fail("%s: Recv steps %s" % (path, recvs))
    for o in ops:
        if not any(s["args"]["op"] == o["name"] and s["args"]["seq"] == o["args"]["seq"] for s in steps):
            fail("%s: %s #%d has no step" % (path, o["name"], o["args"]["seq"]))
    for w in by("wait"):
        if w["dur"] < 10 or not 0 <= w["args"]["peer"] < nranks:
            fail("%s: wait %s" % (path, w))
    nets = by("net")
    if net:
        sent = sum(e["args"]["bytes"] for e in nets if e["name"] == "net send")
        stepped = sum(s["args"]["bytes"] for s in steps if "sendPeer" in s["args"])
        if sent < stepped or not any(e["name"] == "net recv" for e in nets):
            fail("%s: %d bytes sent over the network, but steps sent %d" % (path, sent, stepped))
        if any(e["args"]["peer"] == rank or not 0 <= e["args"]["peer"] < nranks for e in nets):
            fail("%s: network messages to %s" % (path, sorted({e["args"]["peer"] for e in nets})))
    elif nets:
        fail("%s: %d network messages with shared memory on" % (path, len(nets)))
    return len(events)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--job", required=True)
    p.add_argument("--nranks", type=int, required=True)
    p.add_argument("--net", action="store_true")
    p.add_argument("--only-rank0", action="store_true")
    p.add_argument("--work", required=True)
    args = p.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    env = dict(os.environ, WEFT_DEVICE="host", WEFT_TRACE_FILE=os.path.join(args.work, "rank%r.json"))
    if args.net:
        env["NCCL_SHM_DISABLE"] = "1"
    cmd = [args.job, str(args.nranks)] + (["--only-rank0-traces"] if args.only_rank0 else [])
    start = time.monotonic()
    r = subprocess.run(cmd, env=env, timeout=120)
    took = time.monotonic() - start
    if r.returncode != 0:
        fail("the job exited with %d" % r.returncode)
    # A rank left alone in the clock measurement waits for the whole WEFT_TIMEOUT_MS (the test sets
    # 60 s) before it gives up: a job that takes that long got the agreement wrong.
    if took > 30:
        fail("the job took %.1f s" % took)
    traced = [0] if args.only_rank0 else list(range(args.nranks))
    files = sorted(os.listdir(args.work))
    if files != sorted("rank%d.json" % i for i in traced):
        fail("files %s, expected one per traced rank %s" % (files, traced))
    paths = [os.path.join(args.work, "rank%d.json" % i) for i in traced]
    for i, path in zip(traced, paths):
        n = check_rank(path, i, args.nranks, args.net)
        print("rank %d: %d events" % (i, n))
    merged = os.path.join(args.work, "merged.out")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "weft_trace_merge.py"), "-o", merged] + paths)
    if r.returncode != 0:
        fail("weft_trace_merge.py exited with %d" % r.returncode)
    with open(merged) as f:
        doc = json.load(f)
    pids = {e["pid"] for e in doc["traceEvents"] if e.get("ph") == "X"}
    if pids != set(traced):
        fail("the merged trace has ranks %s" % sorted(pids))
    if importlib.util.find_spec("matplotlib") is None:
        print("check_trace: matplotlib missing, the plot is not drawn")
        return
    png = os.path.join(args.work, "trace.png")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "weft_trace_plot.py"), "-o", png, merged])
    if r.returncode != 0 or os.path.getsize(png) < 1000:
        fail("weft_trace_plot.py exited with %d" % r.returncode)
    print("check_trace: ok")


if __name__ == "__main__":
    main()
