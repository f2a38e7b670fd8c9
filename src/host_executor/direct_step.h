// The direct-lane steps (program.h: kDirect*, kLowp*) over a DirectView: every local rank's
// staging data and arrival counter. Shared by the host executor (through direct_exec.h) and the
// unit tests' program simulator, which builds a view over plain memory.
#pragma once
#include <string>
#include <vector>

#include "program/program.h"
#include "task/task.h"
#include "transports/shm/direct_area.h"

namespace weft {

// Barrier, first half: this rank arrives (its counter goes up by one), publishing `stamp` (what
// it called, op_stamp.h) for this barrier first when the view carries stamps and one is given,
// and `input` (its input for peers to read in place, or null) when the view carries inputs.
void directArrive(const DirectView& v, const OpStamp* stamp = nullptr, uint64_t input = 0);
// After a barrier (until this rank arrives at the next): where this process reads the input `rank`
// published there, or null when it published none (or a window reference this view cannot
// resolve: directUnresolved says so before any read).
const unsigned char* directPublished(const DirectView& v, int rank);
// The first rank whose published window reference this process cannot resolve, or -1.
int directUnresolved(const DirectView& v);
// Whether any rank published its input at the last barrier (step.h kStepIfShared).
bool directAnyPublished(const DirectView& v);
// Once every rank has arrived: the first rank whose stamp for this barrier disagrees with `mine`,
// or -1 (also when the view carries no stamps). *theirs receives its stamp.
int directStampMismatch(const DirectView& v, const OpStamp& mine, OpStamp* theirs);
// Barrier, second half: true once every rank has arrived as often as this one. Ranks that have
// not are appended to *missing when it is given.
bool directAllArrived(const DirectView& v, std::vector<int>* missing = nullptr);
// Runs a data step (every direct op but kDirectBarrier) completely.
void runDirectData(const Task& t, const Step& st, const DirectView& v);

// The low-precision datatypes: float32, bfloat16 and float16.
bool lowpSupportsType(ncclDataType_t dtype);

}  // namespace weft
