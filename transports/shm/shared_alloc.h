// Host memory that the other processes of this host can map: what ncclMemAlloc returns in host
// mode. Each allocation is a sealed memfd mapped shared, whose descriptor stays open, so that a
// window registered over it (ncclCommWindowRegister) can be offered to the communicator's other
// processes (fd_service.h) and read by them in place. Ordinary memory otherwise: the process that
// allocated it uses it as any other.
#pragma once
#include <cstddef>
#include <string>

namespace weft {

// bytes (> 0) of zero-filled memory, page aligned, every page reserved now; null with *why.
void* sharedAlloc(size_t bytes, std::string* why);
// Unmaps an allocation of sharedAlloc; false (nothing done) for any other pointer. Peers that
// mapped it keep their mapping until they unmap it.
bool sharedFree(void* p);

// The allocation holding all of [p, p + bytes): its descriptor (owned by the allocation), its start
// and size. False when no single allocation of sharedAlloc holds the range.
struct SharedAllocation {
  int fd = -1;
  const void* base = nullptr;
  size_t size = 0;
};
bool sharedAllocationOf(const void* p, size_t bytes, SharedAllocation* out);

}  // namespace weft
