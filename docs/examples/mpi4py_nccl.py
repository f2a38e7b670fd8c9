"""AllReduce, a complex64 Bcast and a Send/Recv ring between MPI ranks, in the style of the
mpi4py + CuPy example of AMD's RCCL training (cupy.cuda.nccl on GPU buffers), written here with
NumPy arrays and weft.nccl so that it runs on CPUs in Weft's host mode:

    WEFT_DEVICE=host PYTHONPATH=<build>/python mpirun -n 4 /usr/bin/python3 docs/examples/mpi4py_nccl.py

On a GPU with CuPy the same code runs with `from cupy.cuda import nccl`, CuPy arrays, a.data.ptr
for the addresses and cupy.cuda.Stream.null.ptr for the stream.
"""

import numpy as np
from mpi4py import MPI

from weft import nccl

N = 1 << 16
STREAM = 0  # host mode runs on the calling thread: no stream


def ptr(a):
    return a.ctypes.data


def main():
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()

    # Rank 0 makes the communicator's id; MPI hands it to everyone.
    uid = world.bcast(nccl.get_unique_id() if rank == 0 else None, root=0)
    comm = nccl.NcclCommunicator(size, uid, rank)

    # AllReduce: every rank contributes rank + 1.
    send = np.full(N, rank + 1, dtype=np.float32)
    recv = np.empty(N, dtype=np.float32)
    comm.allReduce(ptr(send), ptr(recv), N, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, STREAM)
    assert (recv == size * (size + 1) / 2).all(), recv[:4]

    # Bcast of complex64 from rank 0, in place. Weft reduces complex numbers in builds that have
    # its complex types; a broadcast only copies bytes, so without them it moves float32 pairs.
    z = (np.arange(N) * (1 + 2j)).astype(np.complex64) if rank == 0 else np.zeros(N, np.complex64)
    if hasattr(nccl, "NCCL_COMPLEX64"):
        comm.bcast(ptr(z), N, nccl.NCCL_COMPLEX64, 0, STREAM)
        how = "NCCL_COMPLEX64"
    else:
        comm.bcast(ptr(z), 2 * N, nccl.NCCL_FLOAT32, 0, STREAM)
        how = "float32 pairs"
    assert (z == (np.arange(N) * (1 + 2j)).astype(np.complex64)).all()

    # Send/Recv around the ring: both in one group, so no rank waits for its peer to post first.
    out = np.full(N, rank, dtype=np.int32)
    into = np.empty(N, dtype=np.int32)
    nccl.groupStart()
    comm.send(ptr(out), N, nccl.NCCL_INT32, (rank + 1) % size, STREAM)
    comm.recv(ptr(into), N, nccl.NCCL_INT32, (rank - 1) % size, STREAM)
    nccl.groupEnd()
    assert (into == (rank - 1) % size).all()

    comm.destroy()
    if rank == 0:
        print(f"mpi4py_nccl: {size} ranks: AllReduce, Bcast (complex64 as {how}), Send/Recv: ok")


if __name__ == "__main__":
    main()
