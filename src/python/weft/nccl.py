"""cupy.cuda.nccl's names and signatures, served by Weft.

Code written for CuPy's NCCL module switches with one import::

    from weft import nccl          # instead of: import cupy.cuda.nccl as nccl

    uid = nccl.get_unique_id()     # rank 0, then sent to the others (MPI bcast, ...)
    comm = nccl.NcclCommunicator(nranks, uid, rank)
    comm.allReduce(sendptr, recvptr, count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream)

As in CuPy, buffers and streams are integers (addresses: array.ctypes.data for NumPy in host mode,
array.data.ptr for CuPy), counts are elements, and errors raise NcclError with .status. In host mode
the stream is ignored (pass 0). Weft's complex types, which CuPy lacks, are NCCL_COMPLEX64 and
NCCL_COMPLEX128 where the build has them.
"""

from . import Communicator as _Communicator
from . import WeftError as _WeftError
from . import _weft
from . import as_unique_id as _as_unique_id
from . import init_all as _init_all

NCCL_SUM = _weft.SUM
NCCL_PROD = _weft.PROD
NCCL_MAX = _weft.MAX
NCCL_MIN = _weft.MIN
NCCL_AVG = _weft.AVG

NCCL_INT8 = NCCL_CHAR = _weft.INT8
NCCL_UINT8 = _weft.UINT8
NCCL_INT32 = NCCL_INT = _weft.INT32
NCCL_UINT32 = _weft.UINT32
NCCL_INT64 = _weft.INT64
NCCL_UINT64 = _weft.UINT64
NCCL_FLOAT16 = NCCL_HALF = _weft.FLOAT16
NCCL_FLOAT32 = NCCL_FLOAT = _weft.FLOAT32
NCCL_FLOAT64 = NCCL_DOUBLE = _weft.FLOAT64
NCCL_BFLOAT16 = _weft.BFLOAT16
if hasattr(_weft, "COMPLEX64"):
    NCCL_COMPLEX64 = _weft.COMPLEX64
    NCCL_COMPLEX128 = _weft.COMPLEX128

available = True

# ncclResult_t's names as CuPy prints them (NCCL 2.x).
_STATUS_NAMES = {
    0: "NCCL_ERROR_SUCCESS",
    1: "NCCL_ERROR_UNHANDLED_CUDA_ERROR",
    2: "NCCL_ERROR_SYSTEM_ERROR",
    3: "NCCL_ERROR_INTERNAL_ERROR",
    4: "NCCL_ERROR_INVALID_ARGUMENT",
    5: "NCCL_ERROR_INVALID_USAGE",
    6: "NCCL_ERROR_REMOTE_ERROR",
    7: "NCCL_ERROR_IN_PROGRESS",
}


class NcclError(RuntimeError):
    """A failed call: .status is the ncclResult_t; the message is Weft's."""

    def __init__(self, status, message=None):
        self.status = status
        name = _STATUS_NAMES.get(status, f"NCCL_ERROR_{status}")
        super().__init__(f"{name}: {message}" if message else name)

    def __reduce__(self):
        return (type(self), (self.status, str(self)))


def _raise(err):
    raise NcclError(err.code, str(err)) from None


def get_build_version():
    """The NCCL API version of the header Weft was built with (23007 for 2.30.7)."""
    return _weft.NCCL_VERSION_CODE


def get_version():
    """ncclGetVersion."""
    return _weft.get_version()


def get_unique_id():
    """A new unique id as a tuple of 128 ints (signed chars), as CuPy returns it."""
    try:
        raw = _weft.get_unique_id()
    except _WeftError as e:
        _raise(e)
    return tuple(b - 256 if b > 127 else b for b in raw)


def groupStart():  # noqa: N802  (CuPy's name)
    try:
        _weft.group_start()
    except _WeftError as e:
        _raise(e)


def groupEnd():  # noqa: N802
    try:
        _weft.group_end()
    except _WeftError as e:
        _raise(e)


class NcclCommunicator:
    """One rank of a communicator: NcclCommunicator(ndev, commId, rank) (ncclCommInitRank)."""

    def __init__(self, ndev, commId, rank):  # noqa: N803  (CuPy's names)
        try:
            self._comm = _Communicator(ndev, _as_unique_id(commId), rank)
        except _WeftError as e:
            _raise(e)

    @classmethod
    def _wrap(cls, comm):
        self = cls.__new__(cls)
        self._comm = comm
        return self

    @staticmethod
    def initAll(devices):  # noqa: N802
        """ncclCommInitAll: a list of communicators, one per device, in this process. devices is
        a count or a list of device numbers. In host mode every rank lives in this process and is
        driven from one thread, so its calls must be grouped (groupStart/groupEnd)."""
        if isinstance(devices, int):
            ndev, devlist = devices, None
        elif isinstance(devices, list):
            ndev, devlist = len(devices), devices
        else:
            raise ValueError('"devices" should be an int or a list of int.')
        try:
            return [NcclCommunicator._wrap(c) for c in _init_all(ndev, devlist)]
        except _WeftError as e:
            _raise(e)

    @property
    def comm(self):
        """The ncclComm_t as an integer (0 once destroyed)."""
        return self._comm.handle

    def destroy(self):
        self._comm.destroy()

    def abort(self):
        self._comm.abort()

    def device_id(self):
        return self._call(lambda c: c.device)

    def rank_id(self):
        return self._call(lambda c: c.rank)

    def size(self):
        return self._call(lambda c: c.size)

    def check_async_error(self):
        status = self._call(lambda c: c.async_error())
        if status != 0:
            raise NcclError(status, "an earlier operation failed")

    def _call(self, fn):
        try:
            return fn(self._comm)
        except _WeftError as e:
            _raise(e)
        except ValueError as e:  # a destroyed communicator
            raise NcclError(5, str(e)) from None

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802
        self._call(lambda c: c.ptr_all_reduce(sendbuf, recvbuf, count, datatype, op, stream))

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        self._call(lambda c: c.ptr_reduce(sendbuf, recvbuf, count, datatype, op, root, stream))

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
        self._call(lambda c: c.ptr_broadcast(sendbuff, recvbuff, count, datatype, root, stream))

    def bcast(self, buff, count, datatype, root, stream):
        """In place: buff is sent from root and received everywhere else."""
        self._call(lambda c: c.ptr_broadcast(buff, buff, count, datatype, root, stream))

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):  # noqa: N802
        self._call(lambda c: c.ptr_reduce_scatter(sendbuf, recvbuf, recvcount, datatype, op, stream))

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):  # noqa: N802
        self._call(lambda c: c.ptr_all_gather(sendbuf, recvbuf, count, datatype, stream))

    def send(self, sendbuf, count, datatype, peer, stream):
        self._call(lambda c: c.ptr_send(sendbuf, count, datatype, peer, stream))

    def recv(self, recvbuf, count, datatype, peer, stream):
        self._call(lambda c: c.ptr_recv(recvbuf, count, datatype, peer, stream))
