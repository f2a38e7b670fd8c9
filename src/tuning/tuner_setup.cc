#include "tuning/tuner_setup.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/log.h"
#include "collectives/model/rank_fold.h"
#include "tuning/agreed_constants.h"
#include "tuning/calibration.h"

namespace weft {
namespace {

// What a GPU rank contributes as its cores: enough that the model never shares a core out.
constexpr int32_t kGpuCores = 1 << 16;

int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

std::string initError(int rank, const std::string& what) {
  return "init of rank " + std::to_string(rank) + ": " + what;
}

// Every rank contributes its host's constants and cores; all apply one rule to all contributions
// (agreed_constants.h), then the agreed WEFT_TUNER_CONSTANTS.
ncclResult_t agreeOnMachine(Bootstrap& bootstrap, const TunerInit& init, void (*warn)(const std::string&),
                            AgreedMachine* out, std::string* why) {
  std::vector<HostContribution> all(init.nranks);
  // A GPU rank's work runs in its kernel's blocks, not on the host's cores: no core limit.
  all[init.rank] = init.gpu ? HostContribution{gpuConstants(*init.gpu, nullptr), kGpuCores, 0}
                            : HostContribution{hostConstants(), usableCores(), 0};
  if (init.net) applyNetLink(*init.net, &all[init.rank].constants);
  std::string err;
  ncclResult_t r = bootstrap.allGather(all.data(), sizeof(HostContribution), &err);
  if (r != ncclSuccess) {
    *why = initError(init.rank, "exchanging the machine constants failed: " + err);
    return r;
  }
  *out = combineContributions(all, init.hostOf);
  if (!init.agreed->tunerConstants.empty()) {
    std::string bad;
    applyConstantOverrides(init.agreed->tunerConstants, &out->constants, &bad);
    if (!bad.empty())
      warn("WEFT_TUNER_CONSTANTS: ignoring " + bad + " (expected name=positive number with names " +
           formatHostConstants(HostConstants{}) + ")");
  }
  return ncclSuccess;
}

// The tuner plugin must be the same everywhere (name and ABI version), or ranks would cost the same
// call differently. What it returns per call is checked by every operation's in-band fingerprint,
// which includes the algorithm, protocol and channel count.
ncclResult_t checkPluginAgreement(Bootstrap& bootstrap, const TunerInit& init, const Tuner& tuner, std::string* why) {
  struct Identity {
    char name[64];
    int32_t version;  // 0: no plugin
    int32_t pad;
  };
  std::vector<Identity> all(init.nranks);
  Identity& me = all[init.rank];
  memset(&me, 0, sizeof me);
  if (const TunerPlugin* p = tuner.plugin()) {
    snprintf(me.name, sizeof me.name, "%s", p->name().c_str());
    me.version = p->version();
  }
  std::string err;
  ncclResult_t r = bootstrap.allGather(all.data(), sizeof(Identity), &err);
  if (r != ncclSuccess) {
    *why = initError(init.rank, "exchanging tuner plugin names failed: " + err);
    return r;
  }
  auto describe = [](const Identity& id) {
    return id.version == 0 ? std::string("no tuner plugin")
                           : "tuner plugin \"" + std::string(id.name) + "\" (ABI v" + std::to_string(id.version) + ")";
  };
  std::string differing;
  for (int q = 1; q < init.nranks; ++q)
    if (all[q].version != all[0].version || strcmp(all[q].name, all[0].name) != 0)
      differing += (differing.empty() ? "" : ", ") + ("rank " + std::to_string(q) + " has " + describe(all[q]));
  if (differing.empty()) return ncclSuccess;
  *why = initError(init.rank, "the ranks loaded different tuner plugins: rank 0 has " + describe(all[0]) + " but " +
                                  differing + " (NCCL_TUNER_PLUGIN must load the same plugin on every rank)");
  return ncclInvalidUsage;
}

// Which bits of a rank number in the rounds of recursive doubling can flip without leaving the
// host (ModelInput::sameHostPartnerBits), with the numbering halving-doubling folds to.
uint32_t sameHostPartnerBits(const std::vector<uint64_t>& hostOf) {
  const RankFold fold(int(hostOf.size()));
  uint32_t bits = 0;
  for (int j = 0; j < 31 && (1 << j) < fold.pow2; ++j) {
    bool local = true;
    for (int v = 0; v < fold.pow2 && local; ++v) local = hostOf[fold.rank(v ^ (1 << j))] == hostOf[fold.rank(v)];
    if (local) bits |= 1u << j;
  }
  return bits;
}

// Every pair that folds into one rank shares a host (ModelInput::sameHostFold).
bool sameHostFold(const std::vector<uint64_t>& hostOf) {
  const RankFold fold(int(hostOf.size()));
  for (int i = 0; i < fold.extra; ++i)
    if (hostOf[2 * i] != hostOf[2 * i + 1]) return false;
  return true;
}

}  // namespace

void applyNetLink(const TunerInit::NetLink& link, HostConstants* hc) {
  const HostConstants defaults;
  if (!link.hostTcp) {
    hc->netGBps = link.gBps > 0 ? link.gBps : defaults.netGBps;
    hc->netLatUs = link.latUs > 0 ? link.latUs : defaults.netLatUs;
    return;
  }
  if (link.gBps > 0) hc->netGBps = std::min(hc->netGBps, link.gBps);
  hc->netLatUs = std::max(hc->netLatUs, link.latUs);
}

ModelInput modelInputFor(const TunerInit& init) {
  ModelInput in;
  in.nranks = init.nranks;
  std::vector<uint64_t> hosts = init.hostOf;
  std::sort(hosts.begin(), hosts.end());
  in.nHosts = std::max<int>(1, int(std::unique(hosts.begin(), hosts.end()) - hosts.begin()));
  for (uint64_t h : hosts) {
    int n = int(std::count(init.hostOf.begin(), init.hostOf.end(), h));
    in.ranksPerHost = std::max(in.ranksPerHost, n);
  }
  in.ranksPerMachine = in.ranksPerHost;
  for (uint64_t m : init.machineOf)
    in.ranksPerMachine = std::max(in.ranksPerMachine, int(std::count(init.machineOf.begin(), init.machineOf.end(), m)));
  in.cores = usableCores();
  in.maxChannels = std::max(1, init.nChannels);
  in.minChannels = std::clamp(init.minChannels, 1, in.maxChannels);
  in.slotBytes = std::max<size_t>(1, init.slotBytes);
  in.oneShotMaxBytes = static_cast<size_t>(init.agreed->oneShotMaxBytes);
  in.sameHostPartnerBits = sameHostPartnerBits(init.hostOf);
  in.sameHostFold = sameHostFold(init.hostOf);
  if (init.gpu) in.cores = kGpuCores;  // makeTuner replaces it with the agreed figure
  in.channelsInParallel = init.allOnGpus;
  return in;
}

ncclResult_t makeTuner(Bootstrap& bootstrap, const TunerInit& init, const std::string& pluginSetting,
                       void (*warn)(const std::string&), std::unique_ptr<Tuner>* out, std::string* why) {
  TunerOptions opts = tunerOptionsFrom(*init.agreed, pluginSetting);
  for (const std::string& w : opts.warnings) warn(w);
  AgreedMachine machine;
  ncclResult_t r = agreeOnMachine(bootstrap, init, warn, &machine, why);
  if (r != ncclSuccess) return r;
  ModelInput in = modelInputFor(init);
  in.cores = machine.cores;
  opts.pluginShape = TunerPluginShape{init.commHash, in.nranks, in.nHosts, in.nranks / in.nHosts, in.ranksPerHost};
  *out = std::make_unique<Tuner>(in, machine.constants, std::move(opts));
  const Tuner& tuner = **out;
  r = checkPluginAgreement(bootstrap, init, tuner, why);
  if (r != ncclSuccess) return r;
  std::string source = hostConstantsSource();
  if (init.gpu) gpuConstants(*init.gpu, &source);
  if (init.rank == 0)
    WEFT_INFO(kLogTuning | kLogInit,
              "tuner ready: %d ranks on %d host(s), %d cores, channels %d..%d%s%s; constants "
              "agreed from every host (%s here): %s",
              in.nranks, in.nHosts, in.cores, in.minChannels, in.maxChannels, tuner.plugin() ? ", plugin " : "",
              tuner.plugin() ? tuner.plugin()->name().c_str() : "", source.c_str(),
              formatHostConstants(machine.constants).c_str());
  return ncclSuccess;
}

}  // namespace weft
