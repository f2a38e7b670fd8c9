// How two ranks reach each other, nearest first: the tuner's cost model picks bandwidth and
// latency per class. Header-only: it needs nothing but the two gathered records.
#pragma once
#include <cstdint>

#include "topology/placement.h"

namespace weft::topo {

enum class LinkClass : uint8_t {
  kSameGpu = 0,    // both ranks drive the same GPU
  kNvLink = 1,     // their GPUs are joined by NVLink (directly or through an NVSwitch)
  kPciSwitch = 2,  // their devices sit below a common PCI bridge/switch (no trip through the CPU)
  kSameNuma = 3,   // same NUMA node: traffic crosses one CPU's root complex / memory
  kCrossNuma = 4,  // same host, different NUMA nodes: crosses the inter-socket link (NCCL's SYS)
  kNet = 5,        // different hosts
};

inline const char* linkClassName(LinkClass c) {
  switch (c) {
    case LinkClass::kSameGpu: return "GPU";
    case LinkClass::kNvLink: return "NVL";
    case LinkClass::kPciSwitch: return "PIX";
    case LinkClass::kSameNuma: return "NUMA";
    case LinkClass::kCrossNuma: return "SYS";
    case LinkClass::kNet: return "NET";
  }
  return "?";
}

inline bool hasGpu(const RankPlacement& p) { return p.gpuBusId != RankPlacement::kNone; }

// True when the two records' devices share at least one bridge.
inline bool sharePciBridge(const RankPlacement& a, const RankPlacement& b) {
  for (int i = 0; i < a.pciDepth && i < RankPlacement::kMaxPciDepth; ++i)
    for (int j = 0; j < b.pciDepth && j < RankPlacement::kMaxPciDepth; ++j)
      if (a.pciPath[i] == b.pciPath[j]) return true;
  return false;
}

inline bool nvlinked(const RankPlacement& a, const RankPlacement& b) {
  if (!hasGpu(a) || !hasGpu(b)) return false;
  if (a.nvswitch && b.nvswitch) return true;
  for (int i = 0; i < a.nvlinkPeerCount && i < RankPlacement::kMaxNvlinkPeers; ++i)
    if (a.nvlinkPeers[i] == b.gpuBusId) return true;
  for (int i = 0; i < b.nvlinkPeerCount && i < RankPlacement::kMaxNvlinkPeers; ++i)
    if (b.nvlinkPeers[i] == a.gpuBusId) return true;
  return false;
}

// The class of the path between two ranks. Unknown NUMA nodes (-1) count as different, so a rank
// whose placement is unknown is never assumed closer than it is.
inline LinkClass classifyLink(const RankPlacement& a, const RankPlacement& b) {
  if (a.hostHash != b.hostHash) return LinkClass::kNet;
  if (hasGpu(a) && a.gpuBusId == b.gpuBusId) return LinkClass::kSameGpu;
  if (nvlinked(a, b)) return LinkClass::kNvLink;
  if (sharePciBridge(a, b)) return LinkClass::kPciSwitch;
  if (a.numaNode >= 0 && a.numaNode == b.numaNode) return LinkClass::kSameNuma;
  return LinkClass::kCrossNuma;
}

}  // namespace weft::topo
