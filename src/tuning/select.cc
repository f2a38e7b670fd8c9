#include "tuning/select.h"

#include "collectives/algorithms.h"
#include "core/comm.h"
#include "core/params.h"
#include "tuning/channels.h"

namespace weft {

void selectAlgorithm(Task* task) {
  task->algorithm = Algorithm::kRing;
  task->protocol = Protocol::kSimple;
  task->nChannels = ringChannels(task->comm, task->count * dataTypeSize(task->dtype));
  // NCCL_ALGO naming one algorithm forces it wherever that algorithm can run the task.
  Algorithm forced;
  if (parseAlgorithmName(param::algo(), &forced) && algorithmSupports(forced, *task)) task->algorithm = forced;
}

}  // namespace weft
