// Rank placement, link classes, merging with NCCL_TOPO_FILE and the dump at init.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "base/host_identity.h"
#include "base/params.h"
#include "topology/link_class.h"
#include "topology/merge.h"
#include "topology/nccl_xml.h"
#include "topology/placement_query.h"
#include "topology/system.h"
#include "topology_test_util.h"

namespace weft::topo {
namespace {

using testing::dataPath;
using testing::readText;
using testing::ScratchFile;

BusId bus(const char* text) {
  BusId id = kNoBusId;
  EXPECT_TRUE(parseBusId(text, &id)) << text;
  return id;
}

Topology load(const char* name) {
  Topology t;
  std::string error;
  EXPECT_EQ(loadTopologyFile(dataPath(name), &t, &error), ncclSuccess) << error;
  return t;
}

constexpr uint64_t kHostA = 0x1111, kHostB = 0x2222;

TEST(TopologyPlacement, RecordIsFixedSizeAndCopiesAsBytes) {
  Topology t = load("topo_8gpu_2socket_switches.xml");
  RankPlacement p = makeRankPlacement(t, kHostA, 0, bus("0000:9a:00.0"), kNoBusId);
  unsigned char bytes[sizeof(RankPlacement)];
  std::memcpy(bytes, &p, sizeof(p));
  RankPlacement q;
  std::memcpy(&q, bytes, sizeof(q));
  EXPECT_EQ(std::memcmp(&p, &q, sizeof(p)), 0);
  EXPECT_EQ(q.numaNode, 1);  // the GPU's node, not the process's
  EXPECT_EQ(q.processNuma, 0);
  EXPECT_EQ(q.pciDepth, 1);
  EXPECT_EQ(formatBusId(q.pciPath[0]), "0000:95:00.0");
  EXPECT_EQ(formatBusId(q.nicBusId), "0000:99:00.0");  // the NIC under the GPU's switch
  EXPECT_EQ(q.nvswitch, 1);
}

TEST(TopologyPlacement, EightGpuLinkClasses) {
  Topology t = load("topo_8gpu_2socket_switches.xml");
  RankPlacement g0 = makeRankPlacement(t, kHostA, 0, bus("0000:18:00.0"), kNoBusId);
  RankPlacement g0again = makeRankPlacement(t, kHostA, 0, bus("0000:18:00.0"), kNoBusId);
  RankPlacement g7 = makeRankPlacement(t, kHostA, 1, bus("0000:ba:00.0"), kNoBusId);
  RankPlacement other = makeRankPlacement(t, kHostB, 0, bus("0000:18:00.0"), kNoBusId);
  EXPECT_EQ(classifyLink(g0, g0again), LinkClass::kSameGpu);
  EXPECT_EQ(classifyLink(g0, g7), LinkClass::kNvLink);  // both reach the NVSwitches
  EXPECT_EQ(classifyLink(g0, other), LinkClass::kNet);
  EXPECT_STREQ(linkClassName(classifyLink(g0, other)), "NET");
}

// The cloud file has no NVLink information, so PCI placement decides.
TEST(TopologyPlacement, CloudLinkClassesFollowThePciTree) {
  Topology t = load("topo_cloud_4numa_fake_switches.xml");
  RankPlacement r0 = makeRankPlacement(t, kHostA, 0, bus("0001:00:00.0"), kNoBusId);
  RankPlacement r1 = makeRankPlacement(t, kHostA, 0, bus("0002:00:00.0"), kNoBusId);
  RankPlacement r2 = makeRankPlacement(t, kHostA, 1, bus("0003:00:00.0"), kNoBusId);
  RankPlacement hostOnly = makeRankPlacement(t, kHostA, 0, kNoBusId, kNoBusId);
  RankPlacement hostOnly1 = makeRankPlacement(t, kHostA, 1, kNoBusId, kNoBusId);
  EXPECT_EQ(formatBusId(r0.nicBusId), "0101:00:00.0");
  EXPECT_EQ(formatBusId(r1.nicBusId), "0101:00:00.0");  // both NICs share the switch; the first wins
  EXPECT_EQ(r2.numaNode, 1);
  EXPECT_EQ(classifyLink(r0, r1), LinkClass::kPciSwitch);
  EXPECT_EQ(classifyLink(r0, r2), LinkClass::kCrossNuma);
  EXPECT_EQ(classifyLink(r0, hostOnly), LinkClass::kSameNuma);  // a host-mode rank on NUMA 0
  EXPECT_EQ(classifyLink(hostOnly, hostOnly1), LinkClass::kCrossNuma);
  RankPlacement unknown = emptyPlacement(kHostA);
  EXPECT_EQ(classifyLink(unknown, unknown), LinkClass::kCrossNuma);  // never assumed closer
}

TEST(TopologyPlacement, DirectNvlinksWithoutASwitch) {
  const char* xml = R"(<system version="1">
  <cpu numaid="0">
    <pci busid="0000:01:00.0" class="0x030200"><gpu dev="0"><nvlink target="0000:02:00.0" count="2" tclass="0x030200"/></gpu></pci>
    <pci busid="0000:02:00.0" class="0x030200"><gpu dev="1"/></pci>
    <pci busid="0000:03:00.0" class="0x030200"><gpu dev="2"/></pci>
  </cpu>
</system>)";
  Topology t;
  std::string error;
  ASSERT_EQ(parseTopology(xml, "mesh.xml", &t, &error), ncclSuccess) << error;
  RankPlacement a = makeRankPlacement(t, kHostA, 0, bus("0000:01:00.0"), kNoBusId);
  RankPlacement b = makeRankPlacement(t, kHostA, 0, bus("0000:02:00.0"), kNoBusId);
  RankPlacement c = makeRankPlacement(t, kHostA, 0, bus("0000:03:00.0"), kNoBusId);
  EXPECT_EQ(a.nvlinkPeerCount, 1);
  EXPECT_EQ(classifyLink(a, b), LinkClass::kNvLink);
  EXPECT_EQ(classifyLink(b, a), LinkClass::kNvLink);  // listed on one side only
  EXPECT_EQ(classifyLink(a, c), LinkClass::kSameNuma);
}

TEST(TopologyPlacement, ScopesAndHostLayout) {
  Topology t = load("topo_cloud_4numa_fake_switches.xml");
  std::vector<RankPlacement> all = {
      makeRankPlacement(t, kHostA, 0, bus("0001:00:00.0"), kNoBusId),  // 0
      makeRankPlacement(t, kHostB, 0, bus("0001:00:00.0"), kNoBusId),  // 1: other host
      makeRankPlacement(t, kHostA, 0, bus("0002:00:00.0"), kNoBusId),  // 2: same switch as 0
      makeRankPlacement(t, kHostA, 1, bus("0003:00:00.0"), kNoBusId),  // 3: NUMA 1
      makeRankPlacement(t, kHostA, 0, bus("0001:00:00.0"), kNoBusId),  // 4: same GPU as 0
      makeRankPlacement(t, kHostB, 3, bus("0008:00:00.0"), kNoBusId),  // 5
  };
  EXPECT_EQ(ranksSharing(all, 0, Scope::kHost), (std::vector<int>{0, 2, 3, 4}));
  EXPECT_EQ(ranksSharing(all, 0, Scope::kNuma), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(ranksSharing(all, 0, Scope::kPciSwitch), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(ranksSharing(all, 0, Scope::kGpu), (std::vector<int>{0, 4}));
  EXPECT_EQ(ranksSharing(all, 3, Scope::kPciSwitch), (std::vector<int>{3}));
  EXPECT_EQ(ranksSharing(all, 1, Scope::kHost), (std::vector<int>{1, 5}));
  EXPECT_TRUE(ranksSharing(all, 6, Scope::kHost).empty());
  HostLayout l = hostLayout(all);
  EXPECT_EQ(l.nHosts, 2);
  EXPECT_EQ(l.hostOf, (std::vector<int>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(l.localRankOf, (std::vector<int>{0, 0, 1, 2, 3, 1}));
  EXPECT_EQ(l.localCount, (std::vector<int>{4, 2}));
}

// Detection sees the GPU under its real bridge; the file's fake switch wins, detection adds what
// the file lacks.
TEST(TopologyPlacement, MergeKeepsTheFilesPlacement) {
  Topology file = load("topo_cloud_4numa_fake_switches.xml");
  Topology detected;
  detected.cpus.resize(2);
  detected.cpus[0].numaId = 0;
  detected.cpus[0].affinity = "ignored: the file has one";
  detected.cpus[1].numaId = 7;  // a node the file does not describe
  Pci bridge;
  bridge.busId = bus("0000:10:01.0");
  bridge.pciClass = "0x060400";
  Pci gpu;
  gpu.busId = bus("0001:00:00.0");
  gpu.pciClass = "0x030200";
  gpu.vendor = "0x10de";
  gpu.device = "0x20b0";
  gpu.linkSpeed = "ignored too";
  Pci extraNic;
  extraNic.busId = bus("0000:11:00.0");
  extraNic.pciClass = "0x020000";
  bridge.children = {gpu, extraNic};
  detected.cpus[0].pci.push_back(bridge);
  Pci lone;
  lone.busId = bus("0000:70:00.0");
  lone.pciClass = "0x030200";
  detected.cpus[1].pci.push_back(lone);

  mergeDetected(&file, detected);
  const Pci* g = findPci(file, bus("0001:00:00.0"));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->vendor, "0x10de");      // filled in
  EXPECT_EQ(g->linkSpeed, "16 GT/s");  // the file's
  EXPECT_EQ(formatBusId(pciAncestors(file, g->busId).at(0)), "ffff:ff:01.0");
  EXPECT_EQ(findPci(file, bus("0000:10:01.0")), nullptr);  // the detected bridge is dropped
  ASSERT_NE(findPci(file, bus("0000:11:00.0")), nullptr);  // the NIC the file lacks is added
  EXPECT_EQ(cpuOfPci(file, bus("0000:11:00.0"))->numaId, 0);
  EXPECT_EQ(file.cpus[0].affinity, "0000ffff,00000000,00000000");
  ASSERT_EQ(file.cpus.size(), 5u);
  EXPECT_EQ(file.cpus[4].numaId, 7);
  EXPECT_NE(findPci(file, bus("0000:70:00.0")), nullptr);
}

TEST(TopologyPlacement, SystemTopologyFromAFile) {
  Discovery none;
  SystemTopology s = buildSystemTopology(none, dataPath("topo_cloud_4numa_fake_switches.xml"));
  EXPECT_EQ(s.result, ncclSuccess) << s.problem;
  EXPECT_TRUE(s.fileUsed);
  EXPECT_EQ(s.topology.cpus.size(), 4u);

  std::string broken = readText(dataPath("topo_cloud_4numa_fake_switches.xml"));
  broken.replace(broken.find("class=\"0x030200\""), 16, "class=\"\"");
  ScratchFile bad("bad.xml", broken);
  s = buildSystemTopology(none, bad.path);
  EXPECT_EQ(s.result, ncclInvalidUsage);
  EXPECT_NE(s.problem.find("NCCL_TOPO_FILE " + bad.path + ":10: <pci> has an empty class attribute"), std::string::npos)
      << s.problem;

  s = buildSystemTopology(none, "/nonexistent/topo.xml");
  EXPECT_EQ(s.result, ncclSuccess);  // as NCCL: a file that is not there is reported and skipped
  EXPECT_FALSE(s.fileUsed);
  EXPECT_NE(s.problem.find("cannot open"), std::string::npos) << s.problem;
}

TEST(TopologyPlacement, RankZeroDumpsWhenAsked) {
  ScratchFile dump("dump.xml");
  ASSERT_EQ(setenv("NCCL_TOPO_DUMP_FILE", dump.path.c_str(), 1), 0);
  param::reloadForTesting();
  RankPlacement me;
  ASSERT_EQ(localRankPlacement("", &me), ncclSuccess);
  EXPECT_EQ(me.hostHash, hostHash());
  EXPECT_EQ(topologyDumpIfRequested(1, {me, me}), ncclSuccess);
  EXPECT_TRUE(readText(dump.path).empty());  // only rank 0 writes
  EXPECT_EQ(topologyDumpIfRequested(0, {me, me}), ncclSuccess);
  const SystemTopology* sys = nullptr;
  ASSERT_EQ(getSystemTopology(&sys), ncclSuccess);
  std::string text = readText(dump.path);
  EXPECT_EQ(text, topologyToXmlText(sys->topology));
  Topology back;
  std::string error;
  EXPECT_EQ(parseTopology(text, dump.path, &back, &error), ncclSuccess) << error;
  EXPECT_EQ(localRankPlacement("0000:zz:00.0", &me), ncclInvalidUsage);
  EXPECT_EQ(localRankPlacement("00ff:ff:1f.7", &me), ncclInvalidUsage);  // not on this host
  unsetenv("NCCL_TOPO_DUMP_FILE");
  param::reloadForTesting();
}

}  // namespace
}  // namespace weft::topo
