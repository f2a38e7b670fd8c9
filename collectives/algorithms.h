// The algorithms Weft has, each turning a Task into Program sequences for one rank.
#pragma once
#include "device/program.h"
#include "enqueue/task.h"

namespace weft {

// Ring (collectives/ring): AllReduce, Broadcast, Reduce, AllGather, ReduceScatter over nChannels
// rings in rank order.
void buildRingProgram(const Task& task, int nChannels, Program* prog);
// Point-to-point patterns (collectives/p2p): Send, Recv, AlltoAll, AlltoAllv, Gather, Scatter.
void buildP2pProgram(const Task& task, Program* prog);

}  // namespace weft
