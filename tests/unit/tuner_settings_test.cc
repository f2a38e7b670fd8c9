// NCCL_ALGO / NCCL_PROTO in every form NCCL accepts, and RCCL_OVERRIDE_ALGO / _PROTO.
#include <gtest/gtest.h>

#include "algorithm_names.h"
#include "tuner_env.h"
#include "tuning/algo_filter.h"
#include "tuning/tuner.h"

namespace weft {
namespace {

constexpr uint32_t bit(Algorithm a) { return 1u << int(a); }
constexpr uint32_t bit(Protocol p) { return 1u << int(p); }
const uint32_t kAllAlgos = allAlgorithmsMask();
constexpr uint32_t kAllProtos = (1u << kNumProtocols) - 1;
const int AR = tunedCollIndex(CollKind::kAllReduce);
const int BC = tunedCollIndex(CollKind::kBroadcast);
const int AG = tunedCollIndex(CollKind::kAllGather);

AlgoProtoFilter algos(const std::string& text, std::vector<std::string>* warnings) {
  AlgoProtoFilter f;
  parseAlgoSetting(text, "NCCL_ALGO", &f, warnings);
  return f;
}

TEST(TunerSettings, PlainListAppliesToEveryCollective) {
  std::vector<std::string> w;
  AlgoProtoFilter f = algos("ring,tree", &w);
  EXPECT_TRUE(w.empty());
  for (int c = 0; c < kNumTunedColls; ++c) EXPECT_EQ(f.algos[c], bit(Algo::kRing) | bit(Algo::kTree));
  for (int c = 0; c < kNumTunedColls; ++c) EXPECT_EQ(f.protos[c], kAllProtos);
}

TEST(TunerSettings, CaretExcludes) {
  std::vector<std::string> w;
  AlgoProtoFilter f = algos("^Tree,DDAFlat", &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(f.algos[BC], kAllAlgos & ~bit(Algo::kTree) & ~bit(Algo::kDdaFlat));
}

TEST(TunerSettings, PerCollectiveEntries) {
  std::vector<std::string> w;
  AlgoProtoFilter f = algos("ring;allreduce:tree,ddaflat;broadcast:^ring", &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(f.algos[AR], bit(Algo::kTree) | bit(Algo::kDdaFlat));
  EXPECT_EQ(f.algos[BC], kAllAlgos & ~bit(Algo::kRing));
  EXPECT_EQ(f.algos[AG], bit(Algo::kRing));
  // Only a prefix, no first entry: the others keep everything.
  f = algos("allgather,reducescatter:lowprecision", &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(f.algos[AG], bit(Algo::kLowPrecision));
  EXPECT_EQ(f.algos[tunedCollIndex(CollKind::kReduceScatter)], bit(Algo::kLowPrecision));
  EXPECT_EQ(f.algos[AR], kAllAlgos);
}

TEST(TunerSettings, CaseAndWeftSpellings) {
  std::vector<std::string> w;
  AlgoProtoFilter f = algos("RING;AllReduce:dda_tree,LowP;BROADCAST:DdaFlat", &w);
  EXPECT_TRUE(w.empty()) << w[0];
  EXPECT_EQ(f.algos[AR], bit(Algo::kDdaTree) | bit(Algo::kLowPrecision));
  EXPECT_EQ(f.algos[BC], bit(Algo::kDdaFlat));
  EXPECT_EQ(f.algos[tunedCollIndex(CollKind::kReduce)], bit(Algo::kRing));
}

TEST(TunerSettings, NcclAlgorithmsWeftLacksSelectNothing) {
  std::vector<std::string> w;
  AlgoProtoFilter f = algos("nvls,CollNetDirect,PAT;allreduce:NVLSTree,ring", &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(f.algos[BC], 0u);
  EXPECT_EQ(f.algos[AR], bit(Algo::kRing));
}

TEST(TunerSettings, BadTokensAreNamedAndSkipped) {
  std::vector<std::string> w;
  AlgoProtoFilter f = algos("ring,bogus;allreduce:tree;tree;frobnicate:ring", &w);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("\"bogus\""), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("\"tree\" needs a collective prefix"), std::string::npos) << w[1];
  EXPECT_NE(w[2].find("\"frobnicate\""), std::string::npos) << w[2];
  EXPECT_EQ(f.algos[BC], bit(Algo::kRing));
  EXPECT_EQ(f.algos[AR], bit(Algo::kTree));
}

TEST(TunerSettings, ProtocolForms) {
  std::vector<std::string> w;
  AlgoProtoFilter f;
  parseProtoSetting("^LL128;allreduce:LL128", "NCCL_PROTO", &f, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(f.protos[BC], bit(Protocol::kLL) | bit(Protocol::kSimple));
  EXPECT_EQ(f.protos[AR], bit(Protocol::kLL128));
  parseProtoSetting("ll,SIMPLE;broadcast:^simple;allreduce:ll64", "NCCL_PROTO", &f, &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("\"ll64\""), std::string::npos);
  EXPECT_EQ(f.protos[AG], bit(Protocol::kLL) | bit(Protocol::kSimple));
  EXPECT_EQ(f.protos[BC], bit(Protocol::kLL) | bit(Protocol::kLL128));
  EXPECT_TRUE(f.allows(AG, Algo::kRing, Protocol::kLL));
  EXPECT_FALSE(f.allows(BC, Algo::kRing, Protocol::kSimple));
}

ModelInput fourRanks() {
  ModelInput in;
  in.nranks = 4;
  in.ranksPerHost = 4;
  in.cores = 8;
  in.maxChannels = 2;
  in.oneShotMaxBytes = 8192;
  return in;
}

const uint32_t kRingTree = bit(Algo::kRing) | bit(Algo::kTree);

TEST(TunerSettings, FromTheEnvironmentIntoTheChoice) {
  ScopedEnv env({{"NCCL_ALGO", "ring;allreduce:tree"}, {"NCCL_PROTO", "simple"}, {"NCCL_TUNER_PLUGIN", "none"}});
  Tuner t(fourRanks(), HostConstants{}, tunerOptionsFrom(param::localAgreed(), param::tunerPlugin()));
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 8, kRingTree).algorithm, Algo::kTree);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 8, kRingTree).protocol, Protocol::kSimple);
  EXPECT_EQ(t.choose(CollKind::kBroadcast, 8, kRingTree).algorithm, Algo::kRing);
  // Nothing allowed can run it: the model's choice, not a failure.
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 8, bit(Algo::kRing)).algorithm, Algo::kRing);
}

TEST(TunerSettings, RcclOverrideAlgoForcesWhereItCanRun) {
  ScopedEnv env({{"RCCL_OVERRIDE_ALGO", "TREE"}, {"NCCL_ALGO", "ring"}, {"NCCL_TUNER_PLUGIN", "none"}});
  TunerOptions o = tunerOptionsFrom(param::localAgreed(), param::tunerPlugin());
  EXPECT_TRUE(o.warnings.empty());
  Tuner t(fourRanks(), HostConstants{}, o);
  // Bypasses NCCL_ALGO and the model.
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 1 << 20, kRingTree).algorithm, Algo::kTree);
  EXPECT_EQ(t.choose(CollKind::kBroadcast, 64, kRingTree).algorithm, Algo::kTree);
  // Tree has no AllGather, and an algorithm that cannot run the task is never forced.
  EXPECT_EQ(t.choose(CollKind::kAllGather, 64, kRingTree).algorithm, Algo::kRing);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 64, bit(Algo::kRing)).algorithm, Algo::kRing);
}

TEST(TunerSettings, RcclOverrideProtoAndBadNames) {
  {
    ScopedEnv env({{"RCCL_OVERRIDE_PROTO", "ll"}, {"NCCL_TUNER_PLUGIN", "none"}});
    Tuner t(fourRanks(), HostConstants{}, tunerOptionsFrom(param::localAgreed(), param::tunerPlugin()));
    const uint32_t ring = bit(Algo::kRing);
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 4096, ring).protocol, Protocol::kLL);
    // Above WEFT_ONESHOT_MAX_BYTES the one-shot ring cannot run: the override does not apply.
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 1 << 20, ring).protocol, Protocol::kSimple);
  }
  ScopedEnv env({{"RCCL_OVERRIDE_ALGO", "Bogus"}, {"RCCL_OVERRIDE_PROTO", "LL256"}});
  TunerOptions o = tunerOptionsFrom(param::localAgreed(), param::tunerPlugin());
  ASSERT_EQ(o.warnings.size(), 2u);
  EXPECT_NE(o.warnings[0].find("RCCL_OVERRIDE_ALGO=\"Bogus\""), std::string::npos) << o.warnings[0];
  EXPECT_NE(o.warnings[1].find("\"LL256\""), std::string::npos) << o.warnings[1];
  EXPECT_EQ(o.overrideAlgo, -1);
  EXPECT_EQ(o.overrideProto, -1);
}

}  // namespace
}  // namespace weft
