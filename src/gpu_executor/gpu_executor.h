// The GPU executor's host side: turns a Program into one kernel launch per communicator on the
// caller's stream (launch_desc.h), connecting the links it needs first. The call returns once the
// work is enqueued, as NCCL's do; completion is the stream's business.
#pragma once
#include <cstddef>
#include <span>

#include "nccl.h"
#include "program/program.h"
#include "task/task.h"

struct ncclComm;

namespace weft::gpu {

// Makes comm a GPU communicator on the caller's current device (at init).
ncclResult_t setupDevice(ncclComm* comm);
// Launches prog's sequences (all of GPU communicators), one launch per communicator. tasks: the
// operations prog was built from (Sequence::task indexes them).
ncclResult_t executeOnDevice(const Program& prog, std::span<const Task> tasks);
// Device scratch of at least `bytes` for comm's next launch.
ncclResult_t deviceScratch(ncclComm* comm, size_t bytes, void** out);
// A failure a kernel recorded becomes comm's asynchronous error, with a message naming the rank,
// the peer and the operation. Cheap when nothing failed.
void pollDeviceError(ncclComm* comm);
// ncclCommAbort: queued and running kernels of comm stop waiting.
void abortDevice(ncclComm* comm);
// Before comm's links go away: waits (bounded) for its kernels, then releases device resources.
void teardownDevice(ncclComm* comm);

}  // namespace weft::gpu
