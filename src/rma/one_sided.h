// One-sided operations in host mode: NCCL 2.30's ncclPutSignal, ncclSignal and ncclWaitSignal.
//
// Between ranks of one host the origin writes a put straight into the target's window: with
// memcpy when both ranks are threads of one process or the target's window is ncclMemAlloc memory
// this process mapped at registration (rma/window.h), otherwise with cross-memory attach
// (process_vm_writev) between processes. The signal that follows is an atomic add to a counter in the target's shared
// rank block (transports/rank_block.h), made after the data, so a target that sees the count sees
// the bytes. Ranks reached over the network get the put through the proxies (rma/net_puts.h),
// which count the signal in the same counter. Either way the target takes no part until it waits.
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

// Copies `bytes` from src into `peer`'s window `win` at `offset`, then (signal) counts one signal
// at `peer`. The caller has checked that the bytes fit the window. Returns once src may be reused.
ncclResult_t putToWindow(ncclComm* comm, int peer, const ncclWindow_vidmem& win, size_t offset, const void* src,
                         size_t bytes, bool signal, std::string* why);

// Counts one signal at `peer` from this rank, and wakes `peer` if it sleeps in a wait.
ncclResult_t signalPeer(ncclComm* comm, int peer, std::string* why);

// Waits until, for every entry, `peer` has signalled this rank at least `total` times since the
// communicator was made. Fails when a peer dies, the communicator is aborted, or WEFT_TIMEOUT_MS
// passes without every count reached; the message names the rank, the peer and the counts.
struct SignalWait {
  int peer;
  uint64_t total;
};
ncclResult_t waitSignals(ncclComm* comm, const std::vector<SignalWait>& waits, std::string* why);

}  // namespace weft
