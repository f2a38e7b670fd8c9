#include "tuning/select.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "collectives/algorithms.h"
#include "core/agreement.h"
#include "core/comm.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/result.h"
#include "tuning/agreed_constants.h"
#include "tuning/calibration.h"
#include "tuning/tuner.h"

namespace weft {

void TunerDeleter::operator()(Tuner* t) const { delete t; }

namespace {

// RCCL_ENABLE_DDA_ALL_REDUCE and its size limits bound where the model may pick DDA AllReduce.
bool ddaAllowed(Algorithm a, const Task& t) {
  if ((a != Algorithm::kDdaFlat && a != Algorithm::kDdaTree) || t.kind != CollKind::kAllReduce) return true;
  const size_t bytes = t.count * dataTypeSize(t.dtype);
  const param::Agreed& agreed = t.comm->agreed;
  if (!agreed.ddaAllReduce) return false;
  return bytes <= size_t(a == Algorithm::kDdaFlat ? agreed.ddaFlatMaxBytes : agreed.ddaTreeMaxBytes);
}

// NCCL_DEBUG_SUBSYS=TUNING: what this communicator's AllReduce of float would run with at each
// power-of-two size, and every algorithm's estimate, so a choice can be checked against a benchmark.
void logAllReduceChoices(ncclComm* comm) {
  for (size_t bytes = 8; bytes <= (size_t(1) << 26); bytes *= 2) {
    Task t;
    t.comm = comm;
    t.kind = CollKind::kAllReduce;
    t.dtype = ncclFloat32;
    t.count = bytes / sizeof(float);
    selectAlgorithm(&t);
    std::string line;
    for (int a = 0; a < kNumAlgorithms; ++a) {
      float best = -1;
      for (int p = 0; p < kNumProtocols; ++p) {
        float c = comm->tuner->cost(0, Tuner::bucketOf(bytes), Algorithm(a), Protocol(p));
        if (c >= 0 && (best < 0 || c < best)) best = c;
      }
      if (best >= 0) line += std::string(" ") + algorithmName(Algorithm(a)) + "=" + std::to_string(std::lround(best));
    }
    WEFT_INFO(kLogTuning, "tuner: AllReduce %zu B -> %s/%s/%d ch (estimates us:%s)", bytes, algorithmName(t.algorithm),
              protocolName(t.protocol), t.nChannels, line.c_str());
  }
}

int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

}  // namespace

ModelInput modelInputFor(const ncclComm* comm) {
  ModelInput in;
  in.nranks = comm->nranks;
  std::vector<uint64_t> hosts;
  for (const RankInfo& r : comm->ranks) hosts.push_back(r.hostHash);
  std::sort(hosts.begin(), hosts.end());
  in.nHosts = std::max<int>(1, int(std::unique(hosts.begin(), hosts.end()) - hosts.begin()));
  for (uint64_t h : hosts) {
    int n = int(std::count_if(comm->ranks.begin(), comm->ranks.end(), [h](const RankInfo& r) { return r.hostHash == h; }));
    in.ranksPerHost = std::max(in.ranksPerHost, n);
  }
  in.cores = usableCores();
  in.maxChannels = std::max(1, comm->nChannels);
  in.minChannels = std::clamp(comm->config.minCTAs, 1, in.maxChannels);
  in.slotBytes = std::max<size_t>(1, comm->slotBytes);
  in.oneShotMaxBytes = ringOneShotMaxBytes(comm);
  return in;
}

namespace {

// Every rank contributes its host's constants and cores; all apply one rule to all contributions
// (agreed_constants.h), then the agreed WEFT_TUNER_CONSTANTS.
ncclResult_t agreeOnMachine(ncclComm* comm, AgreedMachine* out) {
  std::vector<HostContribution> all(comm->nranks);
  all[comm->rank] = HostContribution{hostConstants(), usableCores(), 0};
  std::string why;
  ncclResult_t r = comm->bootstrap->allGather(all.data(), sizeof(HostContribution), &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d: exchanging the machine constants failed: %s", comm->rank, why.c_str());
  std::vector<uint64_t> hosts;
  for (const RankInfo& info : comm->ranks) hosts.push_back(info.hostHash);
  *out = combineContributions(all, hosts);
  if (!comm->agreed.tunerConstants.empty()) {
    std::string bad;
    applyConstantOverrides(comm->agreed.tunerConstants, &out->constants, &bad);
    if (!bad.empty())
      warnOncePerProcess("WEFT_TUNER_CONSTANTS: ignoring " + bad + " (expected name=positive number with names " +
                         formatHostConstants(HostConstants{}) + ")");
  }
  return ncclSuccess;
}

// The tuner plugin must be the same everywhere (name and ABI version), or ranks would cost the same
// call differently. What it returns per call is checked by every operation's in-band fingerprint,
// which includes the algorithm, protocol and channel count.
ncclResult_t checkPluginAgreement(ncclComm* comm) {
  struct Identity {
    char name[64];
    int32_t version;  // 0: no plugin
    int32_t pad;
  };
  std::vector<Identity> all(comm->nranks);
  Identity& me = all[comm->rank];
  memset(&me, 0, sizeof me);
  if (const TunerPlugin* p = comm->tuner->plugin()) {
    snprintf(me.name, sizeof me.name, "%s", p->name().c_str());
    me.version = p->version();
  }
  std::string why;
  ncclResult_t r = comm->bootstrap->allGather(all.data(), sizeof(Identity), &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d: exchanging tuner plugin names failed: %s", comm->rank, why.c_str());
  auto describe = [](const Identity& id) {
    return id.version == 0 ? std::string("no tuner plugin")
                           : "tuner plugin \"" + std::string(id.name) + "\" (ABI v" + std::to_string(id.version) + ")";
  };
  std::string differing;
  for (int q = 1; q < comm->nranks; ++q)
    if (all[q].version != all[0].version || strcmp(all[q].name, all[0].name) != 0)
      differing += (differing.empty() ? "" : ", ") + ("rank " + std::to_string(q) + " has " + describe(all[q]));
  if (differing.empty()) return ncclSuccess;
  return setError(comm, ncclInvalidUsage,
                  "init of rank %d: the ranks loaded different tuner plugins: rank 0 has %s but %s (NCCL_TUNER_PLUGIN "
                  "must load the same plugin on every rank)",
                  comm->rank, describe(all[0]).c_str(), differing.c_str());
}

}  // namespace

ncclResult_t setupTuner(ncclComm* comm, const std::string& pluginSetting) {
  TunerOptions opts = tunerOptionsFrom(comm->agreed, pluginSetting);
  for (const std::string& w : opts.warnings) warnOncePerProcess(w);
  AgreedMachine machine;
  WEFT_CHECK(agreeOnMachine(comm, &machine));
  ModelInput in = modelInputFor(comm);
  in.cores = machine.cores;
  opts.pluginShape = TunerPluginShape{comm->commHash, in.nranks, in.nHosts, in.nranks / in.nHosts, in.ranksPerHost};
  comm->tuner.reset(new Tuner(in, machine.constants, std::move(opts)));
  WEFT_CHECK(checkPluginAgreement(comm));
  if (comm->rank == 0)
    WEFT_INFO(kLogTuning | kLogInit, "tuner ready: %d ranks on %d host(s), %d cores, channels %d..%d%s%s; constants "
              "agreed from every host (%s here): %s",
              in.nranks, in.nHosts, in.cores, in.minChannels, in.maxChannels,
              comm->tuner->plugin() ? ", plugin " : "",
              comm->tuner->plugin() ? comm->tuner->plugin()->name().c_str() : "", hostConstantsSource().c_str(),
              formatHostConstants(machine.constants).c_str());
  if (comm->rank == 0 && logEnabled(LogLevel::kInfo, kLogTuning)) logAllReduceChoices(comm);
  return ncclSuccess;
}

size_t tunedBytes(const Task& t) {
  size_t bytes = t.count * dataTypeSize(t.dtype);
  if (t.kind == CollKind::kAllGather || t.kind == CollKind::kReduceScatter) bytes *= size_t(t.comm->nranks);
  return bytes;
}

void selectAlgorithm(Task* task) {
  ncclComm* comm = task->comm;
  task->algorithm = Algorithm::kRing;
  task->protocol = Protocol::kSimple;
  task->nChannels = 1;
  // The RCCL switches come first, in RCCL's order. Low precision changes results, so it runs only
  // where the user enabled it (RCCL_LOW_PRECISION_ENABLE*), never on the model's say-so.
  // GPU communicators run ring and tree programs; the direct lane (DDA, low precision) has only a
  // host executor so far.
  const bool directLane = comm->hostMode;
  if (directLane && lowPrecisionPreferred(*task)) {
    task->algorithm = Algorithm::kLowPrecision;
    return;
  }
  // RCCL_ENABLE_DDA_ALL_GATHER / _REDUCE_SCATTER / _ALL_TO_ALL force direct reads up to their
  // limits; DDA AllReduce is the model's choice (within RCCL_ENABLE_DDA_ALL_REDUCE's limits).
  Algorithm dda;
  if (directLane && task->kind != CollKind::kAllReduce && ddaPreferred(*task, &dda)) {
    task->algorithm = dda;
    return;
  }
  if (tunedCollIndex(task->kind) < 0 || !comm->tuner) return;
  uint32_t supported = 0;
  for (int a = 0; a < kNumAlgorithms; ++a)
    if (algorithmSupports(Algorithm(a), *task) && Algorithm(a) != Algorithm::kLowPrecision &&
        ddaAllowed(Algorithm(a), *task) &&
        (directLane || (Algorithm(a) != Algorithm::kDdaFlat && Algorithm(a) != Algorithm::kDdaTree)))
      supported |= 1u << a;
  TunerChoice c = comm->tuner->choose(task->kind, tunedBytes(*task), supported);
  task->algorithm = c.algorithm;
  task->protocol = c.protocol;
  task->nChannels = std::clamp(c.nChannels, 1, std::max(1, comm->nChannels));
}

double estimateTaskUs(const Task& t) {
  const ncclComm* comm = t.comm;
  if (!comm->tuner) return 0;
  const Tuner& tuner = *comm->tuner;
  if (tunedCollIndex(t.kind) >= 0)
    return std::max(0.0, estimateUs(tuner.input(), tuner.constants(), t.kind, t.algorithm, t.protocol, t.nChannels,
                                    tunedBytes(t)));
  size_t bytes = t.count * dataTypeSize(t.dtype);
  switch (t.kind) {
    case CollKind::kSend:
    case CollKind::kRecv:
    case CollKind::kCopy: {
      bool crossHost = t.kind != CollKind::kCopy && t.root >= 0 && t.root < int(comm->ranks.size()) &&
                       comm->ranks[t.root].hostHash != comm->ranks[comm->rank].hostHash;
      return estimateP2pUs(tuner.input(), tuner.constants(), bytes, crossHost);
    }
    default:
      // AlltoAll(v), Gather, Scatter: one transfer per peer, issued side by side.
      return estimateP2pUs(tuner.input(), tuner.constants(), bytes * size_t(std::max(1, comm->nranks - 1)),
                           tuner.input().nHosts > 1);
  }
}

}  // namespace weft
