// Recursive doubling (collectives/doubling): AllReduce in log2(nranks) rounds. In round j every
// rank swaps its running sum with the rank whose number differs in bit j and adds the two, so each
// rank waits on log2(nranks) hops instead of the nranks-1 of the one-shot ring: the small-message
// algorithm for ranks on several hosts, where every hop is a network message. Host mode,
// power-of-two rank counts, sums (ncclAvg and ncclPreMulSum are sums too).
#pragma once

#include "collectives/model/algorithm_desc.h"

namespace weft {

extern const AlgorithmDesc kDoublingAlgorithm;

// Network latencies a round across hosts pays beyond one per piece: it completes only once both
// partners have reached it, where a ring's hop needs only its receiver. On the 2-core development
// VM, every rank on its cores, 8 B over loopback: a halving-doubling round took 1.4-2.1 times a
// ring hop on 4x1, 2x2, 3x2 and 4x2 hosts x ranks (0.7 on 3x1).
constexpr double kRendezvousHops = 1;

void buildDoublingProgram(const CommShape& shape, const Task& task, Program* prog);

// Recursive halving-doubling (halving_programs.cc): a reduce-scatter by halving, then an
// all-gather by doubling, 2 log2(nranks) rounds in which each rank moves about twice its share of
// the buffer instead of the whole buffer per round: doubling's counterpart for large messages.
// Host mode, ranks on more than one host, any number of them (rank_fold.h).
extern const AlgorithmDesc kHalvingDoublingAlgorithm;

void buildHalvingDoublingProgram(const CommShape& shape, const Task& task, Program* prog);

}  // namespace weft
