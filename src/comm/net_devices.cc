// Ordering the network's devices for a rank's channels.
#include "comm/net_devices.h"

#include <fstream>
#include <string>

namespace weft {

std::vector<int> orderNetDevices(const std::vector<NetDeviceSite>& sites, const topo::RankPlacement& me) {
  std::vector<int> order;
  auto take = [&](auto&& wanted) {
    for (int d = 0; d < int(sites.size()); ++d) {
      bool taken = false;
      for (int o : order) taken |= o == d;
      if (!taken && wanted(sites[size_t(d)])) order.push_back(d);
    }
  };
  if (me.nicBusId != topo::RankPlacement::kNone) take([&](const NetDeviceSite& s) { return s.busId == me.nicBusId; });
  if (me.processNuma >= 0) take([&](const NetDeviceSite& s) { return s.numaNode == me.processNuma; });
  take([](const NetDeviceSite&) { return true; });
  return order;
}

std::vector<NetDeviceSite> netDeviceSites(net::Network* network, int ndev) {
  std::vector<NetDeviceSite> sites(size_t(ndev > 0 ? ndev : 0));
  for (int d = 0; d < ndev; ++d) {
    net::Properties p;
    if (network->getProperties(d, &p) != ncclSuccess || p.pciPath.empty()) continue;
    // "/sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0": the device is the last bus id.
    std::string path = p.pciPath;
    while (!path.empty() && path.back() == '/') path.pop_back();
    std::string last = path.substr(path.find_last_of('/') + 1);
    topo::BusId id = topo::kNoBusId;
    if (!topo::parseBusId(last, &id)) continue;
    NetDeviceSite& s = sites[size_t(d)];
    s.busId = id;
    std::ifstream numa("/sys/bus/pci/devices/" + last + "/numa_node");
    if (!(numa >> s.numaNode)) s.numaNode = -1;
  }
  return sites;
}

}  // namespace weft
