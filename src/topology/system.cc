#include "topology/system.h"

#include "base/errors.h"
#include "base/log.h"
#include "base/params.h"
#include "topology/merge.h"
#include "topology/nccl_xml.h"

namespace weft::topo {

SystemTopology buildSystemTopology(const Discovery& discovery, const std::string& topoFile) {
  SystemTopology s;
  s.discovery = discovery;
  s.topoFile = topoFile;
  s.topology = discovery.topology;
  if (topoFile.empty()) return s;
  Topology fromFile;
  std::string error;
  ncclResult_t res = loadTopologyFile(topoFile, &fromFile, &error);
  if (res == ncclSystemError) {
    s.problem = "NCCL_TOPO_FILE " + error + "; using the detected topology";
    return s;
  }
  if (res != ncclSuccess) {
    s.result = res;
    s.problem = "NCCL_TOPO_FILE " + error;
    return s;
  }
  mergeDetected(&fromFile, discovery.topology);
  s.topology = std::move(fromFile);
  s.fileUsed = true;
  return s;
}

ncclResult_t getSystemTopology(const SystemTopology** out) {
  static const SystemTopology kSystem = [] {
    const Discovery& d = localDiscovery();
    if (!d.problem.empty()) WEFT_WARN("Topology detection failed (%s); using NCCL_TOPO_FILE only", d.problem.c_str());
    SystemTopology s = buildSystemTopology(d, param::topoFile());
    if (s.result == ncclSuccess && !s.problem.empty()) WEFT_WARN("%s", s.problem.c_str());
    if (s.fileUsed) WEFT_INFO(kLogGraph | kLogEnv, "Topology: loaded NCCL_TOPO_FILE %s", s.topoFile.c_str());
    return s;
  }();
  *out = &kSystem;
  if (kSystem.result != ncclSuccess) return reportError(nullptr, kSystem.result, "%s", kSystem.problem.c_str());
  return ncclSuccess;
}

ncclResult_t topologyDumpIfRequested(int rank, const std::vector<RankPlacement>& placements) {
  if (rank != 0) return ncclSuccess;
  std::string path = param::topoDumpFile();
  if (path.empty()) return ncclSuccess;
  const SystemTopology* sys = nullptr;
  ncclResult_t res = getSystemTopology(&sys);
  if (res != ncclSuccess) return res;
  Topology t = sys->topology;
  for (size_t r = 0; r < placements.size(); ++r) {
    const RankPlacement& p = placements[r];
    if (p.gpuBusId == RankPlacement::kNone || p.hostHash != placements[0].hostHash) continue;
    Pci* gpu = findPci(&t, p.gpuBusId);
    if (gpu != nullptr && gpu->gpu) gpu->gpu->rank = static_cast<int>(r);
  }
  std::string error;
  res = writeTopologyFile(path, t, &error);
  if (res != ncclSuccess) return reportError(nullptr, res, "NCCL_TOPO_DUMP_FILE %s", error.c_str());
  WEFT_INFO(kLogGraph | kLogEnv, "Topology: wrote NCCL_TOPO_DUMP_FILE %s", path.c_str());
  return ncclSuccess;
}

}  // namespace weft::topo
