// The communicator's side of the algorithms and the tuner: what they see of a communicator (its
// CommShape, its ModelInput), the init of its tuner, and the estimate of a task. Algorithms and
// the tuner never read ncclComm themselves; everything they use passes through here.
#pragma once
#include <string>

#include "collectives/model/comm_shape.h"
#include "collectives/model/cost_model.h"
#include "nccl.h"
#include "task/task.h"
#include "tuning/tuner_setup.h"

struct ncclComm;

namespace weft {
namespace net {
class Network;
}

// The communicator as algorithms and selection see it (no allocation: called per task).
CommShape commShape(ncclComm* comm);
// The cost model's view of the communicator (this process's cores; init agrees on them).
ModelInput modelInputFor(const ncclComm* comm);
// Builds comm->tuner at the end of init (the cost model needs the ranks' hosts) from the agreed
// settings and machine constants (tuning/tuner_setup.h). Settings that do not parse are warned
// about; a tuner plugin that fails is reported and left out; ranks that loaded different plugins
// (name or ABI version, pluginSetting being this rank's NCCL_TUNER_PLUGIN) fail the init, naming
// the ranks. Then, with NCCL_DEBUG_SUBSYS=TUNING, rank 0 logs its AllReduce choices.
ncclResult_t setupTuner(ncclComm* comm, const std::string& pluginSetting);
// What the tuner takes from the network a rank reaches other hosts with: its device's speed and
// latency, and whether it is the Socket network (the host's TCP stack). Empty when the device
// cannot describe itself.
std::optional<TunerInit::NetLink> netLinkOf(net::Network* network, int device);
// The model's estimate (us) for a task whose algorithm was selected (ncclGroupSimulateEnd); 0
// before the communicator has a tuner.
double estimateTaskUs(const Task& task);

}  // namespace weft
