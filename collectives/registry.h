// The algorithm registry: every algorithm Weft has is one descriptor, declared in its own folder
// (collectives/ring, tree, dda, lowprec, p2p, doubling) and listed once in registry.cc. Everything that
// needs to know the algorithms reads them from here: the tuner (what may run a task, the cost
// table), NCCL_ALGO and RCCL_OVERRIDE_ALGO parsing, op stamps' messages, weft-info, and the
// group that builds the programs. An Algorithm (task/algorithm.h) is a row of the table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/model/algorithm_desc.h"
#include "collectives/model/cost_model.h"
#include "program/program.h"
#include "task/task.h"

namespace weft {

// The table, in registration order (the tuner breaks ties in this order).
int algorithmCount();
const AlgorithmDesc& algorithmDesc(Algorithm a);
// Every registered algorithm, as a mask (bit i: Algorithm(i)).
uint32_t allAlgorithmsMask();
const char* algorithmName(Algorithm a);
// By name or alias, case and separators ignored ("DDA_FLAT", "dda-flat", "DDAFlat").
bool findAlgorithm(const std::string& text, Algorithm* out);
// The row of a name the caller knows is registered (tests, tools); aborts otherwise.
Algorithm algorithmNamed(const char* name);

// What `a` makes of the task: kNo unless the task's kind is one of its kinds, else its rule.
Eligibility eligibility(Algorithm a, const CommShape& shape, const Task& task);
// Scratch bytes the task needs with its algorithm, task.algorithm (0: none).
size_t algorithmScratchBytes(const CommShape& shape, const Task& task);
// Appends the task's sequences, built by its algorithm, task.algorithm.
void buildProgram(const CommShape& shape, const Task& task, Program* prog);

// Estimated microseconds for `nBytes` (NCCL's size convention: AllGather and ReduceScatter count
// the whole gathered buffer, AllGatherv and ReduceScatterv the sum of all counts, the others one
// rank's buffer), or a negative value when the model has no formula for the combination (such
// entries are never chosen by the model). The parts all algorithms share are computed here (one
// rank is a local copy whatever the algorithm); the rest is the algorithm's own formula.
double estimateUs(const ModelInput& in, const HostConstants& hc, CollKind coll, Algorithm algo, Protocol proto,
                  int nChannels, size_t nBytes);

}  // namespace weft
