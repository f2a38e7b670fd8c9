// Ring (collectives/ring): AllReduce, Broadcast, Reduce, AllGather and ReduceScatter, and their
// uneven forms AllGatherv and ReduceScatterv, over nChannels rings in rank order; for small
// AllReduce the one-shot ring variant.
#pragma once
#include <cstddef>

#include "collectives/model/algorithm_desc.h"

namespace weft {

extern const AlgorithmDesc kRingAlgorithm;

// AllReduce takes the one-shot variant (every input around the ring, then a local reduction in
// rank order) when task.scratch is set; ringOneShotScratchBytes says when and how much.
void buildRingProgram(const CommShape& shape, const Task& task, int nChannels, Program* prog);
// AllGatherv and ReduceScatterv (ring_v_programs.cc); buildRingProgram passes them on.
void buildRingVProgram(const CommShape& shape, const Task& task, int nChannels, Program* prog);
// Scratch bytes the one-shot AllReduce needs for this task, or 0 when the ring schedule runs.
size_t ringOneShotScratchBytes(const CommShape& shape, const Task& task);

}  // namespace weft
