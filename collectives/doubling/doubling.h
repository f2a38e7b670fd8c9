// Recursive doubling (collectives/doubling): AllReduce in log2(nranks) rounds. In round j every
// rank swaps its running sum with the rank whose number differs in bit j and adds the two, so each
// rank waits on log2(nranks) hops instead of the nranks-1 of the one-shot ring: the small-message
// algorithm for ranks on several hosts, where every hop is a network message. Host mode,
// power-of-two rank counts, sums (ncclAvg and ncclPreMulSum are sums too).
#pragma once

#include "collectives/model/algorithm_desc.h"

namespace weft {

extern const AlgorithmDesc kDoublingAlgorithm;

// One pairwise round's exchange of `bytes` each way, as both schedules' costs price it: within a
// host the handoff (the bytes are the caller's copy work), across hosts the network's latency per
// piece (one piece in flight), one more for the partners to meet, and the network's bandwidth.
double pairwiseRoundUs(const ModelInput& in, const Path& p, double bytes, bool local);

void buildDoublingProgram(const CommShape& shape, const Task& task, Program* prog);

// Recursive halving-doubling (halving_programs.cc): a reduce-scatter by halving, then an
// all-gather by doubling, 2 log2(nranks) rounds in which each rank moves about twice its share of
// the buffer instead of the whole buffer per round: doubling's counterpart for large messages.
// Host mode, ranks on more than one host, any number of them (rank_fold.h).
extern const AlgorithmDesc kHalvingDoublingAlgorithm;

void buildHalvingDoublingProgram(const CommShape& shape, const Task& task, Program* prog);

}  // namespace weft
