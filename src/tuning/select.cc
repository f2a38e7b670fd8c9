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
  // The RCCL switches: low precision first, then DDA (RCCL's order), each only when enabled.
  Algorithm dda;
  if (lowPrecisionPreferred(*task))
    task->algorithm = Algorithm::kLowPrecision;
  else if (ddaPreferred(*task, &dda))
    task->algorithm = dda;
  Algorithm forced;
  if (parseAlgorithmName(param::algo(), &forced) && algorithmSupports(forced, *task)) task->algorithm = forced;
}

}  // namespace weft
