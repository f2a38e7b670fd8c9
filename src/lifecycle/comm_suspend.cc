// ncclCommSuspend, ncclCommResume and ncclCommMemStats.
//
// What suspend releases (NCCL_SUSPEND_MEM) is everything a communicator makes on first use: the
// FIFOs of its connections (shared memory, network buffers), the direct lane's staging areas and
// the algorithms' scratch. All of it is made again, lazily, by the first operations after resume,
// exactly as after init. What stays is what init made: the bootstrap, the rank's shared block that
// local peers watch, the agreed settings and the tuner; and the network links of one-sided puts,
// which a window registration made collectively and no first use could make again.
//
// The direct lane's round count is kept: every rank keeps the same count, and its arrival counters
// are relative, so areas made anew start in step.
//
// Both calls are collective. Suspend gathers every rank's flags over the bootstrap, which also waits
// until every rank has finished its own operations, so no peer still reads a FIFO when it goes;
// ranks that passed different flags all refuse, since one side dropping a connection the other
// kept would leave the keeper writing into a FIFO nobody reads. Resume waits again, so no rank
// makes a new FIFO while a peer still holds the old one under the same name.
#include <string>
#include <vector>

#include "base/log.h"
#include "comm/comm.h"
#include "comm/comm_error.h"
#include "lifecycle/comm_lifecycle.h"

namespace weft {
namespace {

// Bytes suspend would release now.
uint64_t releasableBytes(const ncclComm* comm) {
  return comm->connections.ownedBytes(Lane::kRma, false) + comm->direct.ownedBytes() +
         comm->scratchBytes.load(std::memory_order_relaxed);
}

// Bytes suspend keeps: the rank's shared block, which this rank created (host mode), and the
// network links of one-sided puts (src/rma), which only a collective registration makes.
uint64_t persistentBytes(const ncclComm* comm) {
  return (comm->peers.self() != nullptr ? rankBlockBytes(comm->nranks) : 0) +
         comm->connections.ownedBytes(Lane::kRma, true);
}

ncclResult_t barrier(ncclComm* comm, const char* fn) {
  std::string why;
  ncclResult_t r = comm->bootstrap->barrier(&why);
  if (r != ncclSuccess)
    return setError(comm, r, "%s: rank %d waiting for the other ranks failed: %s", fn, comm->rank, why.c_str());
  return ncclSuccess;
}

}  // namespace

ncclResult_t commSuspend(ncclComm* comm, int flags) {
  const char* fn = "ncclCommSuspend";
  if (!comm->hostMode)
    return setError(comm, ncclInvalidUsage,
                    "%s: suspending a GPU communicator is not implemented yet (its kernels hold their FIFOs); "
                    "host-mode communicators support it",
                    fn);
  std::vector<int32_t> all(static_cast<size_t>(comm->nranks), 0);
  all[static_cast<size_t>(comm->rank)] = flags;
  std::string why;
  ncclResult_t r = comm->bootstrap->allGather(all.data(), sizeof(int32_t), &why);
  if (r != ncclSuccess)
    return setError(comm, r, "%s: rank %d waiting for the other ranks failed: %s", fn, comm->rank, why.c_str());
  for (int i = 0; i < comm->nranks; ++i)
    if (all[static_cast<size_t>(i)] != all[0])
      return setError(comm, ncclInvalidArgument,
                      "%s: rank 0 passed flags 0x%x but rank %d 0x%x; every rank must suspend the same way (nothing "
                      "was suspended)",
                      fn, all[0], i, all[static_cast<size_t>(i)]);
  // Checked after the gather, so that every rank refuses, not one rank while the others wait.
  if ((flags & ~NCCL_SUSPEND_MEM) != 0)
    return setError(comm, ncclInvalidArgument, "%s: unknown flags 0x%x (only NCCL_SUSPEND_MEM is defined)", fn, flags);
  if ((flags & NCCL_SUSPEND_MEM) != 0) {
    const uint64_t released = releasableBytes(comm);
    const size_t links = comm->connections.clearExcept(Lane::kRma);
    comm->direct.clear();
    std::vector<uint64_t>().swap(comm->scratch);
    comm->scratchBytes.store(0, std::memory_order_relaxed);
    WEFT_INFO(kLogInit, "ncclCommSuspend: rank %d released %llu bytes (%zu connections, staging areas, scratch)",
              comm->rank, static_cast<unsigned long long>(released), links);
  }
  comm->setState(CommState::kSuspended);
  return ncclSuccess;
}

ncclResult_t commResume(ncclComm* comm) {
  const char* fn = "ncclCommResume";
  if (comm->getState() != CommState::kSuspended)
    return setError(comm, ncclInvalidUsage, "%s: communicator is not suspended", fn);
  ncclResult_t r = barrier(comm, fn);
  if (r != ncclSuccess) return r;
  comm->setState(CommState::kReady);
  WEFT_INFO(kLogInit, "ncclCommResume: rank %d resumed; connections are made again on first use", comm->rank);
  return ncclSuccess;
}

ncclResult_t commMemStat(ncclComm* comm, ncclCommMemStat_t stat, uint64_t* value) {
  const uint64_t releasable = releasableBytes(comm);
  const uint64_t persistent = persistentBytes(comm);
  switch (static_cast<int>(stat)) {
    case ncclStatGpuMemSuspend: *value = releasable; return ncclSuccess;
    case ncclStatGpuMemSuspended: *value = comm->getState() == CommState::kSuspended ? 1 : 0; return ncclSuccess;
    case ncclStatGpuMemPersist: *value = persistent; return ncclSuccess;
    case ncclStatGpuMemTotal: *value = releasable + persistent; return ncclSuccess;
    default: return setError(comm, ncclInvalidArgument, "ncclCommMemStats: unknown stat %d", static_cast<int>(stat));
  }
}

}  // namespace weft
