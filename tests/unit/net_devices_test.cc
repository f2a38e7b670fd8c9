// The order a rank's channels take the network's devices: its own NIC, then its NUMA node's, then
// the rest.
#include <gtest/gtest.h>

#include <vector>

#include "comm/net_devices.h"

namespace {

using weft::NetDeviceSite;
using weft::orderNetDevices;

weft::topo::RankPlacement placement(uint64_t nic, int numa) {
  weft::topo::RankPlacement p = weft::topo::emptyPlacement(1);
  p.nicBusId = nic;
  p.processNuma = numa;
  return p;
}

TEST(NetDeviceOrder, OwnNicThenNumaThenTheRest) {
  // Four NICs: two on NUMA node 0, two on node 1; one virtual device with no PCI address.
  std::vector<NetDeviceSite> sites = {{0x100, 0}, {0x200, 0}, {0x300, 1}, {0x400, 1}, {}};
  EXPECT_EQ(orderNetDevices(sites, placement(0x300, 1)), (std::vector<int>{2, 3, 0, 1, 4}));
  EXPECT_EQ(orderNetDevices(sites, placement(weft::topo::RankPlacement::kNone, 1)), (std::vector<int>{2, 3, 0, 1, 4}));
  EXPECT_EQ(orderNetDevices(sites, placement(0x200, 0)), (std::vector<int>{1, 0, 2, 3, 4}));
  EXPECT_EQ(orderNetDevices(sites, placement(weft::topo::RankPlacement::kNone, -1)), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(NetDeviceOrder, ANicTheTopologyDoesNotListChangesNothing) {
  std::vector<NetDeviceSite> sites = {{0x100, 0}, {0x200, 1}};
  EXPECT_EQ(orderNetDevices(sites, placement(0x999, 1)), (std::vector<int>{1, 0}));
  EXPECT_TRUE(orderNetDevices({}, placement(0x100, 0)).empty());
}

}  // namespace
