// The one place that maps an Algorithm to the folder of collectives/ that implements it.
#include "collectives/algorithms.h"
#include "core/comm.h"
#include "tuning/channels.h"

namespace weft {

namespace {
bool isCollective(CollKind k) {
  return k == CollKind::kAllReduce || k == CollKind::kBroadcast || k == CollKind::kReduce ||
         k == CollKind::kAllGather || k == CollKind::kReduceScatter;
}
}  // namespace

bool algorithmSupports(Algorithm algo, const Task& task) {
  if (!isCollective(task.kind)) return false;
  switch (algo) {
    case Algorithm::kRing: return true;
    case Algorithm::kTree:
      return task.kind == CollKind::kAllReduce || task.kind == CollKind::kBroadcast || task.kind == CollKind::kReduce;
    default: return false;
  }
}

size_t algorithmScratchBytes(const Task& task) {
  if (!isCollective(task.kind)) return 0;
  switch (task.algorithm) {
    case Algorithm::kRing: return ringOneShotScratchBytes(task);
    case Algorithm::kTree: return 0;
    default: return 0;
  }
}

void buildProgram(const Task& task, Program* prog) {
  if (!isCollective(task.kind)) {
    buildP2pProgram(task, prog);
    return;
  }
  switch (task.algorithm) {
    case Algorithm::kTree: buildTreeProgram(task, task.nChannels, prog); return;
    case Algorithm::kRing:
    default:
      buildRingProgram(task, task.nChannels, prog);
      return;
  }
}

}  // namespace weft
