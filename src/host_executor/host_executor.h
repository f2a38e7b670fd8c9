// The host executor: runs a Program on the calling thread until every sequence is done. It never
// blocks on one connection while another could move: each pass tries every sequence, and only when
// none can move does the thread spin briefly, then sleep on its doorbell (futex) until a peer rings
// it. Every wait is bounded: no progress for WEFT_TIMEOUT_MS, a local peer that exited or aborted,
// or ncclCommAbort on one of the communicators ends the run with an error that names the rank, the
// peer, the operation and the step.
#pragma once
#include "program/program.h"
#include "nccl.h"

namespace weft {

ncclResult_t executeOnHost(const Program& prog);

}  // namespace weft
