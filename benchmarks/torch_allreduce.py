"""torch.distributed all_reduce: the weft backend against gloo, in one run.

  PYTHONPATH=<build>/python /usr/bin/python3 -m torch.distributed.run --standalone \
      --nproc_per_node 2 benchmarks/torch_allreduce.py [--max-bytes 64M] [--reps 5]

Both process groups hold the same ranks. For each message size (float32, 8 B to 64 MiB, by
factors of 8) the two backends take turns, rep after rep, so a slow moment of the machine hits
both alike; each rep times a batch of calls after a barrier on the same group. Rank 0 prints the
median time per call of each and gloo's time over weft's (above 1: weft is faster).
"""

import argparse
import statistics
import time

import torch
import torch.distributed as dist

import weft.torch  # noqa: F401  (registers "weft")


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def calls_for(nbytes):
    """Enough calls that one batch takes a few milliseconds or more, and at least 3."""
    return max(3, min(200, (4 << 20) // max(nbytes, 1)))


def time_batch(tensor, group, calls):
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(calls):
        dist.all_reduce(tensor, group=group)
    return (time.perf_counter() - start) / calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-bytes", default="8")
    ap.add_argument("--max-bytes", default="64M")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    groups = {"weft": dist.new_group(backend="weft"), "gloo": dist.new_group(backend="gloo")}
    if rank == 0:
        print(f"all_reduce float32 SUM, {n} ranks, median of {args.reps} reps (us per call)")
        print(f"{'bytes':>10} {'weft':>12} {'gloo':>12} {'gloo/weft':>10}")
    sizes = []
    nbytes, last = parse_size(args.min_bytes), parse_size(args.max_bytes)
    while nbytes < last:
        sizes.append(nbytes)
        nbytes *= 8
    sizes.append(last)
    for nbytes in sizes:
        tensor = torch.ones(max(1, nbytes // 4))
        calls = calls_for(nbytes)
        times = {name: [] for name in groups}
        for name, group in groups.items():  # one untimed warm-up call each
            dist.all_reduce(tensor, group=group)
        for _ in range(args.reps):
            for name, group in groups.items():
                times[name].append(time_batch(tensor, group, calls))
        # Every rank's view: the slowest rank sets the pace of a collective.
        med = torch.tensor([statistics.median(times["weft"]), statistics.median(times["gloo"])], dtype=torch.float64)
        dist.all_reduce(med, op=dist.ReduceOp.MAX, group=groups["gloo"])
        if rank == 0:
            w, g = med[0].item() * 1e6, med[1].item() * 1e6
            print(f"{nbytes:>10} {w:>12.1f} {g:>12.1f} {g / w:>10.2f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
