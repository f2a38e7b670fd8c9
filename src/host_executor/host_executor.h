// The host executor: runs a Program on the calling thread until every sequence is done. It never
// blocks on one connection while another could move: each pass tries every chain (the stepping
// core, chain_runner.h), and only when none can move does the thread spin briefly, then sleep on
// its doorbell (futex) until a peer rings it. Every wait is bounded: no progress for
// WEFT_TIMEOUT_MS, a local peer that exited or aborted, or ncclCommAbort on one of the
// communicators ends the run with an error that names the rank, the peer, the operation and the
// step (wait_report.h). While it waits, each communicator says where (weftCommDumpState).
#pragma once
#include <span>

#include "nccl.h"
#include "program/program.h"
#include "task/task.h"

namespace weft {

// tasks: the operations prog was built from (Sequence::task indexes them).
ncclResult_t executeOnHost(const Program& prog, std::span<const Task> tasks);

}  // namespace weft
