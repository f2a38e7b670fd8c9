// One-sided puts to ranks reached over the network (other hosts, or every peer under
// NCCL_SHM_DISABLE=1). The first window registration connects, collectively, one link each way to
// every such peer (the RMA lane). An origin cuts a put into messages of at most a FIFO slot, each
// with a small header naming the window, the offset and whether a signal follows; its proxy sends
// them. The target's proxy, on its own thread, writes each message into the window and, after the
// last one, counts the signal in the target's rank block, so the target's application takes no
// part: it may be computing, or waiting in ncclWaitSignal.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"

struct ncclComm;

namespace weft {

// True when this rank reaches `peer`'s windows over the network (else by a memory copy or
// cross-memory attach). A rank reaches itself directly.
bool putsOverNetwork(const ncclComm* comm, int peer);

// Collective, at the communicator's first window registration: connects the RMA lane's links to
// and from every peer reached over the network. Nothing to do when there is none.
ncclResult_t connectPutLinks(ncclComm* comm, std::string* why);

// Sends `bytes` from src to `peer`'s window `windowId` at `offset`, then (signal) one signal.
// Returns once the bytes are in this rank's link buffers (src may be reused); the target applies
// them in order.
ncclResult_t netPut(ncclComm* comm, int peer, uint64_t windowId, uint64_t offset, const void* src, size_t bytes,
                    bool signal, std::string* why);

// Empty while the link from `peer` is healthy; otherwise what happened to it.
std::string netPutLinkFailure(const ncclComm* comm, int peer);

// While a thread puts to or waits for a peer reached over the network, it moves the network itself
// (as an executor does inside an operation), so a message leaves or is delivered without a switch
// to the proxy thread, which meanwhile sleeps; before the thread sleeps, or when it is done, it
// hands the network back. Off (on false): does nothing.
class NetworkPoller {
 public:
  explicit NetworkPoller(bool on);
  ~NetworkPoller();
  NetworkPoller(const NetworkPoller&) = delete;
  NetworkPoller& operator=(const NetworkPoller&) = delete;
  // One pass over the network unless another thread is in one; true if anything moved.
  bool progress();
  void beforeSleep();
  void afterSleep();

 private:
  bool on_;
  bool polling_ = true;
};

}  // namespace weft
