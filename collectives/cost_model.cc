#include "collectives/cost_model.h"

#include <algorithm>
#include <cmath>

#include "collectives/cost_path.h"
#include "collectives/registry.h"

namespace weft {

const ConstantField kConstantFields[] = {
    {"copyGBps", &HostConstants::copyGBps, "memcpy bandwidth of one core, cache-resident (GB/s)", true},
    {"reduceGBps", &HostConstants::reduceGBps, "float a+b bandwidth of one core (GB/s of output)", true},
    {"handoffUs", &HostConstants::handoffUs, "cache-line handoff between two cores (us)", false},
    {"stepUs", &HostConstants::stepUs, "executor overhead per FIFO piece (us)", false},
    {"futexWakeUs", &HostConstants::futexWakeUs, "futex wake of a sleeping rank (us)", false},
    {"yieldHandoffUs", &HostConstants::yieldHandoffUs, "handoff between two ranks sharing a core (us)", false},
    {"memGBps", &HostConstants::memGBps, "memcpy bandwidth of one core beyond the caches (GB/s)", true},
    {"peerReadGBps", &HostConstants::peerReadGBps, "one core reading what another just wrote (GB/s)", true},
    {"cacheMiB", &HostConstants::cacheMiB, "working set that still fits the caches (MiB)", true},
    {"netGBps", &HostConstants::netGBps, "network bandwidth between hosts (GB/s)", true},
    {"netLatUs", &HostConstants::netLatUs, "network latency between hosts (us)", false},
    {"crossNumaBwScale", &HostConstants::crossNumaBwScale, "cross-NUMA bandwidth / copyGBps", true},
    {"crossNumaLatScale", &HostConstants::crossNumaLatScale, "cross-NUMA latency / handoffUs", false},
};
const int kNumConstantFields = static_cast<int>(sizeof(kConstantFields) / sizeof(kConstantFields[0]));

const char* linkClassName(LinkClass c) {
  switch (c) {
    case LinkClass::kShm: return "shm";
    case LinkClass::kShmCrossNuma: return "shm-cross-numa";
    case LinkClass::kNet: return "net";
    case LinkClass::kCount: break;
  }
  return "?";
}

int tunedCollIndex(CollKind k) {
  switch (k) {
    case CollKind::kAllReduce: return 0;
    case CollKind::kBroadcast: return 1;
    case CollKind::kReduce: return 2;
    case CollKind::kAllGather: return 3;
    case CollKind::kReduceScatter: return 4;
    default: return -1;
  }
}

CollKind tunedCollKind(int index) {
  constexpr CollKind kKinds[kNumTunedColls] = {CollKind::kAllReduce, CollKind::kBroadcast, CollKind::kReduce,
                                               CollKind::kAllGather, CollKind::kReduceScatter};
  return kKinds[index];
}

Path pathFor(const ModelInput& in, const HostConstants& hc, bool crossesHosts, double workingSet) {
  Path p;
  double bw = workingSet > hc.cacheMiB * 1048576.0 ? std::min(hc.copyGBps, hc.memGBps) : hc.copyGBps;
  double lat = hc.handoffUs;
  if (in.intraLink == LinkClass::kShmCrossNuma) {
    bw *= hc.crossNumaBwScale;
    lat *= hc.crossNumaLatScale;
  }
  p.workScale = std::max(1.0, double(in.ranksPerHost) / std::max(1, in.cores));
  // More ranks than cores: the executor yields at once, so a peer's answer costs a switch to it.
  if (in.ranksPerHost > in.cores) lat = hc.yieldHandoffUs;
  if (crossesHosts) {
    bw = std::min(bw, hc.netGBps);
    lat = std::max(lat, hc.netLatUs);
  }
  p.latUs = lat;
  p.copyPerB = 1.0 / (bw * 1e3);
  p.reducePerB = 1.0 / (std::min(bw, hc.reduceGBps) * 1e3);
  p.peerReadPerB = 1.0 / (std::min(bw, hc.peerReadGBps) * 1e3);
  p.stepUs = hc.stepUs;
  return p;
}

double pipelined(const ModelInput& in, const Path& p, int c, double fillHops, double stepsPerLoop, double stepBytes,
                 double perByte) {
  double perChannel = stepBytes / c;
  double loops = std::max(1.0, std::ceil(perChannel / double(in.slotBytes)));
  double pieceBytes = perChannel / loops;
  double pieces = loops * stepsPerLoop;  // per channel
  double work = c * pieces * (p.stepUs + pieceBytes * perByte) * p.workScale;
  double chain = pieces * (p.latUs + p.stepUs);
  return fillHops * p.latUs + std::max(work, chain);
}

double barrierUs(const ModelInput& in, const Path& p) { return p.latUs * p.workScale + in.nranks * p.stepUs; }

int log2Ceil(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

double estimateUs(const ModelInput& in, const HostConstants& hc, CollKind coll, Algorithm algo, Protocol proto,
                  int nChannels, size_t nBytes) {
  if (tunedCollIndex(coll) < 0 || in.nranks < 1) return -1;
  const double S = std::max<double>(1.0, double(nBytes));
  const int c = std::max(1, nChannels);
  const bool multiHost = in.nHosts > 1;
  // What one host's ranks touch: their inputs and outputs (and staging copies of them).
  const double workingSet = 3.0 * S * std::max(1, in.ranksPerHost);
  const Path p = pathFor(in, hc, multiHost, workingSet);
  if (in.nranks == 1) return p.stepUs + S * p.copyPerB;  // a local copy whatever the algorithm
  if (int(algo) >= algorithmCount()) return -1;
  const AlgorithmDesc& d = algorithmDesc(algo);
  return d.cost != nullptr ? d.cost(in, p, coll, proto, c, S) : -1;
}

double estimateP2pUs(const ModelInput& in, const HostConstants& hc, size_t nBytes, bool crossHost) {
  const Path p = pathFor(in, hc, crossHost, 2.0 * double(nBytes));
  double pieces = std::max(1.0, std::ceil(double(nBytes) / double(in.slotBytes)));
  return p.latUs + pieces * p.stepUs + double(nBytes) * p.copyPerB * p.workScale;
}

}  // namespace weft
