// Recursive doubling (collectives/doubling): AllReduce in log2(nranks) rounds. In round j every
// rank swaps its running sum with the rank whose number differs in bit j and adds the two, so each
// rank waits on log2(nranks) hops instead of the nranks-1 of the one-shot ring: the small-message
// algorithm for ranks on several hosts, where every hop is a network message. Host mode,
// power-of-two rank counts, sums (ncclAvg and ncclPreMulSum are sums too).
#pragma once

#include "collectives/model/algorithm_desc.h"

namespace weft {

extern const AlgorithmDesc kDoublingAlgorithm;

void buildDoublingProgram(const CommShape& shape, const Task& task, Program* prog);

}  // namespace weft
