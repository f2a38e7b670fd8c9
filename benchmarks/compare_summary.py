#!/usr/bin/env python3
"""Tables for run_compare.sh: Weft's perf tools vs Open MPI and MPICH, medians over repetitions.

usage: compare_summary.py RESULTS_DIR > summary.md

Reads RESULTS_DIR/raw/*.repN.txt (Weft tool output in nccl-tests format; mpi_allreduce_bench,
mpi_reference, mem_bench and reduce_passes output) and RESULTS_DIR/load.log. For every
(collective, ranks, size) it takes the median time per operation over the repetitions, recomputes
busbw from that median with nccl-tests' factors (allreduce 2(n-1)/n; allgather, reducescatter,
alltoall (n-1)/n; broadcast, reduce 1) and prints Weft next to Open MPI and MPICH, with the ratio
to the better of the two and Weft's out-of-place time against its in-place time.
"""
import glob
import os
import re
import statistics
import sys
from collections import defaultdict
from types import SimpleNamespace

rep_re = re.compile(r"^(.*)\.rep(\d+)\.txt$")
OPS = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall")


def load(d):
    """Parses a run_compare.sh results directory; returns its figures as a SimpleNamespace (see the
    fields at the end). Also used by plot_compare.py."""
    weft_oop = defaultdict(list)   # (op, n, size) -> [time_us]
    weft_ip = defaultdict(list)
    weft_wrong = defaultdict(int)  # (op, n) -> wrong elements seen
    mpi = defaultdict(list)        # Open MPI: (op, n, size) -> [time_us]
    mpich = defaultdict(list)      # MPICH, the same
    mpi_bad = set()
    memcpy = defaultdict(list)     # threads -> [payload GB/s, best of the run]
    pingpong = []
    passes = defaultdict(list)     # "in" / "out" / "ratio" -> [value per run] (reduce_passes, 2 threads)
    runs = defaultdict(set)        # config -> reps found

    for f in sorted(glob.glob(os.path.join(d, "raw", "*.txt"))):
        m = rep_re.match(os.path.basename(f))
        if not m:
            continue
        cfg, rep = m.group(1), int(m.group(2))
        runs[cfg].add(rep)
        text = open(f, errors="replace").read()
        w = re.match(r"weft_(" + "|".join(OPS) + r")_n(\d+)$", cfg)
        if w:
            op, n = w.group(1), int(w.group(2))
            for line in text.splitlines():
                x = line.split()
                if line.startswith("#") or len(x) != 13 or not x[0].isdigit():
                    continue
                size = int(x[0])
                if size == 0:
                    continue
                weft_oop[(op, n, size)].append(float(x[5]))
                if x[9] != "N/A":  # in-place AlltoAll is not defined
                    weft_ip[(op, n, size)].append(float(x[9]))
                for k in (8, 12):
                    if x[k] not in ("0", "N/A"):
                        weft_wrong[(op, n)] += int(float(x[k]))
            continue
        w = re.match(r"(mpi_shm|mpi_ref|mpich_shm)_n(\d+)$", cfg)
        if w:
            dest = mpich if w.group(1) == "mpich_shm" else mpi
            for line in text.splitlines():
                x = line.split()
                if len(x) == 8 and x[0] in OPS and x[1].isdigit():
                    key = (x[0], int(x[1]), int(x[2]))
                    dest[key].append(float(x[4]))
                    if x[7] not in ("ok", "-"):
                        mpi_bad.add((w.group(1),) + key)
            continue
        if cfg == "mem":
            for line in text.splitlines():
                x = line.split()
                if len(x) == 7 and x[0] == "memcpy":
                    memcpy[int(x[1])].append(float(x[3]))
                elif x and x[0] == "shm_pingpong" and "one_way_us=" in line:
                    pingpong.append(float(line.split("one_way_us=")[1]))
        if cfg == "passes":
            m = re.search(r"^sum_pass .*in_place_gbps=([\d.]+) out_of_place_gbps=([\d.]+) ratio=([\d.]+)", text, re.M)
            if m:
                for key, value in zip(("in", "out", "ratio"), m.groups()):
                    passes[key].append(float(value))

    foreign = {}
    logf = os.path.join(d, "load.log")
    failed = []
    if os.path.exists(logf):
        for line in open(logf):
            m = re.search(r"^\S+ (\S+)\s+rc=(\d+) .*foreign_cpu=([\d.]+)cores", line)
            if m:
                foreign[m.group(1)] = float(m.group(3))
                if m.group(2) != "0":
                    failed.append(f"{m.group(1)} (rc={m.group(2)})")
    return SimpleNamespace(weft_oop=weft_oop, weft_ip=weft_ip, weft_wrong=weft_wrong, mpi=mpi, mpich=mpich,
                           mpi_bad=mpi_bad, memcpy=memcpy, pingpong=pingpong, passes=passes, runs=runs,
                           foreign=foreign, failed=failed)


def med(v):
    return statistics.median(v) if v else None


def spread(v):
    if not v or len(v) < 2:
        return None
    return (max(v) - min(v)) / statistics.median(v) * 100


def busf(op, n):
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    return 1.0 if op in ("broadcast", "reduce") else (n - 1) / n


def hsize(b):
    for u, s in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= s and b % s == 0:
            return f"{b // s} {u}"
    return f"{b} B"


def tfmt(t):
    return f"{t:.2f}" if t < 10 else (f"{t:.1f}" if t < 1000 else f"{t:.0f}")


def busbw(op, n, size, t_us):
    """nccl-tests' bus bandwidth in GB/s of one call of `size` bytes taking t_us."""
    return size / (t_us * 1e-6) / 1e9 * busf(op, n)


def cell(op, n, size, t):
    if t is None:
        return ""
    return f"{tfmt(t)} us / {busbw(op, n, size, t):.3g}"


def main(d):
    r = load(d)
    weft_oop, weft_ip, weft_wrong, mpi, mpich = r.weft_oop, r.weft_ip, r.weft_wrong, r.mpi, r.mpich
    mpi_bad, memcpy, pingpong, passes, runs = r.mpi_bad, r.memcpy, r.pingpong, r.passes, r.runs
    foreign, failed = r.foreign, r.failed
    print(f"# Weft vs Open MPI{' and MPICH' if mpich else ''} (shared memory), {d}\n")
    envf = os.path.join(d, "env.txt")
    if os.path.exists(envf):
        print("```")
        print(open(envf).read().rstrip())
        print("```\n")

    reps = sorted({r for s in runs.values() for r in s})
    print(f"Repetitions: {len(reps)}. Every figure is the median over repetitions of the time per operation; "
          "busbw is recomputed from that median (GB/s = 1e9 B/s). Weft: the tools' out-of-place and in-place "
          "columns, max over ranks (-a 3), same buffer every iteration (--rotate 0). Open MPI: "
          "mpi_allreduce_bench for allreduce and allgather, benchmarks/mpi_reference.cc for the others "
          "(vader shared memory); MPICH: mpi_reference.cc; both max over ranks. Ratio = the better MPI's "
          "time / Weft's out-of-place time (> 1: Weft is faster); oop/ip = Weft's out-of-place time / "
          "its in-place time.\n")
    if foreign:
        vals = sorted(foreign.values())
        busy = [k for k, v in foreign.items() if v > 0.15]
        print(f"Foreign CPU load during the runs (cores, from load.log): median {statistics.median(vals):.2f}, "
              f"max {vals[-1]:.2f}" + (f"; busy runs (> 0.15): {', '.join(sorted(busy))}" if busy else "") + "\n")
    print("Checks: Weft " + ("all validated, 0 wrong elements" if not any(weft_wrong.values()) else
                             f"WRONG ELEMENTS: {dict(weft_wrong)}") +
          "; MPI " + ("all ok" if not mpi_bad else f"FAILED: {sorted(mpi_bad)}") + "." +
          (f" Failed runs: {', '.join(failed)}." if failed else "") + "\n")

    # Every rank count the run measured (run_compare.sh --ranks), in order.
    RANKS = sorted({k[1] for k in list(weft_oop) + list(mpi) + list(mpich)})

    # Key figures
    KEY = [8, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
    have_key = [s for s in KEY if any(k[2] == s for k in list(weft_oop) + list(mpi))]
    if have_key:
        print("## Key figures: allreduce float32 sum, time / busbw GB/s (median)\n")
        print("| ranks | library | " + " | ".join(hsize(s) for s in have_key) + " |")
        print("|---|---|" + "---:|" * len(have_key))
        for n in RANKS:
            for name, src in (("Weft", weft_oop), ("Open MPI", mpi), ("MPICH", mpich)):
                cells = [cell("allreduce", n, s, med(src.get(("allreduce", n, s), []))) for s in have_key]
                if any(cells):
                    print(f"| {n} | {name} | " + " | ".join(cells) + " |")
            ratios = []
            for s in have_key:
                tw = med(weft_oop.get(("allreduce", n, s), []))
                tm = [t for t in (med(mpi.get(("allreduce", n, s), [])), med(mpich.get(("allreduce", n, s), []))) if t]
                ratios.append(f"{min(tm) / tw:.2f}x" if tw and tm else "")
            if any(ratios):
                print(f"| {n} | ratio (better MPI's time / Weft time) | " + " | ".join(ratios) + " |")
        print()

    WHAT = {"allreduce": "the buffer", "allgather": "the gathered total", "reducescatter": "the input total",
            "broadcast": "the buffer", "reduce": "the buffer", "alltoall": "each rank's send buffer"}
    for op in OPS:
        for n in RANKS:
            sizes = sorted({k[2] for k in list(weft_oop) + list(mpi) + list(mpich) if k[0] == op and k[1] == n})
            if not sizes:
                continue
            summed = op in ("allreduce", "reducescatter", "reduce")
            print(f"## {op}, {n} ranks (float32{' sum' if summed else ''}; size = {WHAT[op]}): "
                  "median time / busbw GB/s\n")
            print("| size | Weft out-of-place | Weft in-place | Open MPI | MPICH | ratio to the better MPI | oop/ip "
                  "| spread % Weft / MPI |")
            print("|---:|---:|---:|---:|---:|---:|---:|---:|")
            for s in sizes:
                wo, wi = weft_oop.get((op, n, s), []), weft_ip.get((op, n, s), [])
                mm, mc = mpi.get((op, n, s), []), mpich.get((op, n, s), [])
                tw, ti, tm, tc = med(wo), med(wi), med(mm), med(mc)
                best = min(t for t in (tm, tc, float("inf")) if t)
                ratio = f"{best / tw:.2f}x" if tw and best != float("inf") else ""
                oi = f"{tw / ti:.2f}" if tw and ti else ""
                sw, sm = spread(wo), spread(mm)
                sp = f"{sw:.0f} / {sm:.0f}" if sw is not None and sm is not None else ""
                print(f"| {hsize(s)} | {cell(op, n, s, tw)} | {cell(op, n, s, ti)} | {cell(op, n, s, tm)} | "
                      f"{cell(op, n, s, tc)} | {ratio} | {oi} | {sp} |")
            print()

    if memcpy or pingpong or passes["ratio"]:
        print("## Physical limits (mem_bench, median over repetitions)\n")
        for nt in sorted(memcpy):
            print(f"- memcpy 64 MiB, {nt} thread(s): {med(memcpy[nt]):.2f} GB/s payload (best pass of each run)")
        if pingpong:
            print(f"- shared cache line handoff between two processes: {med(pingpong):.3f} us one way")
        if passes["ratio"]:
            print(f"- float32 sum pass over 64 MiB per thread, 2 threads at once (Weft's host kernel, "
                  f"reduce_passes): in place {med(passes['in']):.2f} GB/s, out of place {med(passes['out']):.2f} GB/s, "
                  f"out-of-place/in-place {med(passes['ratio']):.3f}")
        print("\nFor scale: an allreduce over shared memory moves each byte at least about twice through "
              "memory, so its algbw is bounded by roughly half the memcpy rate.")


if __name__ == "__main__":
    main(sys.argv[1])
