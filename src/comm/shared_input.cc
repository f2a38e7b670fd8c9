#include "comm/shared_input.h"

#include <mutex>

#include "comm/comm.h"

namespace weft {
namespace {

bool allRanksInThisProcess(const ncclComm* comm) {
  const RankInfo& me = comm->ranks[comm->rank];
  for (const RankInfo& r : comm->ranks)
    if (r.pid != me.pid || r.hostHash != me.hostHash) return false;
  return true;
}

bool within(const void* p, size_t bytes, const void* buff, size_t size) {
  const auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(buff);
  return a >= b && a - b <= size && bytes <= size - (a - b);
}

}  // namespace

const void* sharedInputOf(ncclComm* comm, const Task& t) {
  const size_t bytes = t.count * dataTypeSize(t.dtype);
  if (t.kind != CollKind::kAllReduce || t.spec.preMul || bytes == 0 || comm->nranks < 2) return nullptr;
  if (!comm->agreed.mismatchCheck || !allRanksInThisProcess(comm)) return nullptr;
  std::lock_guard<std::mutex> lock(comm->regMutex);
  for (const auto& r : comm->registrations)
    if (within(t.sendbuff, bytes, r->buff, r->size)) return t.sendbuff;
  for (const auto& w : comm->windowHandles)
    if (within(t.sendbuff, bytes, w->buff, w->size)) return t.sendbuff;
  return nullptr;
}

}  // namespace weft
