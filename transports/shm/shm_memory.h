// How much memory a new shared-memory segment may still take. Segments are memfds, so they are
// ordinary shared memory charged to this process's memory cgroup: the room is the smaller of what
// the kernel says is available (MemAvailable + SwapFree) and what is left below the cgroup's limit.
// Reserving more than that would not fail cleanly: the OOM killer would pick a process instead.
#pragma once
#include <cstdint>
#include <string>

namespace weft {

struct MemoryRoom {
  uint64_t bytes = UINT64_MAX;  // UINT64_MAX when nothing could be read
  std::string source;           // where the limit comes from, for messages
};

MemoryRoom memoryRoom();

}  // namespace weft
