// Low precision (collectives/lowprec): FP8 e4m3 with block scales over the DDA staging areas, for
// AllReduce, AllGather, ReduceScatter and AlltoAll.
#pragma once
#include "collectives/model/algorithm_desc.h"

namespace weft {

extern const AlgorithmDesc kLowPrecisionAlgorithm;

void buildLowPrecisionProgram(const CommShape& shape, const Task& task, Program* prog);

}  // namespace weft
