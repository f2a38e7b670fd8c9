"""Weft for Python: communicators and collectives on NumPy (host mode) and GPU arrays.

    import numpy as np
    import weft
    from mpi4py import MPI

    comm = weft.Communicator.from_mpi(MPI.COMM_WORLD)
    x = np.ones(1024, dtype=np.float32)
    comm.all_reduce(x)                      # in place: x == comm.size everywhere
    y = np.empty_like(x)
    with weft.group():                      # ncclGroupStart ... ncclGroupEnd
        comm.send(x, (comm.rank + 1) % comm.size)
        comm.recv(y, (comm.rank - 1) % comm.size)

Arrays are anything with the buffer protocol (NumPy), __cuda_array_interface__ or DLPack; they
must be contiguous (Weft never copies). Types are checked and sizes compared before Weft runs; a
failing Weft call raises a WeftError subclass carrying the ncclResult_t (.code) and Weft's
message. Blocking calls release the GIL. weft.nccl is a drop-in for cupy.cuda.nccl. docs/python.md
has the rest.
"""

import contextlib

from . import _weft
from ._rendezvous import env_unique_id
from ._weft import (  # noqa: F401  (re-exported)
    AVG,
    BFLOAT16,
    FLOAT16,
    FLOAT32,
    FLOAT64,
    INT8,
    INT32,
    INT64,
    MAX,
    MIN,
    PROD,
    SUM,
    UINT8,
    UINT32,
    UINT64,
    UNIQUE_ID_BYTES,
    WeftCudaError,
    WeftError,
    WeftInProgress,
    WeftInternalError,
    WeftInvalidArgument,
    WeftInvalidUsage,
    WeftRemoteError,
    WeftSystemError,
    WeftTimeout,
    get_version,
    group_end,
    group_start,
    version_string,
)

# Weft's complex types exist in builds whose weft/weft.h defines weftComplex64/weftComplex128.
if hasattr(_weft, "COMPLEX64"):
    COMPLEX64 = _weft.COMPLEX64
    COMPLEX128 = _weft.COMPLEX128

__version__ = version_string().split()[1]


def get_unique_id():
    """A new unique id (128 bytes): made by one rank, handed to every rank of the communicator."""
    return _weft.get_unique_id()


def as_unique_id(uid):
    """bytes from a unique id as bytes, bytearray, or cupy.cuda.nccl's tuple of 128 signed chars."""
    if isinstance(uid, (bytes, bytearray, memoryview)):
        raw = bytes(uid)
    else:
        raw = bytes(int(v) & 0xFF for v in uid)
    if len(raw) != UNIQUE_ID_BYTES:
        raise ValueError(f"weft: a unique id has {UNIQUE_ID_BYTES} bytes, got {len(raw)}")
    return raw


@contextlib.contextmanager
def group():
    """ncclGroupStart on entry, ncclGroupEnd on exit: the calls inside run together at the end.

    Arrays passed inside the group are kept alive until it ends, since Weft reads and writes them
    only then.
    """
    group_start()
    try:
        yield
    finally:
        group_end()


class Communicator(_weft.Comm):
    """One rank of a Weft communicator (ncclComm_t).

    Communicator(nranks, unique_id, rank) joins the communicator of unique_id as rank (every rank
    calls it, with the id rank 0 made by get_unique_id()); from_mpi() and from_env() hand the id
    around for you. Collectives take arrays; an omitted recvbuf means in place.
    """

    def __init__(self, nranks=None, unique_id=None, rank=None):
        super().__init__()
        given = [a is not None for a in (nranks, unique_id, rank)]
        if any(given) and not all(given):
            raise TypeError("weft: Communicator(nranks, unique_id, rank) needs all three")
        if all(given):
            self._init_rank(int(nranks), as_unique_id(unique_id), int(rank))

    @classmethod
    def from_mpi(cls, mpi_comm=None):
        """The ranks of an mpi4py communicator (MPI.COMM_WORLD by default), in its rank order:
        rank 0 makes the unique id and broadcasts it over MPI."""
        if mpi_comm is None:
            from mpi4py import MPI

            mpi_comm = MPI.COMM_WORLD
        rank = mpi_comm.Get_rank()
        uid = mpi_comm.bcast(get_unique_id() if rank == 0 else None, root=0)
        return cls(mpi_comm.Get_size(), uid, rank)

    @classmethod
    def from_env(cls, timeout=300.0, port=None):
        """torchrun-style: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (or port) from the
        environment. Rank 0 serves the unique id over TCP on that port until every other rank has
        fetched it; each side gives up after timeout seconds with an error naming what is missing.
        """
        rank, nranks, uid = env_unique_id(get_unique_id, timeout, port)
        return cls(nranks, uid, rank)

    def split(self, color, key=None):
        """ncclCommSplit: ranks passing the same color form a new communicator, ordered by key
        (default: this rank). color None (NCCL_SPLIT_NOCOLOR) joins none and returns None."""
        child = type(self)()
        self._split_into(child, color, key)
        return child if child.valid else None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __repr__(self):
        if not self.valid:
            return "<weft.Communicator (destroyed)>"
        return f"<weft.Communicator rank {self.rank} of {self.size}, {self.backend}>"


def init_all(ndev, devlist=None):
    """ncclCommInitAll: ndev ranks of one communicator, all in this process (one per device)."""
    comms = [Communicator() for _ in range(ndev)]
    _weft._init_all_into(comms, devlist)
    return comms
