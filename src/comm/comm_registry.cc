#include "comm/comm_registry.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

namespace weft {
namespace {
// Lookups (every API call) take the lock shared; only create and destroy take it exclusively.
std::shared_mutex& registryMutex() {
  static std::shared_mutex m;
  return m;
}
std::unordered_set<const ncclComm*>& registry() {
  static std::unordered_set<const ncclComm*> s;
  return s;
}
// Bumped whenever a communicator goes away. A thread remembers the last communicator it found live
// and the generation it saw then: while nothing was destroyed since, the answer still holds, so the
// steady-state check is one load of a rarely written word (no lock shared by every rank's thread).
std::atomic<uint64_t> gGeneration{1};
thread_local const ncclComm* tLastLive = nullptr;
thread_local uint64_t tLastGeneration = 0;
}  // namespace

void registerComm(ncclComm* comm) {
  std::unique_lock lock(registryMutex());
  registry().insert(comm);
}

void unregisterComm(ncclComm* comm) {
  std::unique_lock lock(registryMutex());
  registry().erase(comm);
  gGeneration.fetch_add(1, std::memory_order_release);
}

bool isLiveComm(const ncclComm* comm) {
  uint64_t gen = gGeneration.load(std::memory_order_acquire);
  if (comm == tLastLive && gen == tLastGeneration) return true;
  std::shared_lock lock(registryMutex());
  bool live = registry().count(comm) != 0;
  if (live) {
    tLastLive = comm;
    tLastGeneration = gGeneration.load(std::memory_order_relaxed);
  }
  return live;
}

}  // namespace weft
