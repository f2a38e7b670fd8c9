#include "comm/shared_input.h"

#include <mutex>

#include "comm/comm.h"
#include "comm/rank_locality.h"
#include "transports/shm/direct_area.h"

namespace weft {
namespace {

bool within(const void* p, size_t bytes, const void* buff, size_t size) {
  const auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(buff);
  return a >= b && a - b <= size && bytes <= size - (a - b);
}

// Below this an input is staged whatever its buffer: the copy costs less than looking the buffer up
// under the registration lock on every call (benchmarks/run_register_compare.sh: publishing gained
// nothing up to 512 B, and DDA flat publishes only from 8 KiB anyway).
constexpr size_t kMinBytes = 2048;

}  // namespace

uint64_t sharedInputOf(ncclComm* comm, const Task& t) {
  const size_t bytes = t.count * dataTypeSize(t.dtype);
  // Read without the lock: most communicators register nothing, and this runs on every call.
  if (comm->registeredBuffers.load(std::memory_order_relaxed) == 0) return 0;
  if (t.kind != CollKind::kAllReduce || t.spec.preMul || bytes < kMinBytes || comm->nranks < 2) return 0;
  if (!comm->agreed.mismatchCheck) return 0;
  const bool oneSpace = allRanksOnThisHost(comm) && ranksInOtherAddressSpaces(comm) == 0;
  const auto address = reinterpret_cast<uint64_t>(t.sendbuff);
  std::lock_guard<std::mutex> lock(comm->regMutex);
  if (oneSpace) {
    for (const auto& r : comm->registrations)
      if (within(t.sendbuff, bytes, r->buff, r->size)) return address;
    for (const auto& w : comm->windowHandles)
      if (within(t.sendbuff, bytes, w->buff, w->size)) return address;
    return 0;
  }
  for (const auto& w : comm->windowHandles) {
    if (!w->readableByPeers || !within(t.sendbuff, bytes, w->buff, w->size)) continue;
    // Host mode names the window by its registration id (the host executor looks it up); GPU ranks
    // by its row of the device window table, which their kernels read.
    const uint64_t ref = comm->hostMode ? w->id : w->gpuSlot < 0 ? UINT64_MAX : static_cast<uint64_t>(w->gpuSlot);
    const uint64_t offset = address - reinterpret_cast<uint64_t>(w->buff);
    if (ref <= kPublishedMaxWindowId && offset <= kPublishedMaxOffset) return publishedWindowRef(ref, offset);
  }
  return 0;
}

}  // namespace weft
