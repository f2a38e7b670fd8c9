// Argument checks for GPU communicators: a buffer the communicator's GPU cannot use, a stream of
// another GPU. Host-mode communicators never call these.
#pragma once
#include "nccl.h"

struct ncclComm;

namespace weft {

ncclResult_t checkDeviceBuffer(ncclComm* comm, const char* fn, const void* p, const char* what);
ncclResult_t checkDeviceStream(ncclComm* comm, const char* fn, const void* stream);

}  // namespace weft
