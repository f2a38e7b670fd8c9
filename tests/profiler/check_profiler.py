#!/usr/bin/env python3
"""Runs tests/trace/trace_job under the example profiler plugin of one ABI version and checks
what the plugin was given: an init and a finalize per communicator; per rank the calls the job
made as API events (v5 and later) under group API events with their depth and states; a group
event and one operation event per call, with its function, count, datatype, algorithm and
protocol, parented as the version expects; every event stopped once. Then the same with a mask
that asks for collectives only (no point-to-point event may come) and with mask 0 (no event), and
a run over the network (shared memory off, the example network plugin) whose proxy events
check_proxy checks.
v1 to v3 get the older layouts: no API events, the communicator's hash in every operation event,
and (v1) NCCL's enum values instead of names, which are mapped back here.

  check_profiler.py --abi N --plugin LIB --net-plugin NET_LIB --job TRACE_JOB --work DIR
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

GROUP, COLL, P2P, PROXY_OP, PROXY_STEP, PROXY_CTRL, NET_PLUGIN, GROUP_API, COLL_API, P2P_API = \
    1, 2, 4, 8, 16, 32, 128, 256, 512, 1024
# NCCL's state numbers: ProxyOpInProgress_v4, SendPeerWait_v4, SendWait, RecvGPUWait, NetPluginUpdate.
OP_IN_PROGRESS, SEND_PEER_WAIT, SEND_WAIT, RECV_GPU_WAIT, NET_UPDATE = 19, 20, 9, 12, 21
# ProxyCtrlIdle, Active, Sleep, Wakeup.
CTRL_IDLE, CTRL_ACTIVE, CTRL_SLEEP, CTRL_WAKEUP = 13, 14, 15, 16
EXAMPLE_NET_ID = 0x57454654
CALLS = [("AllReduce", 1024), ("AllReduce", 65536), ("AllReduce", 2), ("AllGather", 4096), ("Broadcast", 4096),
         ("ReduceScatter", 4096)]


def fail(msg):
    print("check_profiler: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(args, mask, tag, nranks=3, extra_env=None):
    work = os.path.join(args.work, tag)
    os.makedirs(work)
    env = dict(os.environ, WEFT_DEVICE="host", NCCL_PROFILER_PLUGIN=args.plugin, NCCL_DEBUG="WARN",
               EXAMPLE_PROFILER_LOG=os.path.join(work, "log"), EXAMPLE_PROFILER_MASK=str(mask))
    env.update(extra_env or {})
    r = subprocess.run([args.job, str(nranks)], env=env, timeout=120, capture_output=True, text=True)
    if r.returncode != 0:
        fail("the job exited with %d: %s" % (r.returncode, r.stderr))
    logs = []
    for path in sorted(glob.glob(os.path.join(work, "log.*"))):
        lines = [line.split() for line in open(path)]
        logs.append((path, lines))
    return logs, r.stderr


# v1's enum values (NCCL's ncclFunc_t, ncclDataType_t, algorithm and protocol numbers); 255 is a
# name the old enums lack and maps to "?", which the checks refuse.
V1_FUNCS = ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv", "Send", "Recv"]
V1_TYPES = ["ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64", "ncclFloat16",
            "ncclFloat32", "ncclFloat64", "ncclBfloat16"]
V1_ALGOS = ["TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"]
V1_PROTOS = ["LL", "LL128", "SIMPLE"]


def v1_names(e):
    for key, names in (("func", V1_FUNCS), ("datatype", V1_TYPES), ("algo", V1_ALGOS), ("proto", V1_PROTOS)):
        if key in e:
            n = int(e[key])
            e[key] = names[n] if n < len(names) else "?"


def parse(lines, abi=7):
    """events {id: dict}, in start order; contexts; stops and states per id."""
    events, contexts, stops, states, finals = {}, [], {}, {}, []
    stop_at = {}
    for at, w in enumerate(lines):
        if w[0] == "init":
            contexts.append(int(w[1]))
        elif w[0] == "finalize":
            finals.append(int(w[1]))
        elif w[0] == "start":
            e = dict(kv.split("=", 1) for kv in w[2:])
            for k in ("ctx", "type", "parent", "rank", "count", "root", "peer", "depth", "group", "seq", "channels",
                      "channel", "steps", "chunk", "send", "pid", "step", "plugin"):
                if k in e:
                    e[k] = int(e[k])
            if abi == 1:
                v1_names(e)
            events[int(w[1])] = e
        elif w[0] == "stop":
            stops[int(w[1])] = stops.get(int(w[1]), 0) + 1
            stop_at[int(w[1])] = at
        elif w[0] == "state":
            states.setdefault(int(w[1]), []).append(int(w[2]))
            if len(w) > 3:
                states.setdefault((int(w[1]), "args"), []).append(w[3].split("=", 1)[1])
    for i, e in events.items():
        e["stop_at"] = stop_at.get(i, -1)
    return events, contexts, stops, states, finals


def check_rank(path, lines, abi, nranks, mask):
    events, contexts, stops, states, finals = parse(lines, abi)
    if len(contexts) != 2 or sorted(finals) != sorted(contexts):
        fail("%s: inits %s and finalizes %s (expected one each for the communicator and its split)" %
             (path, contexts, finals))
    # The job's communicator comes first; the split one has ranks of its own.
    ranks = {e["rank"] for e in events.values() if e["type"] in (COLL, P2P) and e["ctx"] == contexts[0]}
    if len(ranks) > 1:
        fail("%s: operations of ranks %s" % (path, ranks))
    rank = ranks.pop() if ranks else None
    for i in events:
        if stops.get(i) != 1:
            fail("%s: event %d stopped %s times" % (path, i, stops.get(i, 0)))
    by = lambda t: [(i, e) for i, e in events.items() if e["type"] == t]
    if abi < 5 and any(e["type"] > 255 for e in events.values()):
        fail("%s: a v%d plugin got API events" % (path, abi))
    colls, p2ps, groups = by(COLL), by(P2P), by(GROUP)
    if mask == 0:
        if events:
            fail("%s: mask 0 but %d events" % (path, len(events)))
        return
    want = CALLS + [("AllReduce", 512)]
    if [(e["func"], e["count"]) for _, e in colls] != want:
        fail("%s: collectives %s, expected %s" % (path, [(e["func"], e["count"]) for _, e in colls], want))
    if abi == 1:
        # Weft's own algorithms (the one-shot ring, DDA) have no v1 number: 255, logged as "?". The
        # ring and the tree have NCCL's numbers, and the job's larger collectives run on one of them.
        if not any(e["algo"] in ("RING", "TREE") for _, e in colls):
            fail("%s: no v1 collective has NCCL's RING or TREE number: %s" % (path, [e["algo"] for _, e in colls]))
        for _, e in colls:
            if e["algo"] == "?":
                e["algo"] = "WEFT_ONLY"
    for i, e in colls:
        if e["datatype"] != "ncclFloat32" or not re.fullmatch(r"[A-Z0-9_]+", e["algo"]) or \
                e["proto"] not in ("LL", "LL128", "SIMPLE") or e["channels"] < 1:
            fail("%s: collective event %s" % (path, e))
    if abi >= 7:
        # The job's Broadcast comes through ncclBroadcastConfig with userProfilerTag 0x7e57: its API
        # and operation events carry it, every other event 0.
        tagged = [(e["type"], e["func"]) for e in events.values() if e.get("tag", "0") != "0"]
        wrong = [e for e in events.values() if e.get("tag") not in (None, "0", "7e57") or
                 (e.get("tag") == "0" and e.get("func") == "Broadcast")]
        has_api = any(e["type"] == COLL_API for e in events.values())
        want = [(t, "Broadcast") for t in ([COLL_API, COLL] if has_api else [COLL])]
        if sorted(tagged) != sorted(want) or wrong:
            fail("%s: tagged events %s, expected %s (the Broadcast's)" % (path, tagged, want))
    if [e["seq"] for _, e in colls[:6]] != sorted(e["seq"] for _, e in colls[:6]):
        fail("%s: sequence numbers out of order" % path)
    if mask & P2P:
        sends = [e for _, e in p2ps if e["func"] == "Send"]
        recvs = [e for _, e in p2ps if e["func"] == "Recv"]
        if len(sends) != 1 or len(recvs) != 1 or sends[0]["count"] != 1000 or recvs[0]["count"] != 1000:
            fail("%s: point-to-point events %s" % (path, p2ps))
        if rank is not None and (sends[0]["peer"] != (rank + 1) % nranks or recvs[0]["peer"] != (rank - 1) % nranks):
            fail("%s: rank %d's Send/Recv peers %d/%d" % (path, rank, sends[0]["peer"], recvs[0]["peer"]))
    elif p2ps or by(P2P_API):
        fail("%s: point-to-point events although the mask (%d) asks for collectives only" % (path, mask))
    # A group's events come whenever the mask asks for anything below them, whatever the group holds.
    if len(groups) != 8:
        fail("%s: %d group events" % (path, len(groups)))
    group_ids = {i for i, _ in groups}
    if abi >= 5:
        api = dict(by(COLL_API) + by(P2P_API))
        gapis = dict(by(GROUP_API))
        depths = [e["depth"] for e in gapis.values()]
        if depths != [1] * 6 + [2, 1]:
            fail("%s: group API depths %s" % (path, depths))
        for i in gapis:
            if states.get(i) != [23, 24]:
                fail("%s: group API event %d states %s (expected GroupStartApiStop, GroupEndApiStart)" %
                     (path, i, states.get(i)))
        for i, e in colls + p2ps:
            parent = api.get(e["parent"])
            if parent is None or parent["func"] != e["func"] or parent["count"] != e["count"] or \
                    e["group"] not in group_ids or parent["parent"] not in gapis:
                fail("%s: operation %d (%s) has parent %s and group %s" % (path, i, e, parent, e.get("group")))
    else:
        for i, e in colls + p2ps:
            if e["parent"] not in group_ids:
                fail("%s: a v%d operation's parent must be its group: %s" % (path, abi, e))
    if abi <= 3:
        # Every operation names its communicator: one hash per context, a different one per context.
        hashes = {}
        for _, e in colls + p2ps:
            hashes.setdefault(e["ctx"], set()).add(e.get("comm"))
        if any(len(h) != 1 or None in h or "0000000000000000" in h for h in hashes.values()) or \
                len({next(iter(h)) for h in hashes.values()}) != len(hashes):
            fail("%s: v%d operation events' communicator hashes %s" % (path, abi, hashes))


def check_proxy(path, lines, abi, nranks):
    """The network run (every peer over the example network plugin): ProxyOp events under the
    operations, with nSteps ProxyStep events each, numbered in order and with their states and
    sizes; a NetPlugin event from the plugin under every send step; each event stopped before its
    parent. One ProxyCtrl event, without a parent, per communicator whose messages the proxy
    moved, with the proxy thread's states (v4+), each a change from the last."""
    events, contexts, _, states, _ = parse(lines, abi)
    by = lambda t: {i: e for i, e in events.items() if e["type"] == t}
    opers, proxy_ops, steps, nets = {**by(COLL), **by(P2P)}, by(PROXY_OP), by(PROXY_STEP), by(NET_PLUGIN)
    if not proxy_ops or not steps:
        fail("%s: %d ProxyOp and %d ProxyStep events over the network" % (path, len(proxy_ops), len(steps)))
    # The job's communicator is the first context; the split one has ranks of its own.
    rank = next(e["rank"] for e in opers.values() if e["ctx"] == contexts[0])
    for i, op in proxy_ops.items():
        parent = opers.get(op["parent"])
        kids = sorted((e["step"], j) for j, e in steps.items() if e["parent"] == i)
        if parent is None or op["peer"] == op["rank"] or op["send"] not in (0, 1) or op["chunk"] <= 0 or \
                op["pid"] <= 0:
            fail("%s: ProxyOp %d %s under %s" % (path, i, op, parent))
        if [k for k, _ in kids] != list(range(op["steps"])):
            fail("%s: ProxyOp %d announces %d steps but has steps %s" % (path, i, op["steps"], [k for k, _ in kids]))
        if op["stop_at"] > parent["stop_at"] or any(steps[j]["stop_at"] > op["stop_at"] for _, j in kids):
            fail("%s: ProxyOp %d stopped after its operation, or before one of its steps" % (path, i))
        if abi >= 4 and states.get(i) != [OP_IN_PROGRESS]:
            fail("%s: ProxyOp %d states %s" % (path, i, states.get(i)))
        for _, j in kids:
            want = [SEND_PEER_WAIT, SEND_WAIT] if op["send"] else [RECV_GPU_WAIT]
            sizes = [int(x) for x in states.get((j, "args"), [])]
            if abi >= 4 and (states.get(j) != want or not sizes or sizes[0] <= 0 or sizes[0] > op["chunk"] or
                             len(set(sizes)) != 1):
                fail("%s: ProxyStep %d (%s) states %s sizes %s" % (path, j, "send" if op["send"] else "recv",
                                                                   states.get(j), sizes))
            mine = [n for n in nets.values() if n["parent"] == j]
            if op["send"] and abi >= 3 and (len(mine) != 1 or mine[0]["plugin"] != EXAMPLE_NET_ID or
                                            mine[0]["data"] != "example-net-send"):
                fail("%s: send step %d has NetPlugin events %s" % (path, j, mine))
            if not op["send"] and mine:
                fail("%s: receive step %d has NetPlugin events %s" % (path, j, mine))
    ctrls = by(PROXY_CTRL)
    moving = {e["ctx"] for e in proxy_ops.values()}
    per_ctx = sorted(e["ctx"] for e in ctrls.values())
    if per_ctx != sorted(moving):
        fail("%s: ProxyCtrl events of contexts %s, expected one for each of %s" % (path, per_ctx, sorted(moving)))
    for i, e in ctrls.items():
        seen = states.get(i, [])
        # Which states come depends on timing (executors move the network themselves while they
        # wait, and the proxy thread may sleep through a whole job); at least the one at the start.
        if e["parent"] != 0 or (abi >= 4 and (not seen or
                                              not set(seen) <= {CTRL_IDLE, CTRL_ACTIVE, CTRL_SLEEP, CTRL_WAKEUP} or
                                              any(a == b for a, b in zip(seen, seen[1:])))):
            fail("%s: ProxyCtrl event %d (parent %d) states %s" % (path, i, e["parent"], seen))
    for i, n in nets.items():
        if abi >= 4 and (states.get(i) != [NET_UPDATE] or states.get((i, "args")) != ["example-net-sent"]):
            fail("%s: NetPlugin event %d states %s" % (path, i, states.get(i)))
        if n["stop_at"] > steps[n["parent"]]["stop_at"]:
            fail("%s: NetPlugin event %d stopped after its step" % (path, i))
    # The Send and the Recv of the job move 1000 floats to and from the ring neighbours.
    for func, peer, send in (("Send", (rank + 1) % nranks, 1), ("Recv", (rank - 1) % nranks, 0)):
        p2p = [i for i, e in opers.items() if e["func"] == func and e["ctx"] == contexts[0]]
        mine = [i for i, op in proxy_ops.items() if op["parent"] in p2p]
        moved = 0
        for i in mine:
            if proxy_ops[i]["peer"] != peer or proxy_ops[i]["send"] != send:
                fail("%s: the %s's ProxyOp %s" % (path, func, proxy_ops[i]))
            if abi >= 4:
                moved += sum(int(states[(j, "args")][0]) for j, e in steps.items() if e["parent"] == i)
        if len(mine) != 1 or (abi >= 4 and moved != 4000):
            fail("%s: the %s has ProxyOps %s moving %d bytes (expected one, 4000 bytes)" % (path, func, mine, moved))
    # Every collective of the job's communicator that moves a KiB or more sends and receives; of
    # the ring Broadcast from rank 1, rank 1 only sends and the rank before it only receives.
    for i, e in opers.items():
        if e["type"] == COLL and e["count"] >= 1024 and e["ctx"] == contexts[0]:
            kinds = {op["send"] for op in proxy_ops.values() if op["parent"] == i}
            want = {0, 1}
            if e["func"] == "Broadcast" and rank in (e["root"], (e["root"] - 1) % nranks):
                want = {1} if rank == e["root"] else {0}
            if e["func"] == "Broadcast" and e["algo"] != "RING":
                want = kinds if kinds else {0, 1}  # another shape: only some traffic is required
            if kinds != want:
                fail("%s: %s of %d has ProxyOps for %s" % (path, e["func"], e["count"], kinds))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--abi", type=int, required=True)
    for a in ("--plugin", "--job", "--work", "--net-plugin"):
        p.add_argument(a, required=True)
    args = p.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    for mask, tag in ((0xffff, "all"), (COLL, "colls"), (0, "none")):
        logs, _ = run(args, mask, tag)
        if len(logs) != 3:
            fail("mask %d: %d plugin logs, expected one per rank" % (mask, len(logs)))
        for path, lines in logs:
            check_rank(path, lines, args.abi, 3, mask)
    # Every peer over the network, through the example plugin (ABI v12: it gets the profiler callback).
    logs, _ = run(args, 0xffff, "net", extra_env={"NCCL_SHM_DISABLE": "1", "NCCL_NET_PLUGIN": args.net_plugin})
    if len(logs) != 3:
        fail("network run: %d plugin logs, expected one per rank" % len(logs))
    for path, lines in logs:
        check_rank(path, lines, args.abi, 3, 0xffff)
        check_proxy(path, lines, args.abi, 3)
    print("check_profiler: v%d ok" % args.abi)


if __name__ == "__main__":
    main()
