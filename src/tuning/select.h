// Picks the algorithm, protocol and channel count of each collective task when its group runs,
// from the communicator's Tuner (tuner.h), built at init.
#pragma once
#include <string>

#include "task/task.h"
#include "nccl.h"
#include "tuning/cost_model.h"

namespace weft {

// Builds comm->tuner at the end of init (the cost model needs the ranks' hosts) from the agreed
// settings and machine constants (agreed_constants.h). Settings that do not parse are warned about;
// a tuner plugin that fails is reported and left out; ranks that loaded different plugins (name or
// ABI version, pluginSetting being this rank's NCCL_TUNER_PLUGIN) fail the init, naming the ranks.
ncclResult_t setupTuner(ncclComm* comm, const std::string& pluginSetting);
// The model's view of a communicator (weft-info builds one without a communicator).
ModelInput modelInputFor(const ncclComm* comm);

// Sets task->algorithm, task->protocol and task->nChannels: a table lookup, no allocation.
void selectAlgorithm(Task* task);
// The model's estimate (us) for a task whose algorithm was selected (ncclGroupSimulateEnd).
double estimateTaskUs(const Task& task);
// The size the tuner and tuner plugins see for a task (NCCL's convention: AllGather and
// ReduceScatter count the whole gathered buffer).
size_t tunedBytes(const Task& task);

}  // namespace weft
