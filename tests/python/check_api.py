"""weft's API around the collectives, under mpirun: the three ways to make a communicator (unique
id, mpi4py, torchrun-style environment), errors (each raised before Weft runs, and Weft's own
messages from its C API), arrays by DLPack and the refusal of GPU memory in host mode, groups that
keep temporary arrays alive, finalize, destroy and abort.
"""

import array
import os
import random
import socket

import numpy as np
from mpi4py import MPI

import weft

WORLD = MPI.COMM_WORLD


def raises(kind, text, fn, *args, **kwargs):
    """Runs fn and checks that it raises kind with text in its message; returns the exception."""
    try:
        fn(*args, **kwargs)
    except kind as e:
        if text not in str(e):
            raise AssertionError(f"{fn.__name__}: message {str(e)!r} lacks {text!r}") from e
        return e
    raise AssertionError(f"{getattr(fn, '__name__', fn)} did not raise {kind.__name__} ({text})")


def free_ports(count):
    """Ports free on every address, as rank 0 will listen (a port free on 127.0.0.1 alone may
    still be held on another address of the host). They lie below the kernel's ephemeral range:
    a port from there could be handed out again to another process's bind to port 0, or become the
    source port of a connect to itself (TCP's self-connect) while a rank retries, and then the
    listener's bind fails with "Address already in use"."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    ports = []
    for p in random.sample(range(max(1024, low - 12000), low), 400):
        try:
            with socket.create_server(("", p)):
                ports.append(p)
        except OSError:
            continue
        if len(ports) == count:
            return ports
    raise RuntimeError(f"no {count} free ports below {low}")


def free_port():
    return free_ports(1)[0]


def check_constructors():
    rank, n = WORLD.Get_rank(), WORLD.Get_size()
    # A unique id made by rank 0 and sent as bytes, and as cupy.cuda.nccl's tuple of signed chars.
    uid = WORLD.bcast(weft.get_unique_id() if rank == 0 else None, root=0)
    assert isinstance(uid, bytes) and len(uid) == weft.UNIQUE_ID_BYTES
    as_tuple = tuple(b - 256 if b > 127 else b for b in uid)
    with weft.Communicator(n, as_tuple if rank % 2 else uid, rank) as comm:
        assert (comm.rank, comm.size, comm.host_mode, comm.backend) == (rank, n, True, "host"), comm
        x = np.array([rank], dtype=np.int32)
        comm.all_reduce(x)
        assert x[0] == n * (n - 1) // 2
    assert not comm.valid and "destroyed" in repr(comm)

    # torchrun's variables, with a free port rank 0 found.
    port = WORLD.bcast(free_port() if rank == 0 else None, root=0)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    comm = weft.Communicator.from_env(timeout=30)
    x = np.ones(3, dtype=np.float64)
    comm.all_reduce(x)
    assert (x == n).all() and comm.rank == rank
    comm.destroy()
    # Each side gives up at its deadline, saying what it missed (a port of this process's own,
    # where nobody serves or asks: rank 0 picks one per process, so no two share it).
    lonely = WORLD.bcast(free_ports(n) if rank == 0 else None, root=0)[rank]
    os.environ.update(RANK="1", WORLD_SIZE="2", MASTER_PORT=str(lonely))
    raises(TimeoutError, "rank 1 got no unique id from rank 0", weft.Communicator.from_env, timeout=0.3)
    os.environ.update(RANK="0")
    raises(TimeoutError, "ranks [1] did not fetch", weft.Communicator.from_env, timeout=0.3)
    # A missing variable says which.
    del os.environ["WORLD_SIZE"]
    raises(RuntimeError, "WORLD_SIZE", weft.Communicator.from_env, timeout=1)
    raises(TypeError, "needs all three", weft.Communicator, 2)
    raises(ValueError, "128 bytes", weft.Communicator, n, b"short", rank)


def check_errors(comm):
    n, r = comm.size, comm.rank
    x = np.zeros(8, dtype=np.float32)
    raises(TypeError, "int16, which Weft does not support", comm.all_reduce, np.zeros(4, np.int16))
    raises(TypeError, "bool", comm.all_reduce, np.zeros(4, bool))
    raises(TypeError, "must be an array", comm.all_reduce, [1.0, 2.0])
    raises(ValueError, "not contiguous", comm.all_reduce, np.zeros((4, 4), np.float32)[:, 1])
    raises(ValueError, "not contiguous", comm.all_gather, x, np.zeros(32, np.float32)[::2])
    raises(ValueError, "recvbuf holds 7 elements, needs 8", comm.all_reduce, x, np.zeros(7, np.float32))
    raises(ValueError, f"needs {8 * n}", comm.all_gather, x, np.zeros(8 * n - 1, np.float32))
    raises(ValueError, "not a multiple", comm.reduce_scatter, np.zeros(n * 3 + 1, np.float32), x)
    raises(TypeError, "recvbuf has dtype float64 but sendbuf has float32", comm.all_reduce, x, np.zeros(8))
    readonly = np.zeros(8, np.float32)
    readonly.flags.writeable = False
    raises(ValueError, "read-only", comm.all_reduce, readonly)
    raises(ValueError, "root 99 is not a rank", comm.broadcast, x, root=99)
    raises(ValueError, "counts has", comm.all_gather_v, x, x, [1])
    # Errors from Weft's C API: the class for the ncclResult_t, Weft's own message.
    e = raises(weft.WeftInvalidArgument, "invalid reduction op 77", comm.all_reduce, x, op=77)
    assert e.code == 4 and isinstance(e, ValueError) and isinstance(e, weft.WeftError)
    assert "ncclAllReduce failed: invalid argument" in str(e), str(e)
    e = raises(weft.WeftError, "peer", comm.send, x, n + 3)
    assert e.code == 4, e.code
    # NCCL 2.30's ncclTimeout has its class, which is also Python's TimeoutError.
    assert weft.WeftTimeout.code == 8 and issubclass(weft.WeftTimeout, TimeoutError)
    assert issubclass(weft.WeftTimeout, weft.WeftError)
    # Every rank is still in step: the failed calls moved nothing.
    y = np.ones(8, np.float32)
    comm.all_reduce(y)
    assert (y == n).all()


class DLPackOnly:
    """An array that only speaks DLPack (like a torch CPU tensor): no buffer protocol."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class FakeGpuArray:
    """An object that says it is GPU memory (CuPy's interface), never dereferenced."""

    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (1 << 40, False), "version": 3,
                                "strides": None, "stream": 1}


def check_arrays(comm):
    n, r = comm.size, comm.rank
    send = np.full(6, r + 1, dtype=np.int64)
    recv = np.zeros(6, dtype=np.int64)
    comm.all_reduce(DLPackOnly(send), DLPackOnly(recv))
    assert (recv == n * (n + 1) // 2).all(), recv
    raises(ValueError, "not contiguous", comm.all_reduce, DLPackOnly(np.zeros((3, 4))[:, :2]))
    raises(ValueError, "GPU memory (cuda_array_interface), but this communicator runs in host mode",
           comm.all_reduce, FakeGpuArray())
    # The buffer protocol, for what is not a NumPy array (NumPy arrays are read from their struct).
    d = array.array("d", [r] * 3)
    comm.all_reduce(d)
    assert list(d) == [n * (n - 1) / 2] * 3, d
    ints = np.full(4, r + 1, np.int32)
    comm.all_reduce(memoryview(ints))
    assert (ints == n * (n + 1) // 2).all()
    raw = bytearray([r]) * 5
    comm.all_reduce(raw, op=weft.MAX)
    assert raw == bytearray([n - 1]) * 5
    raises(ValueError, "not contiguous", comm.all_reduce, memoryview(np.zeros(8, np.float32))[::2])
    raises(ValueError, "read-only", comm.all_reduce, memoryview(bytes(4)))
    raises(TypeError, "buffer format 'h'", comm.all_reduce, array.array("h", [1, 2]))
    # A multi-dimensional C- or Fortran-ordered array is one block.
    m = np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4))
    comm.all_reduce(m)
    assert (m == n * np.arange(12).reshape(3, 4)).all()
    # Temporaries passed inside a group live until it ends, when Weft fills and reads them.
    got = np.zeros(5, np.float32)
    with weft.group():
        comm.send(np.full(5, r, np.float32), (r + 1) % n)
        comm.recv(got, (r - 1) % n)
        assert weft._weft.group_depth() == 1
    assert weft._weft.group_depth() == 0
    assert (got == (r - 1) % n).all(), got
    # Several collectives in one group.
    a, b = np.ones(4, np.float32), np.full(4, 2, np.int32)
    with weft.group():
        comm.all_reduce(a)
        comm.all_reduce(b, op=weft.MAX)
    assert (a == n).all() and (b == 2).all()


def check_types(comm):
    n = comm.size
    if not hasattr(weft, "COMPLEX64"):
        # A build whose weft/weft.h has no complex types names the type it refuses.
        raises(TypeError, "complex64, which Weft does not support", comm.all_reduce, np.zeros(2, np.complex64))
    try:
        import torch
    except ImportError:
        return  # torch's CPU tensors are the DLPack producer of choice; without torch the wrapper above stands in
    # torch CPU tensors have no buffer protocol: they come through DLPack, bfloat16 included.
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        t = torch.arange(6).to(dtype) + comm.rank
        comm.all_reduce(t)
        want = (torch.arange(6) * n + n * (n - 1) // 2).to(dtype)
        assert torch.equal(t, want), (dtype, t, want)
    raises(ValueError, "not contiguous", comm.all_reduce, torch.zeros(4, 4)[:, 1])
    raises(TypeError, "int16", comm.all_reduce, torch.zeros(4, dtype=torch.int16))


def check_lifecycle():
    n, r = WORLD.Get_size(), WORLD.Get_rank()
    comm = weft.Communicator.from_mpi(WORLD)
    assert comm.device >= -1 and comm.async_error() == 0
    comm.finalize()
    comm.destroy()
    comm.destroy()  # a second destroy does nothing
    raises(ValueError, "destroyed", comm.all_reduce, np.zeros(1, np.float32))

    # Rank 1 aborts; the others' next call on the communicator fails (not hangs), naming the abort.
    comm = weft.Communicator.from_mpi(WORLD)
    if r == 1:
        comm.abort()
        assert not comm.valid
    WORLD.Barrier()
    if r != 1:
        e = raises(weft.WeftError, "ncclCommAbort", comm.all_reduce, np.zeros(4, np.float32))
        assert e.code in (5, 6), e.code
        comm.abort()
    WORLD.Barrier()


def main():
    check_constructors()
    comm = weft.Communicator.from_mpi()
    check_errors(comm)
    check_arrays(comm)
    check_types(comm)
    comm.destroy()
    check_lifecycle()
    if WORLD.Get_rank() == 0:
        print(f"api: {WORLD.Get_size()} ranks: ok")


if __name__ == "__main__":
    main()
