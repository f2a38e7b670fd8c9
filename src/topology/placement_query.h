// Building this rank's RankPlacement from a Topology, and questions over every rank's record.
#pragma once
#include <cstdint>
#include <vector>

#include "nccl.h"
#include "topology/model.h"
#include "topology/placement.h"

namespace weft::topo {

// The record for a rank on the host that t describes. gpu and nic are the rank's devices
// (kNoBusId for none); with a GPU but no NIC given, the NIC closest to the GPU is chosen.
// processNuma is where the process runs (HostSummary::numaNode).
RankPlacement makeRankPlacement(const Topology& t, uint64_t hostHash, int processNuma, BusId gpu, BusId nic);

// The NIC that shares the most PCI bridges with gpu, else one on the GPU's NUMA node; kNoBusId
// when the topology has none.
BusId closestNic(const Topology& t, BusId gpu);

// This process's record: the system topology (topology/system.h), this host's hash and binding.
// gpuBusId is the PCI address of the rank's GPU ("" in host mode); an address the topology does
// not list is an ncclInvalidUsage error.
ncclResult_t localRankPlacement(const char* gpuBusId, RankPlacement* out);

enum class Scope { kHost, kNuma, kPciSwitch, kGpu };
bool sharesScope(const RankPlacement& a, const RankPlacement& b, Scope s);
// Every rank that shares scope s with rank (itself included), ascending.
std::vector<int> ranksSharing(const std::vector<RankPlacement>& all, int rank, Scope s);

// Ranks grouped by host, in order of each host's first rank.
struct HostLayout {
  int nHosts = 0;
  std::vector<int> hostOf;       // rank -> host index
  std::vector<int> localRankOf;  // rank -> its index among its host's ranks
  std::vector<int> localCount;   // host index -> ranks on it
};
HostLayout hostLayout(const std::vector<RankPlacement>& all);

}  // namespace weft::topo
