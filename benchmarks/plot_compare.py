#!/usr/bin/env python3
"""The comparison as curves: bus bandwidth against message size, Weft beside Open MPI and MPICH over
shared memory (a run_compare.sh results directory) and, optionally, beside Open MPI's TCP transport
and gloo over loopback TCP (a run_net_compare.sh results directory).

usage: plot_compare.py --shm DIR [--net DIR] [-o FILE.png] [--csv FILE.csv] [--note TEXT]

One panel per collective and rank count found in the shared-memory run (out of place and in place
for Weft, the MPIs' one buffer), one more for TCP. Every point is the run's median time per call,
turned into busbw with nccl-tests' factors, so the curves are the same figures as the run's
summary.md. The title carries the run's date, the machine (from DIR/env.txt) and the cache-line
handoff measured in the run: on a slowed host every cross-core figure is slower, and the title says
how slow. --csv writes each plotted point (panel, series, bytes, time in us, busbw in GB/s).
Needs Debian's python3-matplotlib.
"""
import argparse
import csv
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_summary as cs  # noqa: E402  (the run's parser, shared with summary.md)

# One colour per library in every panel (AlltoAll has no in-place series, and the TCP panel no MPICH).
COLORS = {"Weft out of place": "C0", "Weft in place": "C1", "Open MPI": "C2", "MPICH": "C3", "Weft": "C0",
          "Open MPI TCP": "C2", "gloo ring": "C4"}
NAMES = {"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter",
         "broadcast": "Broadcast", "reduce": "Reduce", "alltoall": "AlltoAll"}


def shm_panels(r):
    """[(title, [(series, style, [(bytes, us, GB/s)])], memcpy GB/s or None)] in OPS x ranks order."""
    ranks = sorted({k[1] for k in list(r.weft_oop) + list(r.mpi) + list(r.mpich)})
    one_thread = cs.med(r.memcpy.get(1, []))
    panels = []
    for op in cs.OPS:
        for n in ranks:
            series = []
            for name, style, src in (("Weft out of place", "-o", r.weft_oop), ("Weft in place", "--o", r.weft_ip),
                                     ("Open MPI", "-s", r.mpi), ("MPICH", "-^", r.mpich)):
                pts = []
                for (o, k, size), times in sorted(src.items(), key=lambda kv: kv[0][2]):
                    t = cs.med(times)
                    if o == op and k == n and t:
                        pts.append((size, t, cs.busbw(op, n, size, t)))
                if pts:
                    series.append((name, style, pts))
            if series:
                panels.append((f"{NAMES[op]}, {n} ranks, shared memory", series, one_thread))
    return panels


def net_panel(d):
    """The run_net_compare.sh table (its summary.md) as one panel; the duplex bound's half as a line."""
    text = open(os.path.join(d, "summary.md"), errors="replace").read()
    m = re.search(r"duplex bound \(sum of both directions\): ([\d.]+) GB/s", text)
    bound = float(m.group(1)) / 2 if m else None
    cols = {"Weft": (1, "-o"), "Open MPI TCP": (3, "-s"), "gloo ring": (5, "-d")}
    series = {name: [] for name in cols}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 7 or not cells[0].isdigit():
            continue
        size = int(cells[0])
        for name, (col, _) in cols.items():
            try:
                t = float(cells[col])
            except ValueError:
                continue
            if t == t and t > 0:  # nan: that library did not run
                series[name].append((size, t, cs.busbw("allreduce", 2, size, t)))
    out = [(name, cols[name][1], pts) for name, pts in series.items() if pts]
    return ("AllReduce, 2 ranks, TCP over loopback", out, bound)


def machine(d):
    env = {}
    path = os.path.join(d, "env.txt")
    if os.path.exists(path):
        for line in open(path):
            key, _, value = line.partition(":")
            env.setdefault(key.strip(), value.strip())
    date = env.get("date", "")[:10] or "date unknown"
    cpu = env.get("Model name", "CPU unknown")
    cores = env.get("CPU(s)", "?")
    return f"{date}, {cpu}, {cores} cores"


def draw(panels, title, out_png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = 2
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 3.9 * rows), squeeze=False)
    for ax, (name, series, line) in zip(axes.flat, panels):
        sizes = sorted({p[0] for _, _, pts in series for p in pts})
        for label, style, pts in series:
            ax.plot([p[0] for p in pts], [p[2] for p in pts], style, label=label, color=COLORS.get(label),
                    markersize=3.5, linewidth=1.3)
        if line:
            ref = "memcpy, 1 thread" if "shared" in name else "loopback duplex bound / 2"
            ax.axhline(line, color="gray", linestyle=":", linewidth=1.2, label=ref)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sizes[::2] if len(sizes) > 8 else sizes
        ax.set_xticks(ticks)
        ax.set_xticklabels([cs.hsize(s) for s in ticks], fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.set_title(name, fontsize=9)
        ax.set_ylabel("busbw GB/s (higher is better)", fontsize=7)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=6.5, loc="upper left")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(out_png, dpi=90)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shm", required=True, help="run_compare.sh results directory")
    ap.add_argument("--net", help="run_net_compare.sh results directory")
    ap.add_argument("-o", "--out", default="compare.png")
    ap.add_argument("--csv", help="also write the plotted points here")
    ap.add_argument("--note", default="", help="a line added to the title")
    a = ap.parse_args()
    r = cs.load(a.shm)
    panels = shm_panels(r)
    if a.net:
        panels.append(net_panel(a.net))
    if not panels:
        sys.exit(f"plot_compare.py: no figures in {a.shm}/raw" + (f" or {a.net}/summary.md" if a.net else ""))
    handoff = cs.med(r.pingpong)
    others = "Open MPI, MPICH and gloo" if a.net else "Open MPI and MPICH"
    title = f"Weft vs {others}: medians of {len({x for s in r.runs.values() for x in s})} " \
            f"interleaved repetitions; {machine(a.shm)}"
    if handoff is not None:
        title += f"; cache-line handoff {handoff:.2f} us in this run (about 0.06 on a quiet host)"
    if a.note:
        title += "\n" + a.note
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["panel", "series", "bytes", "time_us", "busbw_gbps"])
            for name, series, _ in panels:
                for label, _, pts in series:
                    for size, t, bw in pts:
                        w.writerow([name, label, size, f"{t:.6g}", f"{bw:.6g}"])
    draw(panels, title, a.out)
    print(f"plot_compare.py: {len(panels)} panels -> {a.out}\n{title}")


if __name__ == "__main__":
    main()
