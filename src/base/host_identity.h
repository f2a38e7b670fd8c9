// Which host a process runs on, as a 64-bit hash: ranks with equal hashes share memory.
#pragma once
#include <cstdint>
#include <string>

namespace weft {
// Hash of the host name and kernel boot id, or of WEFT_HOST_ID when set (tests use it to pretend
// that processes of one machine run on different hosts).
uint64_t hostHash();
// Which machine, as a 64-bit hash of the kernel's boot id alone: WEFT_HOST_ID and the host name do
// not change it. Processes that pretend to be on different hosts (WEFT_HOST_ID, network namespaces
// with host names of their own) still share this machine's cores, which is what decides whether
// a waiting rank may spin (ncclComm::coresOversubscribed).
uint64_t machineHash();
// The host's name for messages: WEFT_HOST_ID when set, else gethostname().
std::string hostName();
// A random 64-bit value from the kernel.
uint64_t randomU64();
}  // namespace weft
