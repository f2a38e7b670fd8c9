// Point-to-point patterns (collectives/p2p): Send, Recv, a local copy, AlltoAll, AlltoAllv,
// Gather, Scatter and AllGatherv, one sequence per (peer, direction).
#pragma once
#include "collectives/model/algorithm_desc.h"

namespace weft {

extern const AlgorithmDesc kP2pAlgorithm;

void buildP2pProgram(const CommShape& shape, const Task& task, Program* prog);

}  // namespace weft
