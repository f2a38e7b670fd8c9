// One-sided operations in host mode: NCCL 2.30's ncclPutSignal, ncclSignal and ncclWaitSignal.
//
// The origin writes a put straight into the target's window: with memcpy when both ranks are
// threads of one process, with cross-memory attach (process_vm_writev) between processes of one
// host. The signal that follows is an atomic add to a counter in the target's shared rank block
// (transports/rank_block.h), made after the data, so a target that sees the count sees the bytes.
// The target takes no part until it waits; nothing of it has to be in a call while a put lands.
// Ranks on other hosts cannot be reached this way: oneSidedReach says so, and the calls refuse.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "rma/window.h"

namespace weft {

// Whether this host lets one process write another's memory (process_vm_writev), as puts between
// rank processes need: "allowed", or why not. Forks a child that reads from this process, so that
// a ptrace policy that only admits descendants (kernel.yama.ptrace_scope 1) is seen as refusing
// ranks that are siblings. For weft-info; not called by communicators.
std::string crossMemoryAttachProbe();

// Empty when this rank can put to and signal `peer`; otherwise why it cannot.
std::string oneSidedReach(const ncclComm* comm, int peer);

// Copies `bytes` from src into `peer`'s window `target` at `offset`. The caller has checked the
// reach and that the bytes fit the window.
ncclResult_t putToWindow(ncclComm* comm, int peer, const WindowSpan& target, size_t offset, const void* src,
                         size_t bytes, std::string* why);

// Counts one signal at `peer` from this rank, and wakes `peer` if it sleeps in a wait.
void sendSignal(ncclComm* comm, int peer);

// Waits until, for every entry, `peer` has signalled this rank at least `total` times since the
// communicator was made. Fails when a peer dies, the communicator is aborted, or WEFT_TIMEOUT_MS
// passes without every count reached; the message names the rank, the peer and the counts.
struct SignalWait {
  int peer;
  uint64_t total;
};
ncclResult_t waitSignals(ncclComm* comm, const std::vector<SignalWait>& waits, std::string* why);

}  // namespace weft
