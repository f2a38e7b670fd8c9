// The algorithms Weft has, each turning a Task into Program sequences for one rank.
#pragma once
#include "program/program.h"
#include "task/task.h"
#include "task/algorithm.h"

namespace weft {

// Ring (collectives/ring): AllReduce, Broadcast, Reduce, AllGather, ReduceScatter over nChannels
// rings in rank order.
// AllReduce takes the one-shot ring variant (every input around the ring, then a local reduction
// in rank order) when task.scratch is set; ringOneShotScratchBytes says when and how much.
void buildRingProgram(const Task& task, int nChannels, Program* prog);
// Scratch bytes the one-shot AllReduce needs for this task, or 0 when the ring schedule is better.
size_t ringOneShotScratchBytes(const Task& task);
// Largest per-rank message for which the one-shot AllReduce is used.
size_t ringOneShotMaxBytes(const ncclComm* comm);
// Double binary tree (collectives/tree): AllReduce, Broadcast and Reduce over two complementary
// trees per channel, on tree-lane connection channels 2c and 2c + 1 of channel c.
void buildTreeProgram(const Task& task, int nChannels, Program* prog);
// Point-to-point patterns (collectives/p2p): Send, Recv, AlltoAll, AlltoAllv, Gather, Scatter.
void buildP2pProgram(const Task& task, Program* prog);

// DDA (collectives/dda): AllReduce (flat: kDdaFlat, tree: kDdaTree), AllGather, ReduceScatter and
// AlltoAll (either DDA algorithm) by direct reads of the peers' staging areas.
void buildDdaProgram(const Task& task, Program* prog);
// Whether DDA can run the task: at least two ranks, all on this host, shared memory allowed.
bool ddaEligible(const Task& task);
// The rule of the RCCL_ENABLE_DDA_* switches and size limits: true (and *algo set) when they ask
// for DDA for this task. The tuner calls this; it does not look at NCCL_ALGO.
bool ddaPreferred(const Task& task, Algorithm* algo);
// Low precision (collectives/lowprec): FP8 e4m3 with block scales over the DDA staging areas.
void buildLowPrecisionProgram(const Task& task, Program* prog);
// Whether it can run the task: DDA-eligible, float32/bfloat16/float16, and sum for reductions.
bool lowPrecisionEligible(const Task& task);
// The rule of the RCCL_LOW_PRECISION_ENABLE* switches and WEFT_LOW_PRECISION_MIN_BYTES.
bool lowPrecisionPreferred(const Task& task);

// The dispatch over all algorithms (collectives/dispatch.cc): what the tuner may choose from, and
// how the chosen one is built. Adding an algorithm means one case in each of these.
// Whether `algo` can run this collective task (kind, datatype, op, ranks and where they live).
bool algorithmSupports(Algorithm algo, const Task& task);
// Scratch bytes the task needs from its communicator with algorithm task.algorithm (0: none).
size_t algorithmScratchBytes(const Task& task);
// Appends the task's sequences, built by task.algorithm (collectives) or the p2p patterns.
void buildProgram(const Task& task, Program* prog);

}  // namespace weft
