// Group semantics: ncclGroupStart/End nest; operations issued inside a group (on any number of
// communicators) run together at the outermost ncclGroupEnd, which returns when all are done.
// Outside a group an operation runs at once. State is per thread, as in NCCL.
#pragma once
#include <functional>

#include "nccl.h"
#include "task/task.h"

namespace weft {

ncclResult_t groupStart();
ncclResult_t groupEnd();
bool inGroup();
// ncclGroupSimulateEnd: ends the group like groupEnd (deferred inits run) but, instead of running
// the operations, sets *estimatedUs to the cost model's estimate of their time and drops them.
ncclResult_t groupSimulateEnd(float* estimatedUs);
// Records a validated task: runs it now, or at the end of the current group.
ncclResult_t enqueue(Task&& task);
// A nccl<Coll>Config call's algSelection: turns task->algSelection into the rows the task may run
// with (task->callRows), on the communicator's agreed shape and tuner. A selection that cannot be
// honoured with forceAlgSelection set is ncclInvalidArgument, with a message naming fn.
ncclResult_t applyAlgSelection(const char* fn, Task* task);
// Defers work that NCCL runs at the end of a group (communicator init and split issued inside one).
// At ncclGroupEnd every deferred job runs on its own thread, side by side, so that one thread can
// create all ranks of a communicator; then the group's operations run.
void groupDefer(std::function<ncclResult_t()> job);
// Runs job at ncclGroupEnd after the group's operations, if they all succeeded, on this thread and
// in the order given (ncclAllReduceWithBias's bias, which needs the reduced result).
void groupAfter(std::function<ncclResult_t()> job);
// Marks the current group as failed (an argument check failed inside it): ncclGroupEnd reports it.
void groupRecordError(ncclResult_t code);

}  // namespace weft
