"""weft.nccl, cupy.cuda.nccl's interface, under mpirun: the constants, the unique id as CuPy's
tuple sent over MPI (as PyLops-MPI's _nccl.py does), every NcclCommunicator method on NumPy
addresses, groups, NcclError, and initAll.
"""

import numpy as np
from mpi4py import MPI

from weft import nccl

WORLD = MPI.COMM_WORLD


def addr(a):
    return a.ctypes.data


def check_constants():
    # The values CuPy exposes (they are NCCL's enums).
    want = dict(NCCL_SUM=0, NCCL_PROD=1, NCCL_MAX=2, NCCL_MIN=3, NCCL_AVG=4, NCCL_INT8=0, NCCL_CHAR=0,
                NCCL_UINT8=1, NCCL_INT32=2, NCCL_INT=2, NCCL_UINT32=3, NCCL_INT64=4, NCCL_UINT64=5,
                NCCL_FLOAT16=6, NCCL_HALF=6, NCCL_FLOAT32=7, NCCL_FLOAT=7, NCCL_FLOAT64=8, NCCL_DOUBLE=8,
                NCCL_BFLOAT16=9)
    for name, value in want.items():
        assert getattr(nccl, name) == value, name
    assert nccl.available and nccl.get_version() == nccl.get_build_version() == 23007


def check_comm(comm):
    n, r = comm.size(), comm.rank_id()
    s0 = 0  # the null stream, as cp.cuda.Stream.null.ptr; host mode takes no stream
    send = np.arange(10, dtype=np.float32) + r
    recv = np.zeros(10, np.float32)
    comm.allReduce(addr(send), addr(recv), 10, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s0)
    assert (recv == n * np.arange(10) + n * (n - 1) / 2).all(), recv

    buf = np.full(4, r, np.int64)
    comm.bcast(addr(buf), 4, nccl.NCCL_INT64, n - 1, s0)
    assert (buf == n - 1).all()
    out = np.zeros(4, np.int64)
    comm.broadcast(addr(np.full(4, 5 + r, np.int64)), addr(out), 4, nccl.NCCL_INT64, 0, s0)
    assert (out == 5).all()

    out = np.zeros(3, np.int32)
    comm.reduce(addr(np.full(3, r + 1, np.int32)), addr(out), 3, nccl.NCCL_INT32, nccl.NCCL_MAX, 0, s0)
    assert r != 0 or (out == n).all(), out

    # PyLops-MPI moves complex arrays as twice as many floats.
    z = (np.arange(3) + 1j * r).astype(np.complex64)
    gathered = np.zeros(3 * n, np.complex64)
    comm.allGather(addr(z), addr(gathered), 2 * z.size, nccl.NCCL_FLOAT32, s0)
    assert (gathered == np.concatenate([np.arange(3) + 1j * q for q in range(n)])).all(), gathered

    full = np.ones(2 * n, np.float64) * (r + 1)
    part = np.zeros(2, np.float64)
    comm.reduceScatter(addr(full), addr(part), 2, nccl.NCCL_FLOAT64, nccl.NCCL_SUM, s0)
    assert (part == n * (n + 1) / 2).all()

    got = np.zeros(6, np.uint8)
    nccl.groupStart()
    comm.send(addr(np.full(6, r, np.uint8)), 6, nccl.NCCL_UINT8, (r + 1) % n, s0)
    comm.recv(addr(got), 6, nccl.NCCL_UINT8, (r - 1) % n, s0)
    nccl.groupEnd()
    assert (got == (r - 1) % n).all()

    try:
        comm.allReduce(addr(send), addr(recv), 10, nccl.NCCL_FLOAT32, 42, s0)
    except nccl.NcclError as e:
        assert e.status == 4 and "NCCL_ERROR_INVALID_ARGUMENT" in str(e) and "reduction op 42" in str(e), str(e)
    else:
        raise AssertionError("a bad op did not raise NcclError")
    comm.check_async_error()
    assert comm.device_id() >= -1 and comm.comm != 0


def check_init_all():
    # Every rank of a 2-rank communicator in this process, driven by this thread in groups.
    comms = nccl.NcclCommunicator.initAll(2)
    assert [c.rank_id() for c in comms] == [0, 1] and comms[0].size() == 2
    bufs = [np.full(4, k + 1, np.float32) for k in range(2)]
    nccl.groupStart()
    for c, b in zip(comms, bufs):
        c.allReduce(addr(b), addr(b), 4, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
    nccl.groupEnd()
    assert all((b == 3).all() for b in bufs), bufs
    for c in comms:
        c.destroy()
    assert comms[0].comm == 0


def main():
    check_constants()
    rank, n = WORLD.Get_rank(), WORLD.Get_size()
    uid = nccl.get_unique_id() if rank == 0 else None
    assert uid is None or (isinstance(uid, tuple) and len(uid) == 128 and min(uid) >= -128 and max(uid) < 128)
    uid = WORLD.bcast(uid, root=0)
    comm = nccl.NcclCommunicator(n, uid, rank)
    check_comm(comm)
    comm.destroy()
    check_init_all()
    if rank == 0:
        print(f"nccl: {n} ranks: ok")


if __name__ == "__main__":
    main()
