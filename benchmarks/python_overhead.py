"""What the Python layer adds to an 8-byte AllReduce: weft.Communicator.all_reduce against the
same ncclAllReduce called from a C loop, in one run.

  WEFT_DEVICE=host PYTHONPATH=<build>/python mpirun -n 2 /usr/bin/python3 \
      benchmarks/python_overhead.py [--iters 5000] [--rounds 21]

The C side is a real C++ loop of ncclAllReduce calls inside the extension (weft._weft's
_c_all_reduce_loop: the GIL released, the same communicator, arrays and arguments). Rounds
alternate which side runs first, so a slow moment of the machine hits both alike; each round
times iters calls of each, every rank running the same sequence. Rank 0 prints the median time
per call of each side and the difference, against the 2 us budget (docs/python.md).
"""

import argparse
import statistics
import time

import numpy as np

import weft

BUDGET_US = 2.0


def python_loop(comm, send, recv, iters):
    start = time.perf_counter_ns()
    for _ in range(iters):
        comm.all_reduce(send, recv)
    return time.perf_counter_ns() - start


def c_loop(comm, send, recv, iters):
    return weft._weft._c_all_reduce_loop(comm, send, recv, iters)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iters", type=int, default=5000, help="calls per side per round")
    parser.add_argument("--rounds", type=int, default=21, help="rounds (medians are taken over them)")
    args = parser.parse_args()

    comm = weft.Communicator.from_mpi()
    send = np.ones(2, dtype=np.float32)  # 8 bytes
    recv = np.zeros(2, dtype=np.float32)
    for side in (c_loop, python_loop):  # warm up: connections, caches, the interpreter's paths
        side(comm, send, recv, args.iters)
    py_us, c_us = [], []
    for r in range(args.rounds):
        order = (python_loop, c_loop) if r % 2 == 0 else (c_loop, python_loop)
        for side in order:
            per_call = side(comm, send, recv, args.iters) / args.iters / 1000.0
            (py_us if side is python_loop else c_us).append(per_call)
    if recv[0] != comm.size:
        raise SystemExit(f"wrong result {recv[0]} (expected {comm.size})")
    if comm.rank == 0:
        py, c = statistics.median(py_us), statistics.median(c_us)
        diffs = sorted(p - q for p, q in zip(py_us, c_us))
        print(f"ranks {comm.size}, 8 B float32 sum, {args.rounds} rounds x {args.iters} calls (medians per call)")
        print(f"  C loop (ncclAllReduce):        {c:8.3f} us")
        print(f"  Python (Communicator.all_reduce): {py:8.3f} us")
        print(f"  Python - C:                    {py - c:8.3f} us (per-round differences: median "
              f"{statistics.median(diffs):.3f}, min {diffs[0]:.3f}, max {diffs[-1]:.3f}); budget {BUDGET_US} us: "
              f"{'within' if py - c <= BUDGET_US else 'OVER'}")
    comm.destroy()


if __name__ == "__main__":
    main()
