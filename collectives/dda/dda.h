// DDA (collectives/dda): AllReduce (flat or tree, two registry entries), AllGather, ReduceScatter,
// AlltoAll, AllGatherv and ReduceScatterv by direct reads of the peers' staging areas.
#pragma once
#include <string>

#include "collectives/model/algorithm_desc.h"

namespace weft {

extern const AlgorithmDesc kDdaFlatAlgorithm;
extern const AlgorithmDesc kDdaTreeAlgorithm;

// Whether the direct lane can run on this communicator at all: at least two ranks, all on this
// host, shared memory allowed, and the host executor (the only one with a direct lane so far).
// Low precision uses the same lane.
bool directLaneUsable(const CommShape& shape);
// When a setting asks for the direct lane (RCCL_LOW_PRECISION_ENABLE*, RCCL_ENABLE_DDA_ALL_GATHER,
// _REDUCE_SCATTER, _ALL_TO_ALL) on a communicator where it cannot run, the sentence that says so
// and what runs instead; "" otherwise. A setting Weft cannot honour is never ignored in silence.
std::string directLaneRefusal(const CommShape& shape);
// Builds any of the four kinds; AllReduce is the tree variant when treeAllReduce is set (the two
// entries differ only there).
void buildDdaProgram(const CommShape& shape, const Task& task, bool treeAllReduce, Program* prog);
// AllGatherv and ReduceScatterv (dda_v_programs.cc).
void buildDdaVProgram(const CommShape& shape, const Task& task, Program* prog);

}  // namespace weft
