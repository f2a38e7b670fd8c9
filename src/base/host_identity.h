// Which host a process runs on, as a 64-bit hash: ranks with equal hashes share memory.
#pragma once
#include <cstdint>
#include <string>

namespace weft {
// Hash of the host name and kernel boot id, or of WEFT_HOST_ID when set (tests use it to pretend
// that processes of one machine run on different hosts).
uint64_t hostHash();
// The host's name for messages: WEFT_HOST_ID when set, else gethostname().
std::string hostName();
// A random 64-bit value from the kernel.
uint64_t randomU64();
}  // namespace weft
