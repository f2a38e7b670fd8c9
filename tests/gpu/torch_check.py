#!/usr/bin/env python3
"""PyTorch's NCCL backend on Weft: one process per rank (torchrun), every rank on cuda:0.

NCCL itself refuses two ranks on one GPU ("Duplicate GPU detected"); Weft allows it, and PyTorch
does not check by itself, so 4 processes on cuda:0 need no TORCH_NCCL_* setting. Each collective
PyTorch maps onto NCCL runs once with inputs whose results are exact in their dtype, and each
rank prints "rank R: PASS <op>" or "rank R: FAIL <op> (...)". Then it prints which NCCL library
the process mapped (/proc/self/maps) and, when that library is Weft, its version string.
Exit status 1 when any check failed. tests/gpu/run.sh starts it under LD_PRELOAD of Weft's
libnccl.so.2 with NCCL_DEBUG=VERSION. NOT YET RUN ON A GPU.
"""
import ctypes
import os
import sys

import torch
import torch.distributed as dist

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])
DEV = torch.device("cuda", 0)  # every rank on the same GPU, whatever LOCAL_RANK says
N = (1 << 20) + 3              # elements per rank: large enough for several pipeline chunks
failures = 0


def report(op, got, want):
    global failures
    got, want = got.cpu(), want.cpu()
    ok = got.shape == want.shape and torch.equal(got, want)
    detail = ""
    if not ok:
        failures += 1
        if got.shape != want.shape:
            detail = f" (shape {tuple(got.shape)}, want {tuple(want.shape)})"
        else:
            bad = (got != want).nonzero().flatten()
            i = bad[0].item()
            detail = f" ({len(bad)} of {got.numel()} elements differ; first [{i}]: got {got[i].item()}, " \
                     f"want {want[i].item()})"
    print(f"rank {RANK}: {'PASS' if ok else 'FAIL'} {op}{detail}", flush=True)


def pattern(n, mod, dtype=torch.float32):
    return (torch.arange(n, device=DEV) % mod + 1).to(dtype)


def check_all_reduce():
    t = (RANK + 1) * pattern(N, 7)
    dist.all_reduce(t)
    report("all_reduce (sum, float32)", t, WORLD * (WORLD + 1) // 2 * pattern(N, 7))
    t = torch.full((4099,), 2.0 * (RANK + 1), device=DEV, dtype=torch.bfloat16)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)  # mean of 2, 4, ..., 2W = W + 1, exact in bfloat16
    report("all_reduce (avg, bfloat16)", t, torch.full_like(t, WORLD + 1.0))
    t = torch.arange(1000, device=DEV, dtype=torch.int64) * (RANK + 1)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    report("all_reduce (max, int64)", t, torch.arange(1000, device=DEV, dtype=torch.int64) * WORLD)


def check_all_gather():
    out = torch.empty(WORLD * N, device=DEV)
    dist.all_gather_into_tensor(out, pattern(N, 5) + 100 * RANK)
    want = torch.cat([pattern(N, 5) + 100 * r for r in range(WORLD)])
    report("all_gather_into_tensor", out, want)


def check_reduce_scatter():
    out = torch.empty(N, device=DEV)
    dist.reduce_scatter_tensor(out, pattern(WORLD * N, 5) + RANK)
    full = WORLD * pattern(WORLD * N, 5) + sum(range(WORLD))
    report("reduce_scatter_tensor", out, full[RANK * N:(RANK + 1) * N])


def check_broadcast():
    root = WORLD - 1
    t = pattern(N, 3) + 10 * RANK
    dist.broadcast(t, src=root)
    report(f"broadcast (root {root})", t, pattern(N, 3) + 10 * root)


def check_all_to_all():
    k = 4097
    inp = torch.arange(WORLD * k, device=DEV, dtype=torch.int32) + 1000000 * RANK
    out = torch.empty_like(inp)
    dist.all_to_all_single(out, inp)
    want = torch.cat([torch.arange(RANK * k, (RANK + 1) * k, device=DEV, dtype=torch.int32) + 1000000 * r
                      for r in range(WORLD)])
    report("all_to_all_single", out, want)


def check_send_recv_ring():
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    out = pattern(N, 11) + 1000 * RANK
    inp = torch.empty_like(out)
    ops = [dist.P2POp(dist.isend, out, nxt), dist.P2POp(dist.irecv, inp, prv)]
    for req in dist.batch_isend_irecv(ops):  # grouped, as NCCL needs for a ring of pairs
        req.wait()
    report("send/recv ring (batch_isend_irecv)", inp, pattern(N, 11) + 1000 * prv)


def check_barrier():
    dist.barrier(device_ids=[0])
    print(f"rank {RANK}: PASS barrier", flush=True)


def which_library():
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if "/" in line else ""
            if os.path.basename(path).startswith(("libnccl", "librccl")):
                paths.add(path)
    print(f"rank {RANK}: libnccl mapped: {', '.join(sorted(paths)) or 'none'}", flush=True)
    try:
        fn = ctypes.CDLL(None).weftGetVersionString  # visible when Weft is LD_PRELOADed
        fn.restype = ctypes.c_char_p
        print(f"rank {RANK}: weftGetVersionString: {fn().decode()}", flush=True)
    except AttributeError:
        print(f"rank {RANK}: weftGetVersionString: not found (the NCCL in use is not Weft)", flush=True)
    print(f"rank {RANK}: torch {torch.__version__}, torch.cuda.nccl.version() = {torch.cuda.nccl.version()}",
          flush=True)


def main():
    global failures
    torch.cuda.set_device(DEV)
    try:  # device_id (PyTorch >= 2.3) binds the process group to cuda:0 and creates NCCL eagerly
        dist.init_process_group("nccl", device_id=DEV)
    except TypeError:
        dist.init_process_group("nccl")
    for check in (check_all_reduce, check_all_gather, check_reduce_scatter, check_broadcast, check_all_to_all,
                  check_send_recv_ring, check_barrier):
        try:
            check()
        except Exception as e:  # report and go on: one broken op should not hide the others
            failures += 1
            print(f"rank {RANK}: FAIL {check.__name__[6:]} raised {type(e).__name__}: {e}", flush=True)
    torch.cuda.synchronize()
    which_library()
    dist.destroy_process_group()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
