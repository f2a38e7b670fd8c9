// The NCCL topology XML reader and writer against Weft's fixtures and edited, broken variants.
#include <gtest/gtest.h>

#include "topology/nccl_xml.h"
#include "topology/xml.h"
#include "topology_test_util.h"

namespace weft::topo {
namespace {

using testing::dataPath;
using testing::edited;
using testing::readText;
using testing::ScratchFile;

const char* kEightGpu = "topo_8gpu_2socket_switches.xml";
const char* kCloud = "topo_cloud_4numa_fake_switches.xml";

int countKind(const std::vector<Pci>& list, PciKind k) {
  int n = 0;
  for (const Pci& p : list) n += (p.kind() == k) + countKind(p.children, k);
  return n;
}
int countKind(const Topology& t, PciKind k) {
  int n = 0;
  for (const Cpu& c : t.cpus) n += countKind(c.pci, k);
  return n;
}

// Parses text as a topology and returns the error ("" when it parsed).
std::string errorOf(const std::string& text, ncclResult_t expected = ncclInvalidUsage) {
  Topology t;
  std::string error;
  ncclResult_t res = parseTopology(text, "edited.xml", &t, &error);
  EXPECT_EQ(res, expected) << error;
  return res == ncclSuccess ? "" : error;
}

TEST(TopologyXml, BusIdsParseAndPrint) {
  BusId id;
  ASSERT_TRUE(parseBusId("0000:1A:00.0", &id));
  EXPECT_EQ(formatBusId(id), "0000:1a:00.0");
  ASSERT_TRUE(parseBusId("ffff:ff:01.0", &id));
  EXPECT_EQ(formatBusId(id), "ffff:ff:01.0");
  ASSERT_TRUE(parseBusId("3b:00.1", &id));
  EXPECT_EQ(formatBusId(id), "0000:3b:00.1");
  ASSERT_TRUE(parseBusId("10000:01:02.3", &id));  // a 32-bit domain, as some VMs have
  EXPECT_EQ(formatBusId(id), "10000:01:02.3");
  for (const char* bad : {"", "0000:00:00", "0000:100:00.0", "0000:00:20.0", "0000:00:00.8", "zz:00.0", "0000:00.0.0"})
    EXPECT_FALSE(parseBusId(bad, &id)) << bad;
}

TEST(TopologyXml, EightGpuFixtureLoads) {
  Topology t;
  std::string error;
  ASSERT_EQ(loadTopologyFile(dataPath(kEightGpu), &t, &error), ncclSuccess) << error;
  EXPECT_EQ(t.name, "weft-test-8gpu-2socket");
  ASSERT_EQ(t.cpus.size(), 2u);
  EXPECT_EQ(t.cpus[1].numaId, 1);
  EXPECT_EQ(t.cpus[0].vendor, "GenuineIntel");
  EXPECT_EQ(t.cpus[0].modelId, 143);
  EXPECT_EQ(countKind(t, PciKind::kGpu), 8);
  EXPECT_EQ(countKind(t, PciKind::kNic), 4);
  EXPECT_EQ(countKind(t, PciKind::kNvSwitch), 2);
  EXPECT_EQ(countKind(t, PciKind::kBridge), 5);
  BusId id;
  ASSERT_TRUE(parseBusId("0000:b9:00.0", &id));
  const Pci* nic = findPci(t, id);
  ASSERT_NE(nic, nullptr);
  ASSERT_TRUE(nic->nic.has_value());
  ASSERT_EQ(nic->nic->nets.size(), 1u);
  const Net& net = nic->nic->nets[0];
  EXPECT_EQ(net.name, "mlx5_3");
  EXPECT_EQ(net.dev, 3);
  EXPECT_EQ(net.speedMbps, 400000);
  EXPECT_EQ(net.port, 1);
  EXPECT_EQ(net.guid, "0x946dae0300a1b2d8");
  EXPECT_EQ(net.maxconn, 131072);
  EXPECT_EQ(net.gdr, 1);
  ASSERT_TRUE(parseBusId("0000:ba:00.0", &id));
  const Pci* gpu = findPci(t, id);
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->gpu.has_value());
  EXPECT_EQ(gpu->gpu->dev, 7);
  EXPECT_EQ(gpu->gpu->sm, 90);
  ASSERT_EQ(gpu->gpu->nvlinks.size(), 2u);
  EXPECT_EQ(gpu->gpu->nvlinks[1].target, "0000:c4:00.0");
  EXPECT_EQ(gpu->gpu->nvlinks[1].count, 9);
  EXPECT_EQ(gpu->linkSpeed, "32.0 GT/s PCIe");
  EXPECT_EQ(gpu->linkWidth, 16);
  EXPECT_EQ(cpuOfPci(t, id)->numaId, 1);
  std::vector<BusId> path = pciAncestors(t, id);
  ASSERT_EQ(path.size(), 1u);
  EXPECT_EQ(formatBusId(path[0]), "0000:b5:00.0");
}

// The fixture is written in the writer's own order, so loading and dumping it reproduces it.
TEST(TopologyXml, EightGpuFixtureDumpsToItself) {
  Topology t;
  std::string error;
  ASSERT_EQ(loadTopologyFile(dataPath(kEightGpu), &t, &error), ncclSuccess) << error;
  EXPECT_EQ(topologyToXmlText(t), readText(dataPath(kEightGpu)));
}

TEST(TopologyXml, RoundTripDumpLoadDumpIsIdentical) {
  for (const char* name : {kEightGpu, kCloud}) {
    Topology first;
    std::string error;
    ASSERT_EQ(loadTopologyFile(dataPath(name), &first, &error), ncclSuccess) << error;
    ScratchFile dump(std::string("roundtrip-") + name);
    ASSERT_EQ(writeTopologyFile(dump.path, first, &error), ncclSuccess) << error;
    Topology second;
    ASSERT_EQ(loadTopologyFile(dump.path, &second, &error), ncclSuccess) << error;
    EXPECT_EQ(topologyToXmlText(second), readText(dump.path)) << name;
  }
}

TEST(TopologyXml, CloudFixtureLoadsWithoutGpuOrNicElements) {
  Topology t;
  std::string error;
  ASSERT_EQ(loadTopologyFile(dataPath(kCloud), &t, &error), ncclSuccess) << error;
  ASSERT_EQ(t.cpus.size(), 4u);
  EXPECT_EQ(t.cpus[2].affinity, "00000000,0000ffff,00000000");
  EXPECT_EQ(countKind(t, PciKind::kGpu), 8);
  EXPECT_EQ(countKind(t, PciKind::kNic), 8);  // InfiniBand class 0x020700 without a <nic> element
  EXPECT_EQ(countKind(t, PciKind::kBridge), 4);
  // The comment is gone, everything else is kept.
  std::string dumped = topologyToXmlText(t);
  EXPECT_EQ(dumped.find("<!--"), std::string::npos);
  EXPECT_NE(dumped.find("<pci busid=\"ffff:ff:04.0\" class=\"0x060400\" link_speed=\"16 GT/s\" link_width=\"16\">"),
            std::string::npos);
}

TEST(TopologyXml, UnknownAttributesAndElementsAreKept) {
  std::string text = readText(dataPath(kEightGpu));
  text = edited(text, "<system version=\"1\"", "<system version=\"1\" vendor_build=\"42\"");
  text = edited(text, "<gpu dev=\"0\" sm=\"90\" gdr=\"1\">",
                "<gpu dev=\"0\" sm=\"90\" gdr=\"1\" mlopart=\"0\">\n<c2c bw=\"40\" count=\"10\"/>");
  text = edited(text, "  </cpu>", "  <future_thing a='1'><inner/></future_thing>\n  </cpu>");
  Topology t;
  std::string error;
  ASSERT_EQ(parseTopology(text, "edited.xml", &t, &error), ncclSuccess) << error;
  EXPECT_EQ(countKind(t, PciKind::kGpu), 8);
  std::string dumped = topologyToXmlText(t);
  EXPECT_NE(dumped.find("<system version=\"1\" name=\"weft-test-8gpu-2socket\" vendor_build=\"42\">"),
            std::string::npos);
  EXPECT_NE(dumped.find("gdr=\"1\" mlopart=\"0\">"), std::string::npos);
  EXPECT_NE(dumped.find("<c2c bw=\"40\" count=\"10\"/>"), std::string::npos);
  EXPECT_NE(dumped.find("<future_thing a=\"1\">"), std::string::npos);
  EXPECT_NE(dumped.find("<inner/>"), std::string::npos);
  // And the kept parts survive a second trip unchanged.
  Topology again;
  ASSERT_EQ(parseTopology(dumped, "dumped.xml", &again, &error), ncclSuccess) << error;
  EXPECT_EQ(topologyToXmlText(again), dumped);
}

TEST(TopologyXml, MissingRequiredAttributesNameFileLineAndAttribute) {
  std::string text = readText(dataPath(kEightGpu));
  // Line 4 holds the first GPU's <pci>.
  std::string e = errorOf(edited(text, "busid=\"0000:18:00.0\" ", ""));
  EXPECT_NE(e.find("edited.xml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("<pci> has no busid attribute"), std::string::npos) << e;
  e = errorOf(edited(text, "class=\"0x030200\" ", ""));
  EXPECT_NE(e.find("edited.xml:4: <pci> has no class attribute"), std::string::npos) << e;
  e = errorOf(edited(text, "<cpu numaid=\"1\" ", "<cpu "));
  EXPECT_NE(e.find("<cpu> has no numaid"), std::string::npos) << e;
  e = errorOf(edited(text, "<gpu dev=\"0\" ", "<gpu "));
  EXPECT_NE(e.find("edited.xml:5: <gpu> has no dev"), std::string::npos) << e;
  e = errorOf(edited(text, "name=\"mlx5_0\" dev=\"0\" ", "name=\"mlx5_0\" "));
  EXPECT_NE(e.find("edited.xml:12: <net> has no dev"), std::string::npos) << e;
  e = errorOf(edited(text, " version=\"1\"", ""));
  EXPECT_NE(e.find("edited.xml:1: <system> has no version"), std::string::npos) << e;
  // Empty counts as missing: Weft's dump leaves empty values out, so it would not read back.
  e = errorOf(edited(text, "<nvlink target=\"0000:c3:00.0\"", "<nvlink target=\"\""));
  EXPECT_NE(e.find("edited.xml:6: <nvlink> has an empty target attribute"), std::string::npos) << e;
}

TEST(TopologyXml, BadValuesAreRejected) {
  std::string text = readText(dataPath(kEightGpu));
  std::string e = errorOf(edited(text, "version=\"1\"", "version=\"2\""));
  EXPECT_NE(e.find("only version 1"), std::string::npos) << e;
  e = errorOf(edited(text, "busid=\"0000:18:00.0\"", "busid=\"GPU0\""));
  EXPECT_NE(e.find("edited.xml:4: <pci busid=\"GPU0\">: not a PCI bus id"), std::string::npos) << e;
  e = errorOf(edited(text, "class=\"0x030200\"", "class=\"display\""));
  EXPECT_NE(e.find("not a PCI class"), std::string::npos) << e;
  e = errorOf(edited(text, "numaid=\"0\"", "numaid=\"zero\""));
  EXPECT_NE(e.find("edited.xml:2: <cpu> attribute numaid=\"zero\" is not an integer"), std::string::npos) << e;
  e = errorOf(edited(text, "speed=\"400000\"", "speed=\"fast\""));
  EXPECT_NE(e.find("speed=\"fast\" is not an integer"), std::string::npos) << e;
  e = errorOf(edited(text, "busid=\"0000:1a:00.0\"", "busid=\"0000:18:00.0\""));
  EXPECT_NE(e.find("appears twice"), std::string::npos) << e;
  e = errorOf("<topology version=\"1\"/>");
  EXPECT_NE(e.find("expected <system>"), std::string::npos) << e;
}

TEST(TopologyXml, MalformedXmlIsReportedWithItsLine) {
  std::string text = readText(dataPath(kEightGpu));
  std::string e = errorOf(edited(text, "        </gpu>", "        </gpux>"));
  EXPECT_NE(e.find("edited.xml:8: </gpux> does not match <gpu> opened on line 5"), std::string::npos) << e;
  e = errorOf(edited(text, "link_width=\"16\"/>", "link_width=16/>"));
  EXPECT_NE(e.find("must be quoted"), std::string::npos) << e;
  e = errorOf(edited(text, "<nic>", "<nic> stray text"));
  EXPECT_NE(e.find("edited.xml:11: unexpected text inside <nic>"), std::string::npos) << e;
  e = errorOf(text.substr(0, text.find("  </cpu>")));
  EXPECT_NE(e.find("file ends before </cpu> (element opened on line 2)"), std::string::npos) << e;
  e = errorOf(text.substr(0, text.find("16\"/>") + 1));
  EXPECT_NE(e.find("is never closed"), std::string::npos) << e;
  e = errorOf(edited(text, "dev=\"0\" sm", "dev=\"0\" dev=\"1\" sm"));
  EXPECT_NE(e.find("appears twice"), std::string::npos) << e;
  e = errorOf("<!-- never closed\n<system version=\"1\"/>");
  EXPECT_NE(e.find("edited.xml:1: comment is never closed"), std::string::npos) << e;
  e = errorOf("");
  EXPECT_NE(e.find("no element found"), std::string::npos) << e;
  e = errorOf("<system version=\"1\"/>\n<system version=\"1\"/>");
  EXPECT_NE(e.find("edited.xml:2: a second top-level element"), std::string::npos) << e;
  e = errorOf("<system version=\"1\" name=\"a &bogus; b\"/>");
  EXPECT_NE(e.find("unknown entity"), std::string::npos) << e;
}

TEST(TopologyXml, DeclarationsCommentsAndEntitiesAreRead) {
  Topology t;
  std::string error;
  ASSERT_EQ(parseTopology("<?xml version=\"1.0\"?>\n<!-- c -->\n<system version='1' name=\"a &amp; &quot;b&quot;\">"
                          "<!-- inside --><cpu numaid=\"0\"/></system>\n<!-- after -->\n",
                          "decl.xml", &t, &error),
            ncclSuccess)
      << error;
  EXPECT_EQ(t.name, "a & \"b\"");
  ASSERT_EQ(t.cpus.size(), 1u);
  EXPECT_NE(topologyToXmlText(t).find("name=\"a &amp; &quot;b&quot;\""), std::string::npos);
}

TEST(TopologyXml, UnreadableFileIsASystemError) {
  Topology t;
  std::string error;
  EXPECT_EQ(loadTopologyFile("/nonexistent/weft/topo.xml", &t, &error), ncclSystemError);
  EXPECT_NE(error.find("/nonexistent/weft/topo.xml: cannot open the topology file"), std::string::npos) << error;
  EXPECT_EQ(writeTopologyFile("/nonexistent/weft/dump.xml", t, &error), ncclSystemError);
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
}

}  // namespace
}  // namespace weft::topo
