// hwloc discovery on machines the tests describe: synthetic CPU layouts and an hwloc XML export
// with PCI switches, GPUs, NICs and devices Weft must leave out.
#include <gtest/gtest.h>
#include <hwloc.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "topology/discovery.h"
#include "topology/nccl_xml.h"

namespace weft::topo {
namespace {

struct TopoDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using HwlocTopology = std::unique_ptr<hwloc_topology, TopoDeleter>;

HwlocTopology synthetic(const char* description) {
  hwloc_topology_t t = nullptr;
  EXPECT_EQ(hwloc_topology_init(&t), 0);
  EXPECT_EQ(hwloc_topology_set_synthetic(t, description), 0) << description;
  EXPECT_EQ(hwloc_topology_load(t), 0);
  return HwlocTopology(t);
}

HwlocTopology fromXml(const std::string& xml) {
  hwloc_topology_t t = nullptr;
  EXPECT_EQ(hwloc_topology_init(&t), 0);
  EXPECT_EQ(hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL), 0);
  EXPECT_EQ(hwloc_topology_set_xmlbuffer(t, xml.c_str(), static_cast<int>(xml.size()) + 1), 0);
  EXPECT_EQ(hwloc_topology_load(t), 0);
  return HwlocTopology(t);
}

TEST(TopologyHwloc, SyntheticCountsAndNumaAffinity) {
  HwlocTopology t = synthetic("pack:2 numa:2 core:4 pu:2");
  Discovery d = discoverFrom(t.get());
  EXPECT_EQ(d.host.packages, 2);
  EXPECT_EQ(d.host.numaNodes, 4);
  EXPECT_EQ(d.host.cores, 16);
  EXPECT_EQ(d.host.pus, 32);
  EXPECT_EQ(d.host.gpus + d.host.nics + d.host.pciBridges, 0);
  ASSERT_EQ(d.topology.cpus.size(), 4u);
  const char* affinity[] = {"000000ff", "0000ff00", "00ff0000", "ff000000"};
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(d.topology.cpus[n].numaId, n);
    EXPECT_EQ(d.topology.cpus[n].affinity, affinity[n]);
  }
  // Not this machine: the "binding" is every allowed CPU, which spans all four nodes.
  EXPECT_EQ(d.host.boundCpus, "0-31");
  EXPECT_EQ(d.host.boundNuma, (std::vector<int>{0, 1, 2, 3}));
}

TEST(TopologyHwloc, NumaNodesOfACpuset) {
  HwlocTopology t = synthetic("pack:2 numa:2 core:4 pu:2");
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_set_range(set, 8, 15);
  EXPECT_EQ(numaNodesOf(t.get(), set), std::vector<int>{1});
  hwloc_bitmap_set(set, 31);
  EXPECT_EQ(numaNodesOf(t.get(), set), (std::vector<int>{1, 3}));
  hwloc_bitmap_free(set);
}

TEST(TopologyHwloc, CpumapStringSpansWords) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_set_range(set, 16, 47);
  EXPECT_EQ(cpumapString(set), "0000ffff,ffff0000");
  hwloc_bitmap_only(set, 64);
  EXPECT_EQ(cpumapString(set), "00000001,00000000,00000000");
  hwloc_bitmap_zero(set);
  EXPECT_EQ(cpumapString(set), "00000000");
  hwloc_bitmap_free(set);
}

// Two packages with a NUMA node each. Package 0: a host bridge, a PCIe switch (bridge) with an
// NVIDIA GPU and an InfiniBand NIC (ports mlx5_0 and ib0), and an emulated VGA card straight on
// the host bridge. Package 1: an AMD GPU and an NVMe drive on the host bridge.
std::string machineXml() {
  std::string x = R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" allowed_cpuset="0x0000000f" nodeset="0x00000003" complete_nodeset="0x00000003" allowed_nodeset="0x00000003" gp_index="1">
    <info name="Architecture" value="x86_64"/>
    <object type="Package" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2">
      <info name="CPUVendor" value="GenuineIntel"/>
      <info name="CPUFamilyNumber" value="6"/>
      <info name="CPUModelNumber" value="143"/>
      <object type="NUMANode" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3" local_memory="1073741824"/>
      <object type="Core" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4">
        <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5"/>
      </object>
      <object type="Core" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="6">
        <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="7"/>
      </object>
      <object type="Bridge" gp_index="20" bridge_type="0-1" depth="0" bridge_pci="0000:[00-1f]">
        <object type="Bridge" gp_index="21" bridge_type="1-1" depth="1" bridge_pci="0000:[17-1f]" pci_busid="0000:15:00.0" pci_type="0604 [1000:c030] [1000:100b] 00" pci_link_speed="31.507692">
          <object type="PCIDev" gp_index="22" pci_busid="0000:18:00.0" pci_type="0302 [10de:2330] [10de:16c1] a1" pci_link_speed="31.507692">
            <object type="OSDev" gp_index="23" name="card1" osdev_type="1"/>
          </object>
          <object type="PCIDev" gp_index="24" pci_busid="0000:19:00.0" pci_type="0207 [15b3:1021] [15b3:0041] 00" pci_link_speed="31.507692">
            <object type="OSDev" gp_index="25" name="ib0" osdev_type="2"/>
            <object type="OSDev" gp_index="26" name="mlx5_0" osdev_type="3"/>
          </object>
        </object>
        <object type="PCIDev" gp_index="27" pci_busid="0000:00:02.0" pci_type="0300 [1234:1111] [1af4:1100] 02"/>
      </object>
    </object>
    <object type="Package" os_index="1" cpuset="0x0000000c" complete_cpuset="0x0000000c" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="8">
      <info name="CPUVendor" value="GenuineIntel"/>
      <object type="NUMANode" os_index="1" cpuset="0x0000000c" complete_cpuset="0x0000000c" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="9" local_memory="1073741824"/>
      <object type="Core" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="10">
        <object type="PU" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="11"/>
      </object>
      <object type="Core" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="12">
        <object type="PU" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="13"/>
      </object>
      <object type="Bridge" gp_index="30" bridge_type="0-1" depth="0" bridge_pci="0001:[80-8f]">
        <object type="PCIDev" gp_index="31" pci_busid="0001:83:00.0" pci_type="0380 [1002:74a1] [1002:74a1] 00"/>
        <object type="PCIDev" gp_index="32" pci_busid="0001:84:00.0" pci_type="0108 [144d:a80a] [144d:a801] 00"/>
      </object>
    </object>
  </object>
</topology>
)";
  return x;
}

TEST(TopologyHwloc, PciTreeKeepsGpusNicsAndTheirSwitches) {
  HwlocTopology t = fromXml(machineXml());
  Discovery d = discoverFrom(t.get());
  EXPECT_EQ(d.host.packages, 2);
  EXPECT_EQ(d.host.numaNodes, 2);
  EXPECT_EQ(d.host.gpus, 2);
  EXPECT_EQ(d.host.nics, 1);
  EXPECT_EQ(d.host.pciBridges, 1);
  ASSERT_EQ(d.topology.cpus.size(), 2u);
  const Cpu& c0 = d.topology.cpus[0];
  EXPECT_EQ(c0.arch, "x86_64");
  EXPECT_EQ(c0.vendor, "GenuineIntel");
  EXPECT_EQ(c0.familyId, 6);
  EXPECT_EQ(c0.modelId, 143);
  EXPECT_EQ(c0.affinity, "00000003");
  // The host bridge is dropped, the emulated VGA (vendor 0x1234) too; the switch stays.
  ASSERT_EQ(c0.pci.size(), 1u);
  const Pci& sw = c0.pci[0];
  EXPECT_EQ(formatBusId(sw.busId), "0000:15:00.0");
  EXPECT_EQ(sw.kind(), PciKind::kBridge);
  EXPECT_EQ(sw.pciClass, "0x060400");
  ASSERT_EQ(sw.children.size(), 2u);
  EXPECT_EQ(sw.children[0].kind(), PciKind::kGpu);
  EXPECT_EQ(sw.children[0].vendor, "0x10de");
  EXPECT_EQ(sw.children[0].device, "0x2330");
  const Pci& nic = sw.children[1];
  EXPECT_EQ(nic.pciClass, "0x020700");
  ASSERT_TRUE(nic.nic.has_value());
  ASSERT_EQ(nic.nic->nets.size(), 1u);
  EXPECT_EQ(nic.nic->nets[0].name, "mlx5_0");  // the RDMA device, not the IPoIB interface
  EXPECT_EQ(nic.nic->nets[0].dev, 0);
  // Package 1: the AMD GPU (class 0x0380) stays, the NVMe drive goes.
  const Cpu& c1 = d.topology.cpus[1];
  EXPECT_EQ(c1.numaId, 1);
  ASSERT_EQ(c1.pci.size(), 1u);
  EXPECT_EQ(formatBusId(c1.pci[0].busId), "0001:83:00.0");
  EXPECT_EQ(c1.pci[0].kind(), PciKind::kGpu);
  // Not this machine: no sysfs link data is invented.
  EXPECT_TRUE(sw.linkSpeed.empty());
  // The detected topology is valid NCCL XML: it reads back to the same text.
  std::string text = topologyToXmlText(d.topology);
  Topology back;
  std::string error;
  ASSERT_EQ(parseTopology(text, "detected", &back, &error), ncclSuccess) << error;
  EXPECT_EQ(topologyToXmlText(back), text);
}

TEST(TopologyHwloc, ThisMachineIsDiscoveredOnceAndBound) {
  const Discovery& a = localDiscovery();
  const Discovery& b = localDiscovery();
  EXPECT_EQ(&a, &b);
  ASSERT_TRUE(a.problem.empty()) << a.problem;
  EXPECT_GE(a.host.pus, 1);
  EXPECT_GE(a.host.numaNodes, 1);
  EXPECT_FALSE(a.host.boundCpus.empty());
  EXPECT_GE(a.host.numaNode, 0);
  EXPECT_FALSE(a.topology.cpus.empty());
}

// hwloc's "gl" component opens X displays :0 to :9, each first through its abstract socket
// @/tmp/.X11-unix/X<n>; Weft's load of this machine must not start it (nor any component that opens
// a vendor library). A listener on display 0's socket takes each connection and closes it at once,
// so that a client that did connect fails its handshake instead of waiting for a server's reply.
TEST(TopologyHwloc, LoadingThisMachineOpensNoDisplay) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "/tmp/.X11-unix/X0";
  std::memcpy(addr.sun_path + 1, name.data(), name.size());  // sun_path[0] == 0: abstract
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    close(fd);
    GTEST_SKIP() << "display 0's socket is taken here (an X server runs)";
  }
  ASSERT_EQ(listen(fd, 16), 0);
  std::atomic<int> connections{0};
  std::atomic<bool> stop{false};
  std::thread acceptor([&] {
    while (!stop.load()) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 20) == 1) {
        const int c = accept(fd, nullptr, nullptr);
        if (c >= 0) {
          connections.fetch_add(1);
          close(c);
        }
      }
    }
  });
  std::string why;
  // Never destroyed, as localDiscovery's is not: destroying unloads hwloc's plugins while this
  // binary's other threads may run.
  static hwloc_topology_t kept = nullptr;
  kept = loadHostTopology(&why);
  stop.store(true);
  acceptor.join();
  close(fd);
  ASSERT_NE(kept, nullptr) << why;
  EXPECT_EQ(connections.load(), 0) << "loading this machine's topology connected to X display :0";
}

// The PCI devices come from sysfs (hwloc's linux component), not from libpciaccess (the "pci"
// component), which parses the whole pci.ids database for names Weft never reads: no device carries
// the names only that component adds, and every network controller sysfs lists is still found.
TEST(TopologyHwloc, PciDevicesComeFromSysfsWithoutTheNameDatabase) {
  std::string why;
  static hwloc_topology_t kept = nullptr;  // never destroyed: see the test above
  kept = loadHostTopology(&why);
  ASSERT_NE(kept, nullptr) << why;
  int networkDevices = 0;
  for (hwloc_obj_t o = hwloc_get_next_pcidev(kept, nullptr); o != nullptr; o = hwloc_get_next_pcidev(kept, o)) {
    if ((o->attr->pcidev.class_id >> 8) == 0x02) ++networkDevices;
    EXPECT_EQ(hwloc_obj_get_info_by_name(o, "PCIVendor"), nullptr)
        << "PCI device " << std::hex << o->attr->pcidev.vendor_id << ":" << o->attr->pcidev.device_id
        << " was named from pci.ids: hwloc's pci component ran";
  }
  // Every network controller sysfs lists is found all the same (class 0x02xxxx).
  int sysfsNetwork = 0;
  std::error_code ec;
  for (const auto& dev : std::filesystem::directory_iterator("/sys/bus/pci/devices", ec)) {
    std::ifstream in(dev.path() / "class");
    std::string cls;
    if (in >> cls && cls.rfind("0x02", 0) == 0) ++sysfsNetwork;
  }
  EXPECT_EQ(networkDevices, sysfsNetwork)
      << "network controllers: hwloc found " << networkDevices << ", sysfs lists " << sysfsNetwork;
}

}  // namespace
}  // namespace weft::topo
