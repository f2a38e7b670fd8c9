#include "comm/comm_algorithms.h"

#include <cstring>
#include <memory>
#include <vector>

#include "base/log.h"
#include "collectives/dda/dda.h"
#include "comm/agreement.h"
#include "comm/comm.h"
#include "comm/comm_error.h"
#include "runtime/device_runtime.h"
#include "transports/net/network.h"
#include "tuning/select.h"
#include "tuning/tuner.h"

namespace weft {

// Declared in comm.h, which only names the Tuner.
void TunerDeleter::operator()(Tuner* t) const { delete t; }

namespace {

TunerInit tunerInitFor(const ncclComm* comm) {
  TunerInit init;
  init.rank = comm->rank;
  init.nranks = comm->nranks;
  init.commHash = comm->commHash;
  for (const RankInfo& r : comm->ranks) {
    init.hostOf.push_back(r.hostHash);
    init.machineOf.push_back(r.machineHash);
  }
  init.nChannels = comm->nChannels;
  init.minChannels = comm->config.minCTAs;
  init.slotBytes = comm->slotBytes;
  init.agreed = &comm->agreed;
  // Every rank knows every rank's device, so all agree on whether all of them run on GPUs.
  init.allOnGpus = !comm->ranks.empty();
  for (const RankInfo& r : comm->ranks) init.allOnGpus = init.allOnGpus && r.device >= 0;
  const int device = comm->ranks.empty() ? -1 : comm->ranks[comm->rank].device;
  dev::DeviceInfo info;
  if (!comm->hostMode && device >= 0 && dev::runtime().deviceInfo(device, &info) == ncclSuccess)
    init.gpu = GpuDescription{strcmp(dev::runtime().name(), "hip") == 0, info.computeMajor, info.computeMinor};
  if (comm->network != nullptr && !comm->netDeviceOrder.empty())
    init.net = netLinkOf(comm->network, comm->netDeviceOrder[0]);
  return init;
}

}  // namespace

std::optional<TunerInit::NetLink> netLinkOf(net::Network* network, int device) {
  net::Properties props;
  if (network->getProperties(device, &props) != ncclSuccess) return std::nullopt;
  return TunerInit::NetLink{std::max(0, props.speedMbps) / 8000.0, std::max(0.0, double(props.latencyUs)),
                            strcmp(network->name(), "Socket") == 0};
}

CommShape commShape(ncclComm* comm) {
  CommShape s;
  s.rank = comm->rank;
  s.nranks = comm->nranks;
  s.nLocal = comm->peers.nLocal();
  s.spansHosts = comm->spansHosts;
  s.nChannels = comm->nChannels;
  s.hostMode = comm->hostMode;
  for (const RankInfo& r : comm->ranks) s.mixedExecutors = s.mixedExecutors || (r.device >= 0) == comm->hostMode;
  s.slotBytes = comm->slotBytes;
  s.agreed = &comm->agreed;
  s.direct = &comm->direct;
  return s;
}

ModelInput modelInputFor(const ncclComm* comm) { return modelInputFor(tunerInitFor(comm)); }

ncclResult_t setupTuner(ncclComm* comm, const std::string& pluginSetting) {
  std::unique_ptr<Tuner> tuner;
  std::string why;
  ncclResult_t r = makeTuner(*comm->bootstrap, tunerInitFor(comm), pluginSetting, warnOncePerProcess, &tuner, &why);
  comm->tuner.reset(tuner.release());
  if (r != ncclSuccess) return setError(comm, r, "%s", why.c_str());
  if (comm->rank == 0 && logEnabled(LogLevel::kInfo, kLogTuning)) logAllReduceChoices(*comm->tuner, commShape(comm));
  // The settings are agreed, so rank 0 speaks for every rank.
  const std::string refused = directLaneRefusal(commShape(comm));
  if (comm->rank == 0 && !refused.empty()) WEFT_WARN("comm %p: %s", static_cast<void*>(comm), refused.c_str());
  return ncclSuccess;
}

double estimateTaskUs(const Task& t) {
  ncclComm* comm = t.comm;
  if (!comm->tuner) return 0;
  const bool peerOnOtherHost = t.root >= 0 && t.root < int(comm->ranks.size()) &&
                               comm->ranks[t.root].hostHash != comm->ranks[comm->rank].hostHash;
  return estimateTaskUs(*comm->tuner, commShape(comm), t, peerOnOtherHost);
}

}  // namespace weft
