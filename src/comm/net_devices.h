// Which of the network's devices (NICs, RDMA ports) each channel of a rank uses. A rank spreads
// its channels over the devices, closest first: the NIC its placement names (the one nearest its
// GPU, or given by NCCL_TOPO_FILE), then devices on the NUMA node the process runs on, then the
// rest. Each rank orders its own devices; the two ends of a link need not use the same index.
#pragma once
#include <vector>

#include "topology/model.h"
#include "topology/placement.h"
#include "transports/net/network.h"

namespace weft {

struct NetDeviceSite {
  topo::BusId busId = topo::kNoBusId;  // from the device's PCI path; kNoBusId for virtual devices
  int numaNode = -1;                   // from sysfs; -1 unknown
};

// The device indices in the order channels take them (channel c uses order[c % size]).
std::vector<int> orderNetDevices(const std::vector<NetDeviceSite>& sites, const topo::RankPlacement& me);

// Each device's PCI address (the last bus id in its properties' pciPath) and NUMA node.
std::vector<NetDeviceSite> netDeviceSites(net::Network* network, int ndev);

}  // namespace weft
