#include "collectives/model/cost_model.h"

#include <algorithm>
#include <cmath>

#include "collectives/model/cost_path.h"

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
    case CollKind::kAllGatherv: return 5;
    case CollKind::kReduceScatterv: return 6;
    default: return -1;
  }
}

CollKind tunedCollKind(int index) {
  constexpr CollKind kKinds[kNumTunedColls] = {CollKind::kAllReduce,     CollKind::kBroadcast,
                                               CollKind::kReduce,        CollKind::kAllGather,
                                               CollKind::kReduceScatter, CollKind::kAllGatherv,
                                               CollKind::kReduceScatterv};
  return kKinds[index];
}

double estimateP2pUs(const ModelInput& in, const HostConstants& hc, size_t nBytes, bool crossHost) {
  const Path p = pathFor(in, hc, crossHost, 2.0 * double(nBytes));
  double pieces = std::max(1.0, std::ceil(double(nBytes) / double(in.slotBytes)));
  return p.latUs + pieces * p.stepUs + double(nBytes) * (p.copyPerB + p.memPerB) * p.workScale;
}

}  // namespace weft
