// Double binary tree (collectives/tree): AllReduce, Broadcast and Reduce over two complementary
// trees per channel, on tree-lane connection channels 2c and 2c + 1 of channel c.
#pragma once
#include "collectives/model/algorithm_desc.h"

namespace weft {

extern const AlgorithmDesc kTreeAlgorithm;

void buildTreeProgram(const CommShape& shape, const Task& task, int nChannels, Program* prog);

}  // namespace weft
