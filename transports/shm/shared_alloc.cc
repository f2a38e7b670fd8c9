#include "transports/shm/shared_alloc.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include "transports/shm/shm_memory.h"

namespace weft {
namespace {

struct Entry {
  int fd;
  size_t size;
};

std::mutex gMutex;
std::map<uintptr_t, Entry>& allocations() {
  static auto* m = new std::map<uintptr_t, Entry>();  // never freed: frees may come late in exit
  return *m;
}

}  // namespace

void* sharedAlloc(size_t bytes, std::string* why) {
  const size_t pages = (bytes + 4095) / 4096 * 4096;
  const MemoryRoom room = memoryRoom();
  if (pages > room.bytes) {
    *why = "not enough memory for " + std::to_string(bytes) + " bytes (" + std::to_string(room.bytes) +
           " bytes available: " + room.source + ")";
    return nullptr;
  }
  const int fd = memfd_create("weft-memalloc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    *why = std::string("memfd_create failed: ") + strerror(errno);
    return nullptr;
  }
  // Every page reserved now, so that running out is this call's error and not a SIGBUS later; and
  // sealed, so that no process mapping it can resize it under the others.
  if (ftruncate(fd, static_cast<off_t>(pages)) != 0 || fallocate(fd, 0, 0, static_cast<off_t>(pages)) != 0) {
    *why = "cannot reserve " + std::to_string(pages) + " bytes: " + strerror(errno);
    close(fd);
    return nullptr;
  }
  (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  void* p = mmap(nullptr, pages, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *why = "mmap of " + std::to_string(pages) + " bytes failed: " + strerror(errno);
    close(fd);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(gMutex);
  allocations()[reinterpret_cast<uintptr_t>(p)] = Entry{fd, pages};
  return p;
}

bool sharedFree(void* p) {
  Entry e{};
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = allocations().find(reinterpret_cast<uintptr_t>(p));
    if (it == allocations().end()) return false;
    e = it->second;
    allocations().erase(it);
  }
  munmap(p, e.size);
  close(e.fd);
  return true;
}

bool sharedAllocationOf(const void* p, size_t bytes, SharedAllocation* out) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = allocations().upper_bound(a);
  if (it == allocations().begin()) return false;
  --it;
  if (a - it->first > it->second.size || bytes > it->second.size - (a - it->first)) return false;
  *out = SharedAllocation{it->second.fd, reinterpret_cast<const void*>(it->first), it->second.size};
  return true;
}

}  // namespace weft
