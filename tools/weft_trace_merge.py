#!/usr/bin/env python3
"""Merges the per-rank trace files of WEFT_TRACE_FILE into one Chrome/Perfetto trace.

Each rank writes its events on its own CLOCK_MONOTONIC, with the offset to rank 0's clock that
Weft estimated at communicator creation ("weft"."ranks"[i]."clockOffsetUs"). This tool adds that
offset to every event of the rank, then moves the whole trace so that it starts at 0, and writes
one file with one process per rank, to open in ui.perfetto.dev or chrome://tracing.

  python3 tools/weft_trace_merge.py -o merged.json FILE_OR_DIR...

A directory stands for the *.json files in it. The merged file's "weft" key lists the ranks (with
the offsets applied), the sources and "originUs", the moment on rank 0's clock that became 0; a
merged file can itself be merged again. Exit status 2 names the file that could not be used.
"""
import argparse
import glob
import json
import os
import sys


class TraceError(Exception):
    """A file that cannot be merged; the message names it."""


def expand(args):
    """The files the arguments name: directories give their *.json, quoted globs are expanded."""
    paths = []
    for a in args:
        if os.path.isdir(a):
            paths += sorted(glob.glob(os.path.join(a, "*.json")))
        elif not os.path.exists(a) and glob.has_magic(a):
            paths += sorted(glob.glob(a))
        else:
            paths.append(a)  # a missing file fails in load(), with its name
    seen, unique = set(), []
    for p in paths:  # a file named twice (say by a directory and a glob) would double its events
        key = os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def load(path):
    """The parsed trace of path, checked for the shape merge() relies on."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror or e}")
    except (ValueError, UnicodeDecodeError) as e:
        raise TraceError(f"{path}: not valid JSON: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceError(f"{path}: no traceEvents list (not a Weft trace file)")
    for i, ev in enumerate(doc["traceEvents"]):
        if not isinstance(ev, dict):
            raise TraceError(f"{path}: traceEvents[{i}] is not an object")
        for key in ("ts", "dur"):
            if key in ev and (not isinstance(ev[key], (int, float)) or isinstance(ev[key], bool)):
                raise TraceError(f"{path}: traceEvents[{i}] has a non-numeric {key}")
    return doc


def rank_key(pid):
    """Sorts ranks numerically, and any pid that is not a number after them."""
    return (0, pid, "") if isinstance(pid, int) else (1, 0, str(pid))


def merge(paths, warn=None):
    """The merged trace (a dict) of the files in paths, in the format the module docstring gives."""
    warn = warn or (lambda msg: print(f"weft_trace_merge: warning: {msg}", file=sys.stderr))
    ranks, owner = {}, {}  # rank -> its "ranks" entry, and the file it came from
    shifted, meta = [], {}
    unit = None
    dropped = {}  # (host, pid) -> count: the count is the process's, repeated in each of its files
    for path in paths:
        doc = load(path)
        info = doc.get("weft")
        if not isinstance(info, dict):
            warn(f"{path}: no \"weft\" key; its clocks are taken as rank 0's (offset 0)")
            info = {}
        unit = unit or doc.get("displayTimeUnit")
        who = (info.get("host"), info.get("pid"), path if info.get("pid") is None else None)
        dropped[who] = max(dropped.get(who, 0), info.get("droppedEvents", 0) or 0)
        offsets = {}
        for entry in info.get("ranks", []):
            if not isinstance(entry, dict) or "rank" not in entry:
                raise TraceError(f"{path}: a \"ranks\" entry without a rank: {entry!r}")
            r = entry["rank"]
            off = entry.get("clockOffsetUs", 0.0)
            if r in ranks and ranks[r].get("clockOffsetUs", 0.0) != off:
                raise TraceError(f"{path}: rank {r} has clockOffsetUs {off}, but {owner[r]} gives it "
                                 f"{ranks[r].get('clockOffsetUs', 0.0)}: are these files of one run?")
            ranks.setdefault(r, entry)
            owner.setdefault(r, path)
            offsets[r] = off
        # A merged file's events are already on rank 0's clock, less its origin.
        base = info.get("originUs")
        unlisted = set()
        for ev in doc["traceEvents"]:
            pid = ev.get("pid", 0)
            if ev.get("ph") == "M" or "ts" not in ev:
                # One of each metadata event per (rank, thread): several files may name a rank.
                tid = ev.get("tid") if str(ev.get("name", "")).startswith("thread") else None
                meta.setdefault((ev.get("name"), pid, tid), ev)
                continue
            if base is not None:
                off = base
            elif pid in offsets:
                off = offsets[pid]
            else:
                off = 0.0
                unlisted.add(pid)
            ev = dict(ev)
            ev["ts"] = ev["ts"] + off
            shifted.append(ev)
        if unlisted and info:
            warn(f"{path}: events of rank(s) {sorted(unlisted, key=rank_key)} not in its \"ranks\" "
                 f"list; their clocks are taken as rank 0's")
    origin = min((ev["ts"] for ev in shifted), default=0.0)
    for ev in shifted:
        # Rounded to the nanosecond the trace displays, so sums leave no noise digits in the JSON.
        ev["ts"] = round(ev["ts"] - origin, 3)
    pids = {ev.get("pid", 0) for ev in shifted} | set(ranks) | {k[1] for k in meta}
    for pid in pids:  # every rank gets a named process, in rank order in the viewers
        meta.setdefault(("process_name", pid, None),
                        {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"rank {pid}"}})
        if isinstance(pid, int):
            meta.setdefault(("process_sort_index", pid, None),
                            {"name": "process_sort_index", "ph": "M", "pid": pid,
                             "args": {"sort_index": pid}})
    # Rank, then its metadata, then time; an enclosing event (the longer one) before those it holds.
    events = sorted(list(meta.values()) + shifted,
                    key=lambda ev: (rank_key(ev.get("pid", 0)), ev.get("ph") != "M", ev.get("ts", 0.0),
                                    -ev.get("dur", 0)))
    return {
        "traceEvents": events,
        "displayTimeUnit": unit or "ns",
        "weft": {"ranks": [ranks[r] for r in sorted(ranks, key=rank_key)],
                 "sources": list(paths), "originUs": origin,
                 "droppedEvents": sum(dropped.values())},
    }


def summary(merged):
    """A few lines on what merged holds, for the user to check the merge did what they meant."""
    per_rank = {}
    end = 0.0
    for ev in merged["traceEvents"]:
        if "ts" in ev:
            per_rank[ev.get("pid", 0)] = per_rank.get(ev.get("pid", 0), 0) + 1
            end = max(end, ev["ts"] + ev.get("dur", 0))
    info = merged["weft"]
    lines = [f"{len(info['sources'])} file(s), {len(per_rank)} rank(s), "
             f"{sum(per_rank.values())} events over {end / 1000:.3f} ms"]
    counts = [(r, per_rank[r]) for r in sorted(per_rank, key=rank_key)]
    if len(counts) <= 16:
        lines.append("events per rank: " + " ".join(f"{r}:{n}" for r, n in counts))
    else:
        lo, hi = min(counts, key=lambda c: c[1]), max(counts, key=lambda c: c[1])
        lines.append(f"events per rank: fewest {lo[1]} (rank {lo[0]}), most {hi[1]} (rank {hi[0]})")
    unc = [e.get("clockUncertaintyUs", 0.0) for e in info["ranks"]]
    # Events of two ranks closer than this may be drawn in the wrong order.
    lines.append(f"clock uncertainty: up to {max(unc, default=0.0):.3f} us")
    if info.get("droppedEvents"):
        lines.append(f"dropped events: {info['droppedEvents']} (the ranks' trace buffers were full)")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True, help="the merged trace to write")
    ap.add_argument("files", nargs="+", help="per-rank trace files, or directories of them")
    args = ap.parse_args(argv)
    paths = expand(args.files)
    if not paths:
        print("weft_trace_merge: error: no trace files in " + " ".join(args.files), file=sys.stderr)
        return 2
    try:
        merged = merge(paths)
    except TraceError as e:
        print(f"weft_trace_merge: error: {e}", file=sys.stderr)
        return 2
    try:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(merged, f, separators=(",", ":"))
    except OSError as e:
        print(f"weft_trace_merge: error: {args.output}: cannot write: {e.strerror or e}", file=sys.stderr)
        return 2
    print(summary(merged), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
