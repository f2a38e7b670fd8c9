// The one place that maps an Algorithm to the folder of collectives/ that implements it.
#include "collectives/algorithms.h"
#include "comm/comm.h"

namespace weft {

namespace {
bool isCollective(CollKind k) {
  return k == CollKind::kAllReduce || k == CollKind::kBroadcast || k == CollKind::kReduce ||
         k == CollKind::kAllGather || k == CollKind::kReduceScatter;
}
}  // namespace

bool algorithmSupports(Algorithm algo, const Task& task) {
  switch (algo) {
    case Algorithm::kRing: return isCollective(task.kind);
    case Algorithm::kTree:
      return task.kind == CollKind::kAllReduce || task.kind == CollKind::kBroadcast || task.kind == CollKind::kReduce;
    // AlltoAll is a point-to-point pattern unless one of these is chosen for it.
    case Algorithm::kDdaFlat:
    case Algorithm::kDdaTree: return ddaEligible(task);
    case Algorithm::kLowPrecision: return lowPrecisionEligible(task);
    default: return false;
  }
}

size_t algorithmScratchBytes(const Task& task) {
  if (!isCollective(task.kind)) return 0;
  switch (task.algorithm) {
    case Algorithm::kRing: return ringOneShotScratchBytes(task);
    case Algorithm::kTree: return 0;
    // The direct lane stages data in the communicator's staging areas, not in its scratch.
    case Algorithm::kDdaFlat:
    case Algorithm::kDdaTree:
    case Algorithm::kLowPrecision: return 0;
    default: return 0;
  }
}

void buildProgram(const Task& task, Program* prog) {
  if (task.algorithm == Algorithm::kDdaFlat || task.algorithm == Algorithm::kDdaTree) {
    buildDdaProgram(task, prog);
    return;
  }
  if (task.algorithm == Algorithm::kLowPrecision) {
    buildLowPrecisionProgram(task, prog);
    return;
  }
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
