// Picks the algorithm, protocol and channel count of each collective task when its group runs.
#pragma once
#include "enqueue/task.h"

namespace weft {

// Sets task->algorithm, task->protocol and task->nChannels.
void selectAlgorithm(Task* task);

}  // namespace weft
