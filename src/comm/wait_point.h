// Where an executor waits: one stuck chain's operation, its step, and the peer it waits for. The
// host executor makes one to word its errors ("rank 0 is waiting to receive from rank 1 in
// AllReduce #7 ...") and keeps the latest per communicator in a WaitState (wait_state.h), which
// weftCommDumpState reads from any thread. Plain values only, so a snapshot outlives its Task.
#pragma once
#include <cstdint>
#include <string>

#include "program/lane.h"
#include "program/step.h"
#include "task/task.h"

namespace weft {

struct WaitPoint {
  uint64_t opSeq = 0;      // Task::seq: the communicator's operation number
  uint64_t count = 0;      // the operation's count (elements)
  uint64_t done = 0;       // elements of the step already moved
  uint64_t stepCount = 0;  // elements of the step
  int64_t sinceNs = 0;     // when the wait began (base/clock.h), 0 when unknown
  int32_t rank = -1;
  int32_t peer = -1;  // the first rank waited on, -1 when none
  int32_t channel = 0;
  int32_t dtype = 0;  // ncclDataType_t
  uint32_t step = 0;  // 0-based
  uint32_t nSteps = 0;
  CollKind kind = CollKind::kAllReduce;
  StepOp op = StepOp::kSend;
  Lane lane = Lane::kRing;
  bool receiving = false;  // waits for a message (else for room to send)
};

// "rank 0 is waiting to receive from rank 1 in AllReduce #7 (1000 x float32, ring lane, channel 0,
// step 2 of 6: recvReduceSend, 0 of 250 elements done)". On the direct lane, directWhat says what
// the step waits for (the ranks that have not arrived); empty, the first such rank is named.
std::string describeWait(const WaitPoint& w, const std::string& directWhat = {});

}  // namespace weft
