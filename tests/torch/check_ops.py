"""Every operation of the weft torch.distributed backend, against gloo and a local reference.

Run under torch.distributed.run (tests/torch/CMakeLists.txt): the default group is weft, a gloo
group of the same ranks runs the same calls. Inputs are small integers (also in the float
types), so every sum and product is exact and results must match bit for bit whatever order the
backends reduce in. Every rank builds every rank's input from (rank, case), so it can also compute
the expected result itself: that covers what gloo 1.13 lacks (it says which at run time) and AVG
and PREMUL_SUM, which gloo has not. Exits non-zero, naming the failed check, on any mismatch.
"""

import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import weft.torch

R = dist.ReduceOp
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
          torch.int64]


class Checker:
    def __init__(self):
        self.rank = dist.get_rank()
        self.n = dist.get_world_size()
        self.gloo = dist.new_group(backend="gloo")
        self.case = 0
        self.count = 0
        self.skipped = set()

    def data(self, rank, dtype, shape=(3, 5), low=-4, high=5):
        """Rank rank's input for the current case: the same on every rank that builds it."""
        g = torch.Generator().manual_seed(1000 * self.case + rank)
        if dtype in (torch.uint8,):
            low = max(low, 0)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=g).bool()
        if dtype.is_complex:
            re = torch.randint(low, high, shape, generator=g).double()
            im = torch.randint(low, high, shape, generator=g).double()
            return torch.complex(re, im).to(dtype)
        return torch.randint(low, high, shape, generator=g).to(dtype)

    def expect(self, name, got, want):
        self.count += 1
        if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
            print(f"rank {self.rank}: FAIL {name}: got\n{got}\nwant\n{want}", file=sys.stderr, flush=True)
            sys.exit(1)

    def expect_raises(self, name, fn, *words):
        self.count += 1
        try:
            fn()
        except (RuntimeError, ValueError) as e:
            msg = str(e)
            if all(w in msg for w in words):
                return msg
            print(f"rank {self.rank}: FAIL {name}: message lacks {words}: {msg}", file=sys.stderr, flush=True)
            sys.exit(1)
        print(f"rank {self.rank}: FAIL {name}: no exception", file=sys.stderr, flush=True)
        sys.exit(1)

    def next_case(self):
        self.case += 1

    def gloo_has(self, name, fn):
        """Runs fn on the gloo group; False when gloo 1.13 lacks the operation (then only the local
        reference checks weft). The answer is the same on every rank, so all ranks skip alike."""
        try:
            fn()
            return True
        except RuntimeError as e:
            msg = str(e).lower()
            if "support" not in msg and "invalid scalar type" not in msg:
                raise
            if self.rank == 0 and name not in self.skipped:
                print(f"gloo has no {name}: checked against the local reference only", flush=True)
            self.skipped.add(name)
            return False


def fold(tensors, op):
    acc = tensors[0].clone()
    for t in tensors[1:]:
        if op == R.SUM:
            acc = acc + t
        elif op == R.PRODUCT:
            acc = acc * t
        elif op == R.MIN:
            acc = torch.minimum(acc, t)
        elif op == R.MAX:
            acc = torch.maximum(acc, t)
    return acc.to(tensors[0].dtype)


def check_all_reduce(c):
    for dtype in DTYPES:
        for op in (R.SUM, R.PRODUCT, R.MIN, R.MAX):
            c.next_case()
            low, high = (-2, 3) if op == R.PRODUCT else (-4, 5)
            inputs = [c.data(r, dtype, low=low, high=high) for r in range(c.n)]
            want = fold(inputs, op)
            t = inputs[c.rank].clone()
            dist.all_reduce(t, op=op)
            c.expect(f"all_reduce {dtype} {op}", t, want)
            g = inputs[c.rank].clone()
            if c.gloo_has(f"all_reduce for {dtype}", lambda: dist.all_reduce(g, op=op, group=c.gloo)):
                c.expect(f"all_reduce {dtype} {op} vs gloo", t, g)
    # A non-contiguous tensor (a transposed view): reduced in a copy, written back in place.
    c.next_case()
    inputs = [c.data(r, torch.float32, shape=(4, 6)) for r in range(c.n)]
    base = inputs[c.rank].clone()
    view = base.t()
    dist.all_reduce(view)
    c.expect("all_reduce non-contiguous", base, fold(inputs, R.SUM))
    # AVG (gloo has none): sums of small integers over 2 or 4 ranks divide exactly.
    for dtype in (torch.float32, torch.float64):
        c.next_case()
        inputs = [c.data(r, dtype) for r in range(c.n)]
        t = inputs[c.rank].clone()
        dist.all_reduce(t, op=R.AVG)
        c.expect(f"all_reduce AVG {dtype}", t, fold(inputs, R.SUM) / c.n)
    # PREMUL_SUM, with a number and with a tensor factor.
    for factor in (2.0, torch.tensor([0.5], dtype=torch.float64)):
        c.next_case()
        inputs = [c.data(r, torch.float64) for r in range(c.n)]
        t = inputs[c.rank].clone()
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor if isinstance(factor, float) else [factor]))
        f = factor if isinstance(factor, float) else factor.item()
        c.expect(f"all_reduce PREMUL_SUM {factor}", t, fold([x * f for x in inputs], R.SUM))
    # bool: SUM and MAX are logical or, PRODUCT and MIN logical and.
    for op, logic in ((R.SUM, torch.logical_or), (R.MAX, torch.logical_or), (R.PRODUCT, torch.logical_and),
                      (R.MIN, torch.logical_and)):
        c.next_case()
        inputs = [c.data(r, torch.bool) for r in range(c.n)]
        want = inputs[0]
        for x in inputs[1:]:
            want = logic(want, x)
        t = inputs[c.rank].clone()
        dist.all_reduce(t, op=op)
        c.expect(f"all_reduce bool {op}", t, want)
    c.expect_raises("all_reduce bool AVG", lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool), op=R.AVG),
                    "AVG", "bool")
    c.expect_raises("all_reduce BAND", lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32), op=R.BAND),
                    "bitwise")
    # (A tensor on another device cannot be made here: Debian's torch has CPU only, and torch's
    # dispatcher stops "meta" tensors before any backend sees them.)
    c.expect_raises("all_reduce on a sparse tensor", lambda: dist.all_reduce(torch.ones(2).to_sparse()), "dense")
    if weft.torch.HAS_COMPLEX:
        pg = dist.distributed_c10d._get_default_group()
        for dtype in (torch.complex64, torch.complex128):
            for op in (R.SUM, R.PRODUCT):
                c.next_case()
                inputs = [c.data(r, dtype, low=-2, high=3) for r in range(c.n)]
                t = inputs[c.rank].clone()
                opts = dist.AllreduceOptions()
                opts.reduceOp = op
                pg.allreduce([t], opts).wait()
                c.expect(f"all_reduce {dtype} {op}", t, fold(inputs, op))
            opts = dist.AllreduceOptions()
            opts.reduceOp = R.MAX
            c.expect_raises(f"all_reduce {dtype} MAX", lambda: pg.allreduce([torch.ones(2, dtype=dtype)], opts).wait(),
                            "weft")


def check_rooted(c):
    for root in range(c.n):
        for dtype in (torch.float32, torch.int64):
            c.next_case()
            inputs = [c.data(r, dtype) for r in range(c.n)]
            t = inputs[c.rank].clone()
            dist.broadcast(t, src=root)
            c.expect(f"broadcast root {root} {dtype}", t, inputs[root])
            g = inputs[c.rank].clone()
            dist.broadcast(g, src=root, group=c.gloo)
            c.expect(f"broadcast root {root} vs gloo", t, g)
            for op in (R.SUM, R.MAX):
                t = inputs[c.rank].clone()
                dist.reduce(t, dst=root, op=op)
                g = inputs[c.rank].clone()
                dist.reduce(g, dst=root, op=op, group=c.gloo)
                if c.rank == root:
                    c.expect(f"reduce root {root} {dtype} {op}", t, fold(inputs, op))
                    c.expect(f"reduce root {root} {op} vs gloo", t, g)


def check_gathers(c):
    for dtype in (torch.float32, torch.int32, torch.float16):
        c.next_case()
        inputs = [c.data(r, dtype) for r in range(c.n)]
        outs = [torch.zeros_like(inputs[0]) for _ in range(c.n)]
        dist.all_gather(outs, inputs[c.rank])
        for r in range(c.n):
            c.expect(f"all_gather {dtype} from {r}", outs[r], inputs[r])
        gouts = [torch.zeros_like(inputs[0]) for _ in range(c.n)]
        dist.all_gather(gouts, inputs[c.rank], group=c.gloo)
        for r in range(c.n):
            c.expect(f"all_gather {dtype} vs gloo", outs[r], gouts[r])
        flat = torch.zeros((c.n * 3, 5), dtype=dtype)
        dist.all_gather_into_tensor(flat, inputs[c.rank])
        c.expect(f"all_gather_into_tensor {dtype}", flat, torch.cat(inputs))
        gflat = torch.zeros_like(flat)
        if c.gloo_has("all_gather_into_tensor",
                      lambda: dist.all_gather_into_tensor(gflat, inputs[c.rank], group=c.gloo)):
            c.expect(f"all_gather_into_tensor {dtype} vs gloo", flat, gflat)
    # reduce_scatter (gloo 1.13 has neither form): rank r gets the reduced r-th share.
    for op in (R.SUM, R.MIN):
        c.next_case()
        lists = [[c.data(r * c.n + k, torch.float32, shape=(2, 3)) for k in range(c.n)] for r in range(c.n)]
        out = torch.zeros((2, 3))
        dist.reduce_scatter(out, lists[c.rank], op=op)
        c.expect(f"reduce_scatter {op}", out, fold([lists[r][c.rank] for r in range(c.n)], op))
        gout = torch.zeros((2, 3))
        if c.gloo_has("reduce_scatter", lambda: dist.reduce_scatter(gout, lists[c.rank], op=op, group=c.gloo)):
            c.expect(f"reduce_scatter {op} vs gloo", out, gout)
        whole = [torch.cat(lists[r]) for r in range(c.n)]
        out = torch.zeros((2, 3))
        dist.reduce_scatter_tensor(out, whole[c.rank], op=op)
        c.expect(f"reduce_scatter_tensor {op}", out, fold([lists[r][c.rank] for r in range(c.n)], op))
    c.expect_raises("all_gather_into_tensor wrong size",
                    lambda: dist.all_gather_into_tensor(torch.zeros(c.n * 2 + 1), torch.zeros(2)), "elements")


def check_all_to_all(c):
    n = c.n
    c.next_case()
    inputs = [c.data(r, torch.float64, shape=(2 * n, 3)) for r in range(n)]
    out = torch.zeros((2 * n, 3), dtype=torch.float64)
    dist.all_to_all_single(out, inputs[c.rank])
    want = torch.cat([inputs[r][2 * c.rank:2 * c.rank + 2] for r in range(n)])
    c.expect("all_to_all_single equal", out, want)
    gout = torch.zeros_like(out)
    if c.gloo_has("all_to_all_single", lambda: dist.all_to_all_single(gout, inputs[c.rank], group=c.gloo)):
        c.expect("all_to_all_single equal vs gloo", out, gout)
    # Uneven splits: rank r sends (r + p) % 3 rows to rank p (zero rows included).
    c.next_case()
    splits = [[(r + p) % 3 for p in range(n)] for r in range(n)]
    inputs = [c.data(r, torch.int32, shape=(sum(splits[r]), 4)) for r in range(n)]
    in_splits = splits[c.rank]
    out_splits = [splits[r][c.rank] for r in range(n)]
    out = torch.zeros((sum(out_splits), 4), dtype=torch.int32)
    dist.all_to_all_single(out, inputs[c.rank], out_splits, in_splits)
    pieces = []
    for r in range(n):
        start = sum(splits[r][:c.rank])
        pieces.append(inputs[r][start:start + splits[r][c.rank]])
    c.expect("all_to_all_single splits", out, torch.cat(pieces))
    gout = torch.zeros_like(out)
    if c.gloo_has("all_to_all_single",
                  lambda: dist.all_to_all_single(gout, inputs[c.rank], out_splits, in_splits, group=c.gloo)):
        c.expect("all_to_all_single splits vs gloo", out, gout)
    # The list form, with a different size per pair.
    c.next_case()
    ins = [c.data(c.rank * n + p, torch.float32, shape=(c.rank + p + 1,)) for p in range(n)]
    outs = [torch.zeros(r + c.rank + 1) for r in range(n)]
    dist.all_to_all(outs, ins)
    for r in range(n):
        c.expect(f"all_to_all list from {r}", outs[r], c.data(r * n + c.rank, torch.float32, shape=(r + c.rank + 1,)))
    gouts = [torch.zeros(r + c.rank + 1) for r in range(n)]
    if c.gloo_has("all_to_all (list)", lambda: dist.all_to_all(gouts, ins, group=c.gloo)):
        for r in range(n):
            c.expect(f"all_to_all list from {r} vs gloo", outs[r], gouts[r])


def check_p2p(c):
    n = c.n
    c.next_case()
    # A ring exchange: even ranks send first, odd ranks receive first, so blocking sends pair up.
    right, left = (c.rank + 1) % n, (c.rank - 1) % n
    mine = c.data(c.rank, torch.float32, shape=(1000,))
    got = torch.zeros(1000)
    if c.rank % 2 == 0:
        dist.send(mine, right)
        dist.recv(got, left)
    else:
        dist.recv(got, left)
        dist.send(mine, right)
    c.expect("send/recv ring", got, c.data(left, torch.float32, shape=(1000,)))
    # Async: isend/irecv return Work at once; they run in issue order on the group's thread.
    c.next_case()
    got = torch.zeros(64, dtype=torch.int64)
    if c.rank % 2 == 0:
        works = [dist.isend(c.data(c.rank, torch.int64, shape=(64,)), right), dist.irecv(got, left)]
    else:
        works = [dist.irecv(got, left), dist.isend(c.data(c.rank, torch.int64, shape=(64,)), right)]
    for w in works:
        w.wait()
        assert w.is_completed()
    c.expect("isend/irecv", got, c.data(left, torch.int64, shape=(64,)))
    c.expect_raises("send to itself", lambda: dist.send(torch.zeros(1), c.rank), "peer")


def check_async(c):
    c.next_case()
    inputs = [[c.data(r * 10 + k, torch.float64, shape=(257,)) for k in range(5)] for r in range(c.n)]
    mine = [x.clone() for x in inputs[c.rank]]
    works = [dist.all_reduce(t, async_op=True) for t in mine]
    for k, w in enumerate(works):
        w.wait()
        assert w.is_completed()
        c.expect(f"async all_reduce {k}", mine[k], fold([inputs[r][k] for r in range(c.n)], R.SUM))
    # The Work's future completes with the output tensors (DDP's comm hooks rely on it).
    t = inputs[c.rank][0].clone()
    fut = dist.all_reduce(t, async_op=True).get_future()
    c.expect("future value", fut.wait()[0], fold([inputs[r][0] for r in range(c.n)], R.SUM))
    dist.barrier()


def check_timeout(c):
    """Rank 0 all_reduces on a group whose other ranks never call: the wait raises after the
    group's timeout, naming the operation, and the group's later operations raise too."""
    short = dist.new_group(backend="weft", timeout=timedelta(seconds=2))
    if c.rank == 0:
        start = time.monotonic()
        c.expect_raises("timeout", lambda: dist.all_reduce(torch.ones(4), group=short), "all_reduce",
                        "did not finish within 2000 ms")
        took = time.monotonic() - start
        assert 1.9 < took < 20, f"the timeout took {took:.1f} s"
        c.expect_raises("after a timeout", lambda: dist.broadcast(torch.ones(4), src=0, group=short),
                        "broadcast", "failed earlier")
    dist.barrier(group=c.gloo)


def main():
    dist.init_process_group("weft", timeout=timedelta(seconds=120))
    c = Checker()
    for check in (check_all_reduce, check_rooted, check_gathers, check_all_to_all, check_p2p, check_async,
                  check_timeout):
        check(c)
    dist.barrier()
    print(f"rank {c.rank}/{c.n}: {c.count} checks passed", flush=True)


if __name__ == "__main__":
    main()
