// What a collective would run with, without running it: RCCL's rcclGetAlgoInfo, which rccl-tests
// calls to print the algorithm and protocol beside each size. The answer comes from the same
// selection a group makes, on the communicator's agreed shape and tuner, so it is what every rank
// would act on. Algorithms are numbered as NCCL numbers its own (tree 0, ring 1; 0..6 are NCCL's
// names) and Weft's others from 7 up, in the registry's order; protocols as NCCL's (LL 0, LL128 1,
// Simple 2). RCCL's own ids from 7 up differ between its releases, so a program names them only
// through rcclGetAlgoName, which answers for Weft's numbering.
#pragma once
#include <cstdint>
#include <string>

#include "nccl.h"

struct ncclComm;

namespace weft {

// func: RCCL's ncclFunc_t (Broadcast 0, Reduce 1, AllGather 2, ReduceScatter 3, AllReduce 4,
// AlltoAll 8, AlltoAllv 9, Scatter 10, Gather 11; the point-to-point ones are not collectives
// and are refused). count is per rank, as in the matching call. ncclInvalidArgument with *why
// for what names no collective.
ncclResult_t describeChoice(ncclComm* comm, int func, uint64_t count, ncclDataType_t dtype, int* algo, int* protocol,
                            int* nChannels, std::string* why);
// The name of an algorithm or protocol id as describeChoice numbers them; nullptr for none.
const char* choiceAlgorithmName(int id);
const char* choiceProtocolName(int id);

}  // namespace weft
