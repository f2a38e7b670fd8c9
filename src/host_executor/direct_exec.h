// The host executor's side of the direct lane: one call per attempt at a direct step, which never
// blocks. It maps the staging areas on first use, arrives at and checks barriers (waking the
// peers, so a sleeping peer sees the arrival), and runs data steps; and it says what a stuck
// direct step waits for, naming the ranks that have not arrived. The part that works on a
// DirectView is apart from the mapping, so that the unit tests run it over plain memory.
#pragma once
#include <string>
#include <vector>

#include "program/program.h"
#include "task/task.h"
#include "transports/shm/direct_area.h"

namespace weft {

enum class DirectProgress {
  kDone,      // the step is complete
  kArrived,   // a barrier: this rank arrived, the peers have not all (call again)
  kWaiting,   // nothing moved (call again)
  kFailed,    // *why says why
  kMismatch,  // a peer arrived at the barrier from a different call (op_stamp.h); *why names both
};

// *phase is the cursor's per-step state (0 when the step starts; 1 once a barrier's arrival is
// made, so that a retry does not arrive twice).
DirectProgress advanceDirectStep(const Task& t, const Step& st, size_t* phase, std::string* why);

// The same over areas already mapped: v is every rank's staging data and arrival counter, and
// wakePeers(comm) runs right after this rank arrives at a barrier.
DirectProgress stepDirect(const Task& t, const Step& st, const DirectView& v, size_t* phase, std::string* why,
                          void (*wakePeers)(ncclComm*));

// For timeout and liveness messages: what the step waits for, and the ranks it waits on.
std::string describeDirectWait(const Task& t, const Step& st, size_t phase, std::vector<int>* waitingOn);

// The barrier half of that, over a view: "at a direct-access barrier for ranks 2, 3 (not arrived yet)".
std::string describeDirectBarrier(const DirectView& v, std::vector<int>* waitingOn);

}  // namespace weft
