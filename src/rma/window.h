// A window (ncclCommWindowRegister): a buffer of every rank that its peers may write into with
// ncclPutSignal. Registration is collective: in host mode the ranks exchange where their buffers
// are, so that an origin can write a peer's bytes itself while the peer is busy elsewhere (the
// target takes no part in a put; it only waits for the signal that follows).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace weft {

// One rank's buffer, as that rank's process addresses it.
struct WindowSpan {
  uint64_t addr = 0;
  uint64_t size = 0;
};

}  // namespace weft

struct ncclWindow_vidmem {
  ncclComm* comm;
  void* buff;
  size_t size;
  int flags;
  // Every rank's buffer, by rank, once the registration's exchange ran (host mode); empty before,
  // and on GPU communicators, which have no one-sided operations yet.
  std::vector<weft::WindowSpan> spans;
};

namespace weft {

// The collective half of a registration: every rank publishes its buffer over the bootstrap.
ncclResult_t exchangeWindow(ncclWindow_vidmem* win, std::string* why);

}  // namespace weft
