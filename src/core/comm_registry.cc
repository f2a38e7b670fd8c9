#include "core/comm_registry.h"

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
}  // namespace

void registerComm(ncclComm* comm) {
  std::unique_lock lock(registryMutex());
  registry().insert(comm);
}

void unregisterComm(ncclComm* comm) {
  std::unique_lock lock(registryMutex());
  registry().erase(comm);
}

bool isLiveComm(const ncclComm* comm) {
  std::shared_lock lock(registryMutex());
  return registry().count(comm) != 0;
}

}  // namespace weft
