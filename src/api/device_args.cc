#include "api/device_args.h"

#include "comm/comm.h"
#include "comm/comm_error.h"
#include "gpu_executor/device_state.h"
#include "runtime/device_runtime.h"

namespace weft {

ncclResult_t checkDeviceBuffer(ncclComm* comm, const char* fn, const void* p, const char* what) {
  dev::PointerInfo info;
  if (dev::runtime().pointerInfo(p, &info) != ncclSuccess)
    return setError(comm, ncclInvalidArgument, "%s: rank %d: cannot tell where %s %p lives", fn, comm->rank, what, p);
  const int device = comm->gpu->device();
  switch (info.kind) {
    case dev::MemKind::kDevice:
      if (info.device == device) return ncclSuccess;
      return setError(comm, ncclInvalidArgument,
                      "%s: rank %d: %s %p is memory of GPU %d, but the communicator is on GPU %d", fn, comm->rank, what,
                      p, info.device, device);
    case dev::MemKind::kManaged:
    case dev::MemKind::kPinned: return ncclSuccess;  // the GPU reaches it
    case dev::MemKind::kHost: break;
  }
  return setError(comm, ncclInvalidArgument,
                  "%s: rank %d: %s %p is ordinary host memory, which GPU %d cannot access; a GPU communicator takes "
                  "device memory (cudaMalloc, hipMalloc or ncclMemAlloc)",
                  fn, comm->rank, what, p, device);
}

ncclResult_t checkDeviceStream(ncclComm* comm, const char* fn, const void* stream) {
  int device = -1;
  if (dev::runtime().streamDevice(const_cast<void*>(stream), &device) != ncclSuccess)
    return setError(comm, ncclInvalidArgument, "%s: rank %d: stream %p is not a valid stream", fn, comm->rank, stream);
  if (device != comm->gpu->device())
    return setError(comm, ncclInvalidArgument,
                    "%s: rank %d: stream %p belongs to GPU %d, but the communicator is on GPU %d", fn, comm->rank,
                    stream, device, comm->gpu->device());
  return ncclSuccess;
}

}  // namespace weft
