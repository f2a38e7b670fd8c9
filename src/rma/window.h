// A window (ncclCommWindowRegister): a buffer of every rank that its peers may write into with
// ncclPutSignal. Registration is collective: in host mode the ranks exchange where their buffers
// are and how large, so that an origin on the same host can write a peer's bytes itself while the
// peer is busy elsewhere, and every origin can check a put against the target's size. (The target
// takes no part in a put; it only waits for the signal that follows.)
#pragma once
#include <cstddef>
#include <string>

#include "comm/window_table.h"
#include "nccl.h"

namespace weft {

// The collective half of a registration: every rank publishes its buffer over the bootstrap, the
// window enters the communicator's table, and the first registration connects the network links
// of one-sided puts to the peers reached over the network.
ncclResult_t exchangeWindow(ncclWindow_vidmem* win, std::string* why);
// Takes the window out of the table: once this returns, no put arriving over the network writes
// into its buffer.
void forgetWindow(ncclWindow_vidmem* win);

// ncclMemAlloc's host memory: memory the host's other processes can map, so that a window over it
// is read and written in place by them (transports/shm/shared_alloc.h). Null, with *why, when it
// cannot be had.
void* allocShareableHostMemory(size_t bytes, std::string* why);
// Frees memory of allocShareableHostMemory; false (nothing done) for any other pointer.
bool freeShareableHostMemory(void* p);

}  // namespace weft
