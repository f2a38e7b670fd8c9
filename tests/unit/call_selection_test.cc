// algSelection (ncclCollConfig_t, tuning/call_selection.h): NCCL's grammar over Weft's rows.
#include "tuning/call_selection.h"

#include <gtest/gtest.h>

#include <string>

#include "collectives/registry.h"

namespace weft {
namespace {

AlgoProtoRows rowsOf(const char* algo, std::initializer_list<Protocol> protos) {
  AlgoProtoRows r = 0;
  for (Protocol p : protos) r |= AlgoProtoRows(1) << rowBit(algorithmNamed(algo), p);
  return r;
}
constexpr std::initializer_list<Protocol> kAll = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

AlgoProtoRows parsed(const char* text) {
  AlgoProtoRows rows = ~AlgoProtoRows(0);
  std::string why;
  EXPECT_TRUE(parseAlgSelection(text, &rows, &why)) << text << ": " << why;
  return rows;
}

TEST(CallSelection, RowNamesAreAlgorithmAndProtocolInCapitals) {
  EXPECT_EQ(rowName(algorithmNamed("Ring"), Protocol::kSimple), "RING_SIMPLE");
  EXPECT_EQ(rowName(algorithmNamed("DDAFlat"), Protocol::kLL128), "DDAFLAT_LL128");
}

TEST(CallSelection, TagsArePrefixesCaseAndSpacesIgnored) {
  EXPECT_EQ(parsed(nullptr), 0u);
  EXPECT_EQ(parsed(""), 0u);
  EXPECT_EQ(parsed("RING"), rowsOf("Ring", kAll));
  EXPECT_EQ(parsed(" ring_simple "), rowsOf("Ring", {Protocol::kSimple}));
  EXPECT_EQ(parsed("tree_LL"), rowsOf("Tree", {Protocol::kLL, Protocol::kLL128}));  // a prefix of both
  EXPECT_EQ(parsed("dda"), rowsOf("DDAFlat", kAll) | rowsOf("DDATree", kAll));
}

TEST(CallSelection, CommaUnitesPlusIntersectsCaretNegates) {
  EXPECT_EQ(parsed("RING,TREE"), rowsOf("Ring", kAll) | rowsOf("Tree", kAll));
  EXPECT_EQ(parsed("RING+^RING_LL"), rowsOf("Ring", {Protocol::kSimple}));
  EXPECT_EQ(parsed("dda+^ddaflat"), rowsOf("DDATree", kAll));
  EXPECT_EQ(parsed("RING+TREE"), 0u);  // nothing is both
  AlgoProtoRows everyRow = 0;
  for (int a = 0; a < algorithmCount(); ++a) everyRow |= rowsOf(algorithmName(Algorithm(a)), kAll);
  EXPECT_EQ(parsed("^RING"), everyRow & ~rowsOf("Ring", kAll));
}

TEST(CallSelection, NcclRowsWeftLacksSelectNothing) {
  for (const char* t : {"NVLS", "nvls_tree", "PAT", "COLLNET_DIRECT", "SYMK_TmaST"}) EXPECT_EQ(parsed(t), 0u) << t;
}

TEST(CallSelection, MalformedOrUnknownIsRefusedWithTheReason) {
  for (const char* t : {"FOO", "RING,", ",RING", "RING+", "^", "RING,,TREE"}) {
    AlgoProtoRows rows = 1;
    std::string why;
    EXPECT_FALSE(parseAlgSelection(t, &rows, &why)) << t;
    EXPECT_FALSE(why.empty()) << t;
  }
  std::string why;
  AlgoProtoRows rows = 0;
  EXPECT_FALSE(parseAlgSelection("FOO", &rows, &why));
  EXPECT_NE(why.find("FOO"), std::string::npos) << why;
}

}  // namespace
}  // namespace weft
