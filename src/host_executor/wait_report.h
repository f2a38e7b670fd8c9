// What the host executor does while it waits (host_executor.cc calls these only when idle, never
// while data moves): say where it waits, look for reasons to stop waiting, and, once a run failed,
// tell everyone who needs to know.
#pragma once
#include <cstdint>

#include "host_executor/connection_fabric.h"
#include "host_executor/stamp_exchange.h"
#include "nccl.h"

namespace weft {

// Records, for each communicator of the run, where its first unfinished chain waits (since
// sinceNs), for weftCommDumpState; clearWaits takes that back once the run moves or ends.
void publishWaits(const HostRunner& run, int64_t sinceNs);
void clearWaits(const HostRunner& run);

// Turns an abort, a dead or failed peer, a failed link or a passed deadline into the run's error,
// with a message naming the rank, the peer, the operation and the step.
ncclResult_t checkHealth(HostRunner& run, StampExchange& exchange, bool deadlinePassed, int64_t idleNs);

// The slow path of mismatch detection (stamp_exchange.h): tells the peers each stuck chain waits
// on what this rank called, and compares what they told it.
ncclResult_t exchangeStamps(HostRunner& run, StampExchange& exchange);

// A run that failed on a link or a remote peer: when another rank reports a mismatch (it closed
// its links because of it), that mismatch becomes the run's error, as on every other rank.
void preferReportedMismatch(HostRunner& run, StampExchange& exchange);

// A failed run: its communicators are failed, the local peers learn the cause, the other ranks a
// mismatch this rank found, and every link closes so that network peers stop waiting too.
void finishFailedRun(const HostRunner& run);

}  // namespace weft
