#include "topology/placement_query.h"

#include <string>

#include "base/errors.h"
#include "base/host_identity.h"
#include "topology/link_class.h"
#include "topology/system.h"

namespace weft::topo {

namespace {

void collectNics(const std::vector<Pci>& list, std::vector<BusId>* out) {
  for (const Pci& p : list) {
    if (p.kind() == PciKind::kNic) out->push_back(p.busId);
    collectNics(p.children, out);
  }
}

size_t commonPrefix(const std::vector<BusId>& a, const std::vector<BusId>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

bool isNvSwitchTarget(const Topology& t, const NvLink& l) {
  if (l.tclass == "0x068000") return true;
  BusId id;
  const Pci* p = parseBusId(l.target, &id) ? findPci(t, id) : nullptr;
  return p != nullptr && p->kind() == PciKind::kNvSwitch;
}

}  // namespace

BusId closestNic(const Topology& t, BusId gpu) {
  std::vector<BusId> nics;
  for (const Cpu& c : t.cpus) collectNics(c.pci, &nics);
  if (nics.empty() || findPci(t, gpu) == nullptr) return kNoBusId;
  std::vector<BusId> gpuPath = pciAncestors(t, gpu);
  const Cpu* gpuCpu = cpuOfPci(t, gpu);
  BusId best = kNoBusId;
  size_t bestShared = 0;
  BusId sameNuma = kNoBusId;
  for (BusId nic : nics) {
    size_t shared = commonPrefix(gpuPath, pciAncestors(t, nic));
    if (shared > bestShared) {
      bestShared = shared;
      best = nic;
    }
    if (sameNuma == kNoBusId && cpuOfPci(t, nic) == gpuCpu) sameNuma = nic;
  }
  return best != kNoBusId ? best : sameNuma;
}

RankPlacement makeRankPlacement(const Topology& t, uint64_t hostHash, int processNuma, BusId gpu, BusId nic) {
  RankPlacement p = emptyPlacement(hostHash);
  p.processNuma = processNuma;
  p.numaNode = processNuma;
  p.gpuBusId = gpu;
  p.nicBusId = nic != kNoBusId ? nic : (gpu != kNoBusId ? closestNic(t, gpu) : kNoBusId);
  BusId device = gpu != kNoBusId ? gpu : p.nicBusId;
  if (device != kNoBusId) {
    if (const Cpu* cpu = cpuOfPci(t, device)) p.numaNode = cpu->numaId;
    std::vector<BusId> path = pciAncestors(t, device);
    // The bridges nearest the device matter most (they decide PIX); keep those if the path is long.
    size_t skip = path.size() > RankPlacement::kMaxPciDepth ? path.size() - RankPlacement::kMaxPciDepth : 0;
    for (size_t i = skip; i < path.size(); ++i) p.pciPath[p.pciDepth++] = path[i];
  }
  if (const Pci* g = gpu != kNoBusId ? findPci(t, gpu) : nullptr; g != nullptr && g->gpu) {
    for (const NvLink& l : g->gpu->nvlinks) {
      BusId peer;
      if (isNvSwitchTarget(t, l)) {
        p.nvswitch = 1;
      } else if (parseBusId(l.target, &peer) && p.nvlinkPeerCount < RankPlacement::kMaxNvlinkPeers) {
        const Pci* target = findPci(t, peer);
        if (target == nullptr || target->kind() == PciKind::kGpu) p.nvlinkPeers[p.nvlinkPeerCount++] = peer;
      }
    }
  }
  return p;
}

ncclResult_t localRankPlacement(const char* gpuBusId, RankPlacement* out) {
  const SystemTopology* sys = nullptr;
  ncclResult_t res = getSystemTopology(&sys);
  if (res != ncclSuccess) return res;
  BusId gpu = kNoBusId;
  if (gpuBusId != nullptr && gpuBusId[0] != '\0') {
    if (!parseBusId(gpuBusId, &gpu))
      return reportError(nullptr, ncclInvalidUsage, "GPU bus id \"%s\" is not a PCI address (dddd:bb:dd.f)", gpuBusId);
    if (findPci(sys->topology, gpu) == nullptr)
      return reportError(nullptr, ncclInvalidUsage,
                         "GPU %s is not in this host's topology (%s); check NCCL_TOPO_FILE or the device the rank uses",
                         formatBusId(gpu).c_str(), sys->topoFile.empty() ? "detected by hwloc" : sys->topoFile.c_str());
  }
  *out = makeRankPlacement(sys->topology, hostHash(), sys->discovery.host.numaNode, gpu, kNoBusId);
  return ncclSuccess;
}

bool sharesScope(const RankPlacement& a, const RankPlacement& b, Scope s) {
  if (a.hostHash != b.hostHash) return false;
  switch (s) {
    case Scope::kHost: return true;
    case Scope::kNuma: return a.numaNode >= 0 && a.numaNode == b.numaNode;
    case Scope::kPciSwitch: return sharePciBridge(a, b);
    case Scope::kGpu: return hasGpu(a) && a.gpuBusId == b.gpuBusId;
  }
  return false;
}

std::vector<int> ranksSharing(const std::vector<RankPlacement>& all, int rank, Scope s) {
  std::vector<int> out;
  if (rank < 0 || rank >= static_cast<int>(all.size())) return out;
  for (int r = 0; r < static_cast<int>(all.size()); ++r)
    if (r == rank || sharesScope(all[rank], all[r], s)) out.push_back(r);
  return out;
}

HostLayout hostLayout(const std::vector<RankPlacement>& all) {
  HostLayout l;
  std::vector<uint64_t> hashes;
  for (const RankPlacement& p : all) {
    int host = 0;
    while (host < l.nHosts && hashes[host] != p.hostHash) ++host;
    if (host == l.nHosts) {
      hashes.push_back(p.hostHash);
      l.localCount.push_back(0);
      ++l.nHosts;
    }
    l.hostOf.push_back(host);
    l.localRankOf.push_back(l.localCount[host]++);
  }
  return l;
}

}  // namespace weft::topo
