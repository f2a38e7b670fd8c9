#!/usr/bin/env python3
"""The table of benchmarks/guard.sh: key figures from the comparison scripts' summaries.

usage: guard_summary.py GUARD_DIR > summary.md

Reads GUARD_DIR/compare/summary.md (run_compare.sh), GUARD_DIR/scale/summary.md (run_compare.sh
with 8 and 16 ranks), GUARD_DIR/net/summary.md (run_net_compare.sh), GUARD_DIR/netns/summary.md
(run_netns_compare.sh, when it ran) and GUARD_DIR/load/summary.md (run_load_compare.sh). Each row
is one figure: Weft's value, the reference measured in the same run, their ratio with > 1 meaning Weft is ahead,
and the goal that ratio is held to.
"""
import os
import re
import sys

d = sys.argv[1]
rows = []  # (figure, weft, reference, ratio, goal)


def read(name):
    p = os.path.join(d, name, "summary.md")
    return open(p, errors="replace").read() if os.path.exists(p) else None


def us(text):
    """'0.76 us / 0.0105' -> (0.76, 0.0105); times may be in us or ms."""
    m = re.match(r"\s*([\d.]+) (us|ms)(?: / ([\d.]+))?", text)
    if not m:
        return None, None
    t = float(m.group(1)) * (1000 if m.group(2) == "ms" else 1)
    return t, float(m.group(3)) if m.group(3) else None


def fmt_us(t):
    return f"{t:.2f} us" if t < 1000 else f"{t / 1000:.2f} ms"


def compare_rows(text, scale):
    """Rows from a run_compare.sh summary. scale: the oversubscribed run (8 and 16 ranks on the
    machine's cores), held to Open MPI's figure with the same oversubscription, without the 2-rank
    bounds."""
    memcpy1 = None
    m = re.search(r"memcpy 64 MiB, 1 thread\(s\): ([\d.]+) GB/s", text)
    if m:
        memcpy1 = float(m.group(1))
    # What out of place keeps of in place in one sum pass of Weft's kernel over the same bytes, two
    # threads at once: memory's own share of the gap, which no algorithm avoids.
    m = re.search(r"sum pass over 64 MiB per thread, 2 threads .* out-of-place/in-place ([\d.]+)", text)
    pass_ratio = float(m.group(1)) if m else None
    section = None
    for line in text.splitlines():
        h = re.match(r"## (allreduce|allgather), (\d+) ranks", line)
        if h:
            section = (h.group(1), int(h.group(2)))
            continue
        if line.startswith("## "):
            section = None
        if section is None or not line.startswith("| ") or line.startswith("| size"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 5 or not re.match(r"\d+ (B|KiB|MiB)$", cells[0]):
            continue
        op, n = section
        oop, oop_bw = us(cells[1])
        ip, _ = us(cells[2])
        # The better of Open MPI and MPICH (the MPICH column is empty when it is not installed).
        refs = [(t, name) for t, name in ((us(cells[3])[0], "Open MPI"), (us(cells[4])[0], "MPICH")) if t]
        if oop is None or not refs:
            continue
        ref, ref_name = min(refs)
        if scale:
            rows.append((f"oversubscribed, shm {op} {n} ranks on {cores} cores {cells[0]}", fmt_us(oop),
                         f"{ref_name} {fmt_us(ref)}", ref / oop, 1.0))
            continue
        rows.append((f"shm {op} {n} ranks {cells[0]}", fmt_us(oop), f"{ref_name} {fmt_us(ref)}", ref / oop, 1.2))
        if cells[0] == "64 MiB" and ip is not None:
            rows.append((f"shm {op} {n} ranks 64 MiB out-of-place vs in-place", fmt_us(oop), f"in-place {fmt_us(ip)}",
                         ip / oop, 0.9))
            if n == 2 and op == "allreduce" and pass_ratio:
                rows.append(("shm allreduce 2 ranks 64 MiB out-of-place/in-place vs a sum pass's", f"{ip / oop:.2f}",
                             f"sum pass {pass_ratio:.2f}", ip / oop / pass_ratio, 1.0))
        if cells[0] == "64 MiB" and n == 2 and memcpy1 and oop_bw:
            goal = 0.5 if op == "allreduce" else 0.8
            rows.append((f"shm {op} 2 ranks 64 MiB busbw vs memcpy (1 thread)", f"{oop_bw:.2f} GB/s",
                         f"memcpy {memcpy1:.2f} GB/s", oop_bw / memcpy1, goal))
        if cells[0] == "8 B" and op == "allreduce" and n == 2:
            rows.append(("shm allreduce 2 ranks 8 B vs 0.30 us", fmt_us(oop), "0.30 us", 0.30 / oop, 1.0))


cores = os.cpu_count()
compare = read("compare")
if compare:
    compare_rows(compare, scale=False)
scale = read("scale")
if scale:
    compare_rows(scale, scale=True)

def tcp_rows(text, ncells, label):
    """Rows from a TCP comparison's table (run_net_compare.sh: 9 cells, run_netns_compare.sh: 8):
    bytes, Weft us, busbw, Open MPI us, busbw, gloo us, ... 8 B is held to Open MPI's latency, the
    rest to 1.2x the better of Open MPI and gloo. Yields each row's cells."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != ncells or not cells[0].isdigit():
            continue
        size = int(cells[0])
        weft, mpi, gloo = float(cells[1]), float(cells[3]), float(cells[5])
        if size <= 8:
            rows.append((f"{label} {size} B", fmt_us(weft), f"Open MPI {fmt_us(mpi)}", mpi / weft, 1.0))
        else:
            best = min(x for x in (mpi, gloo) if x == x)
            rows.append((f"{label} {size} B", fmt_us(weft), f"best other {fmt_us(best)}", best / weft, 1.2))
        yield cells


net = read("net")
if net:
    for cells in tcp_rows(net, 9, "tcp allreduce 2 ranks"):
        if int(cells[0]) == 64 << 20:
            rows.append(("tcp allreduce 64 MiB vs loopback duplex bound", f"{cells[2]} GB/s", "bound", float(cells[8]),
                         0.8))
netns = read("netns")
if netns:
    for _ in tcp_rows(netns, 8, "2 hosts x 2 ranks allreduce"):
        pass

load = read("load")
if load:
    transport = None
    for line in load.splitlines():
        h = re.match(r"## (shm|tcp)", line)
        if h:
            transport = h.group(1)
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if transport is None or len(cells) != 5 or not cells[0].isdigit():
            continue
        weft, _ = us(cells[1])
        ref, _ = us(cells[2])
        if weft is None or ref is None:
            continue
        rows.append((f"under load, {transport} allreduce 2 ranks {cells[0]} B", fmt_us(weft), f"Open MPI {fmt_us(ref)}",
                     ref / weft, 1.0))

print("# Weft's key figures (benchmarks/guard.sh)\n")
print("Ratio > 1: Weft is ahead of the reference; goal: the ratio it is held to.\n")
print("| figure | Weft | reference | ratio | goal | meets |\n|---|---:|---:|---:|---:|---|")
for fig, weft, ref, ratio, goal in rows:
    print(f"| {fig} | {weft} | {ref} | {ratio:.2f}x | {goal:.2f}x | {'yes' if ratio >= goal else 'no'} |")
met = sum(1 for r in rows if r[3] >= r[4])
print(f"\n{met} of {len(rows)} figures meet their goal.")
# The host under a VM moves its vCPUs: the same run can find a cache line's trip between two
# cores 4x slower than usual, and every figure that crosses cores slows with it (Weft's and the
# references' alike, but not by the same factor). mem_bench measured the trip at the start of each
# repetition of the shared-memory comparison (the median is shown); the host can change mid-run.
m = re.search(r"shared cache line handoff between two processes: ([\d.]+) us", compare or "")
if m:
    handoff = float(m.group(1))
    print(f"\nCache-line handoff between two processes, as measured in this run: {handoff:.3f} us one way.", end="")
    if handoff > 0.15:
        print(" That is a slowed host (about 0.06 us when quiet on the 2-core development VM): the"
              " cross-core figures of this run are not comparable with a quiet run's; run it again.")
    else:
        print()
missing = [n for n in ("compare", "scale", "net", "netns", "load") if read(n) is None]
if missing:
    print(f"\nNo summary from: {', '.join(missing)} (see its log in {d}).")
