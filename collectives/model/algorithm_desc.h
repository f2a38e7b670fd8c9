// What an algorithm declares about itself: the descriptor each algorithm's folder defines and
// collectives/registry.cc lists. Kept apart from the registry's lookups so that the algorithms
// include only this and the registry includes the algorithms, never the other way round.
#pragma once
#include <cstddef>
#include <cstdint>

#include "collectives/model/comm_shape.h"
#include "collectives/model/cost_path.h"
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
  // Its program for a task depends only on the communicator's shape and on the task's kind, count,
  // type, operator, root, protocol, channels and whether it has scratch: a repeat of the same call
  // on the same thread may run the program built last time (enqueue/group.cc; never for the v
  // kinds, whose per-rank counts are not in that key). False for builders that hand out state as
  // they build (DDA's and low precision's staging rounds).
  bool reusable;
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

}  // namespace weft
