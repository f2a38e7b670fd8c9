"""Every collective of weft.Communicator against results NumPy computes, in every type Weft
reduces, under mpirun (tests/python/CMakeLists.txt): all_reduce with each op, broadcast, reduce,
gather and scatter from each root, all_gather, reduce_scatter, all_to_all, send/recv in a group,
the uneven all_gather_v/reduce_scatter_v, and split communicators. Inputs are small integers, so
every sum and product is exact in every type and the results are compared exactly.
"""

import numpy as np

import weft

TYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]
if hasattr(weft, "COMPLEX64"):
    TYPES += [np.complex64, np.complex128]
COUNT = 37  # not a multiple of a vector width or of the rank count


def data(dtype, rank, n=COUNT, small=False):
    """Rank rank's input: small integers (1 or 2 when small, for products), distinct per rank."""
    base = np.arange(n)
    values = 1 + (base + rank) % 2 if small else (base % 7) + rank + 1
    out = values.astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        out = out + 1j * ((base + 2 * rank) % 3).astype(dtype)
    return out


def expect_equal(got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def check_all_reduce(comm, dtype):
    n, r = comm.size, comm.rank
    ops = [(weft.SUM, np.add, False)]
    if not np.issubdtype(dtype, np.complexfloating):
        ops += [(weft.PROD, np.multiply, True), (weft.MAX, np.maximum, False), (weft.MIN, np.minimum, False)]
    for op, fold, small in ops:
        inputs = [data(dtype, q, small=small) for q in range(n)]
        want = inputs[0].copy()
        for x in inputs[1:]:
            want = fold(want, x).astype(dtype)
        out = np.zeros(COUNT, dtype)
        comm.all_reduce(inputs[r], out, op=op)
        expect_equal(out, want, f"all_reduce {np.dtype(dtype)} op {op}")
        inplace = inputs[r].copy()
        assert comm.all_reduce(inplace, op=op) is inplace
        expect_equal(inplace, want, f"in-place all_reduce {np.dtype(dtype)} op {op}")
    if np.issubdtype(dtype, np.floating) and not np.issubdtype(dtype, np.complexfloating):
        # n is a power of two here, so the average is exact.
        out = np.zeros(COUNT, dtype)
        comm.all_reduce(data(dtype, r), out, op=weft.AVG)
        want = (sum(data(np.float64, q) for q in range(n)) / n).astype(dtype)
        expect_equal(out, want, f"all_reduce {np.dtype(dtype)} AVG")


def check_rooted(comm, dtype):
    n, r = comm.size, comm.rank
    total = sum(data(dtype, q) for q in range(n)).astype(dtype)
    for root in range(n):
        buf = data(dtype, r) if r == root else np.zeros(COUNT, dtype)
        comm.broadcast(buf, root=root)
        expect_equal(buf, data(dtype, root), f"broadcast {np.dtype(dtype)} root {root}")
        out = np.zeros(COUNT, dtype)
        comm.broadcast(data(dtype, r), out, root=root)
        expect_equal(out, data(dtype, root), f"broadcast send/recv {np.dtype(dtype)} root {root}")

        out = np.zeros(COUNT, dtype) if r == root else None
        comm.reduce(data(dtype, r), out, root=root)
        if r == root:
            expect_equal(out, total, f"reduce {np.dtype(dtype)} root {root}")

        out = np.zeros(COUNT * n, dtype) if r == root else None
        comm.gather(data(dtype, r), out, root=root)
        if r == root:
            expect_equal(out, np.concatenate([data(dtype, q) for q in range(n)]), f"gather root {root}")

        whole = np.concatenate([data(dtype, q + 10) for q in range(n)])
        out = np.zeros(COUNT, dtype)
        comm.scatter(whole if r == root else None, out, root=root)
        expect_equal(out, data(dtype, r + 10), f"scatter {np.dtype(dtype)} root {root}")


def check_all_to_all_kinds(comm, dtype):
    n, r = comm.size, comm.rank
    out = np.zeros(COUNT * n, dtype)
    comm.all_gather(data(dtype, r), out)
    expect_equal(out, np.concatenate([data(dtype, q) for q in range(n)]), f"all_gather {np.dtype(dtype)}")

    full = [data(dtype, q, n=COUNT * n) for q in range(n)]
    out = np.zeros(COUNT, dtype)
    comm.reduce_scatter(full[r], out)
    want = sum(full).astype(dtype)[r * COUNT : (r + 1) * COUNT]
    expect_equal(out, want, f"reduce_scatter {np.dtype(dtype)}")

    # Block j of rank q's input goes to rank j: rank r receives block r of every rank.
    out = np.zeros(COUNT * n, dtype)
    comm.all_to_all(full[r], out)
    want = np.concatenate([full[q][r * COUNT : (r + 1) * COUNT] for q in range(n)])
    expect_equal(out, want, f"all_to_all {np.dtype(dtype)}")

    # A ring of send/recv in one group (each rank both sends and receives).
    got = np.zeros(COUNT, dtype)
    with weft.group():
        comm.send(data(dtype, r), (r + 1) % n)
        comm.recv(got, (r - 1) % n)
    expect_equal(got, data(dtype, (r - 1) % n), f"send/recv {np.dtype(dtype)}")


def check_uneven(comm, dtype):
    n, r = comm.size, comm.rank
    counts = [(q * 5 + 3) % 11 for q in range(n)]  # includes sizes of 3, 8, 2 (and 0 for n > 5)
    out = np.zeros(sum(counts), dtype)
    comm.all_gather_v(data(dtype, r, n=counts[r]), out, counts)
    expect_equal(out, np.concatenate([data(dtype, q, n=counts[q]) for q in range(n)]), "all_gather_v")

    # Explicit displacements with a gap of 2 elements between blocks.
    displs = [sum(counts[:q]) + 2 * q for q in range(n)]
    full = [data(dtype, q, n=displs[-1] + counts[-1]) for q in range(n)]
    out = np.zeros(counts[r], dtype)
    comm.reduce_scatter_v(full[r], out, counts, displs)
    want = sum(full).astype(dtype)[displs[r] : displs[r] + counts[r]]
    expect_equal(out, want, "reduce_scatter_v")


def check_split(comm):
    n, r = comm.size, comm.rank
    # Even and odd ranks, the odd ones in reverse order (key).
    sub = comm.split(r % 2, key=-r)
    members = [q for q in range(n) if q % 2 == r % 2]
    assert sub.size == len(members), (sub.size, members)
    assert sub.rank == sorted(members, reverse=True).index(r), sub.rank
    x = np.array([r], dtype=np.int64)
    sub.all_reduce(x)
    assert x[0] == sum(members), (x, members)
    sub.destroy()
    assert comm.split(None) is None  # NCCL_SPLIT_NOCOLOR: this rank joins no communicator


def main():
    comm = weft.Communicator.from_mpi()
    for dtype in TYPES:
        check_all_reduce(comm, dtype)
        check_rooted(comm, dtype)
        check_all_to_all_kinds(comm, dtype)
        check_uneven(comm, dtype)
    check_split(comm)
    comm.destroy()
    if comm.rank == 0:
        print(f"collectives: {len(TYPES)} types on {comm.size} ranks: ok")


if __name__ == "__main__":
    main()
