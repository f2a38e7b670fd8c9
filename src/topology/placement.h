// Where one rank sits: the fixed-size record every rank contributes to the allgather at
// communicator init. Trivially copyable and the same size on every build, so it crosses the
// bootstrap as raw bytes; link_class.h and placement_query.h answer questions over the gathered
// array.
#pragma once
#include <cstdint>
#include <type_traits>

namespace weft::topo {

struct RankPlacement {
  static constexpr int kMaxPciDepth = 8;      // bridges above a device; real trees stay below 6
  static constexpr int kMaxNvlinkPeers = 12;  // direct GPU-GPU NVLink peers (DGX-1 style meshes)
  static constexpr uint64_t kNone = ~0ull;    // no GPU / no NIC / no such bridge

  uint64_t hostHash;                      // equal on ranks that share memory (base/host_identity.h)
  uint64_t gpuBusId;                      // packed PCI address of the rank's GPU (topology/model.h), kNone in host mode
  uint64_t nicBusId;                      // its NIC (given, or the one closest to its GPU), kNone if none
  uint64_t pciPath[kMaxPciDepth];         // bridges above the GPU (else the NIC), nearest the CPU first
  uint64_t nvlinkPeers[kMaxNvlinkPeers];  // GPUs its GPU reaches over direct NVLinks
  int32_t numaNode;                       // the device's NUMA node, else the process's; -1 unknown
  int32_t processNuma;                    // the NUMA node the process is bound to / runs on; -1 unknown
  uint8_t pciDepth;                       // entries used in pciPath
  uint8_t nvlinkPeerCount;                // entries used in nvlinkPeers
  uint8_t nvswitch;                       // 1 = its GPU has NVLinks to an NVSwitch
  uint8_t reserved[5];                    // zero
};

static_assert(std::is_trivially_copyable_v<RankPlacement> && std::is_standard_layout_v<RankPlacement>);
static_assert(sizeof(RankPlacement) == 200, "the allgathered record must keep one size on every build");

// A record with nothing known but the host (and every optional field marked absent).
inline RankPlacement emptyPlacement(uint64_t hostHash) {
  RankPlacement p{};
  p.hostHash = hostHash;
  p.gpuBusId = RankPlacement::kNone;
  p.nicBusId = RankPlacement::kNone;
  for (uint64_t& b : p.pciPath) b = RankPlacement::kNone;
  for (uint64_t& b : p.nvlinkPeers) b = RankPlacement::kNone;
  p.numaNode = -1;
  p.processNuma = -1;
  return p;
}

}  // namespace weft::topo
