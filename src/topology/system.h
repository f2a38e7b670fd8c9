// The topology Weft uses for this process: hwloc's detection, merged under NCCL_TOPO_FILE when
// that is set. Built once per process on first use (thread-safe).
#pragma once
#include <string>
#include <vector>

#include "nccl.h"
#include "topology/discovery.h"
#include "topology/model.h"
#include "topology/placement.h"

namespace weft::topo {

struct SystemTopology {
  Discovery discovery;   // what hwloc found
  Topology topology;     // what Weft uses
  std::string topoFile;  // NCCL_TOPO_FILE ("" = not set)
  bool fileUsed = false;
  ncclResult_t result = ncclSuccess;  // not ncclSuccess when NCCL_TOPO_FILE is not a valid topology
  std::string problem;                // the message for result, or why a file could not be read (then ignored)
};

// Combines a discovery with a topology file (path "" = none): an unreadable file is reported in
// problem and ignored, as NCCL does; an invalid one sets result to ncclInvalidUsage.
SystemTopology buildSystemTopology(const Discovery& discovery, const std::string& topoFile);

// This process's topology. Fails with ncclInvalidUsage (and the file/line message recorded for
// ncclGetLastError) when NCCL_TOPO_FILE is not a valid topology.
ncclResult_t getSystemTopology(const SystemTopology** out);

// Called at communicator init on every rank: rank 0 writes the topology to NCCL_TOPO_DUMP_FILE
// when that is set, others return at once. placements (all ranks' records, may be empty) set the
// rank attribute of the GPUs of ranks on rank 0's host, as NCCL's dumps do.
ncclResult_t topologyDumpIfRequested(int rank, const std::vector<RankPlacement>& placements = {});

}  // namespace weft::topo
