// The algorithm registry: every algorithm Weft has is one descriptor, declared in its own folder
// (collectives/ring, tree, dda, lowprec, p2p) and listed once in registry.cc. Everything that
// needs to know the algorithms reads them from here: the tuner (what may run a task, the cost
// table), NCCL_ALGO and RCCL_OVERRIDE_ALGO parsing, op stamps' messages, weft-info, and the
// group that builds the programs. An Algorithm (task/algorithm.h) is a row of the table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/comm_shape.h"
#include "collectives/cost_path.h"
#include "program/program.h"
#include "task/task.h"

namespace weft {

// How an algorithm may come to run a task.
enum class Eligibility : uint8_t {
  kNo,      // it cannot run the task here, or the agreed settings leave it out
  kModel,   // the tuner may choose it, where the cost model ranks it first
  kForced,  // a setting asks for it for this task (RCCL_ENABLE_DDA_*, RCCL_LOW_PRECISION_ENABLE*)
};

struct AlgorithmDesc {
  const char* name;     // as logs, mismatch messages and weft-info print it; NCCL_ALGO takes it
  const char* aliases;  // other spellings NCCL_ALGO takes, comma separated ("": none)
  const char* summary;  // what it does, in one line (weft-info)
  uint32_t kinds;       // the CollKinds it builds, as kindBit() bits
  const char* needs;    // its conditions beyond the kind, in words (weft-info; "" when none)
  // It changes results (low precision): the model never picks it, and a setting that asks for it
  // wins over one that asks for an exact algorithm (RCCL's order).
  bool lossy;
  // It spreads a collective over several channels; otherwise it runs on one, and the tuner costs
  // only that.
  bool channelled;
  // The one rule of when it may run a task of one of its kinds: ranks, hosts, types, ops and the
  // agreed settings (never a per-rank parameter).
  Eligibility (*eligible)(const CommShape& shape, const Task& task);
  // Scratch bytes the task needs from the communicator (null: never any).
  size_t (*scratchBytes)(const CommShape& shape, const Task& task);
  // Appends this rank's sequences for the task.
  void (*build)(const CommShape& shape, const Task& task, Program* prog);
  // Its cost formula for a tuned collective of `bytes` (cost_model.h's convention) on `in` with
  // one hop costing `p`: microseconds, or < 0 where it has none. Null: the tuner never costs it.
  double (*cost)(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int nChannels, double bytes);
};

constexpr uint32_t kindBit(CollKind k) { return 1u << static_cast<int>(k); }

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

}  // namespace weft
