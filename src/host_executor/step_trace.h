// The trace's "step" and "wait" events (trace/trace.h) as the host executor records them. Called
// only when a trace is being written: the stepping core tests trace::on() first.
#pragma once
#include <cstdint>

#include "comm/wait_point.h"
#include "program/program.h"
#include "task/task.h"

namespace weft {

// A step of sequence `sequence` (its index in the program) finished; it began at startNs (its
// first piece, or a direct-lane step's first attempt).
void traceStep(const Task& t, const Sequence& s, uint32_t sequence, uint32_t step, const Step& st, int64_t startNs);

// The executor waited from startNs to endNs where w says (w.rank: the communicator's rank).
void traceWait(int traceRank, const WaitPoint& w, int64_t startNs, int64_t endNs);

}  // namespace weft
