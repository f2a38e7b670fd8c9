// The tuner plugin loader with the example plugin of tests/tuner, built as ABI v7 (newest), v6, v5
// and v4 (fallbacks); a plugin whose init fails, or that cannot be loaded, is left out.
#include <gtest/gtest.h>

#include "algorithm_names.h"
#include "tuner_env.h"
#include "tuning/tuner.h"

namespace weft {
namespace {

const uint32_t kRingTree = (1u << int(Algo::kRing)) | (1u << int(Algo::kTree));

ModelInput fourRanks() {
  ModelInput in;
  in.nranks = 4;
  in.ranksPerHost = 4;
  in.cores = 8;
  in.maxChannels = 4;
  in.oneShotMaxBytes = 8192;
  return in;
}

Tuner withPlugin(const std::string& setting) {
  TunerOptions o;
  o.pluginSetting = setting;
  o.pluginShape = TunerPluginShape{42, 4, 1, 4, 4};
  // A slow handoff makes the model prefer the ring's fewer hops at every size used here, so the
  // plugin's Tree preference is visible.
  HostConstants hc;
  hc.handoffUs = 2.0;
  return Tuner(fourRanks(), hc, o);
}

void expectTreeBelow64K(const Tuner& t) {
  // The model alone picks Ring for AllReduce at these sizes (checked without the plugin below).
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 1024, kRingTree).algorithm, Algo::kTree);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 4096, kRingTree).algorithm, Algo::kTree);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 1 << 20, kRingTree).algorithm, Algo::kRing);
  EXPECT_EQ(t.choose(CollKind::kBroadcast, 1024, kRingTree).algorithm, Algo::kRing);
  // An algorithm the operation cannot run stays out of reach.
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 1024, 1u << int(Algo::kRing)).algorithm, Algo::kRing);
}

TEST(TunerPlugin, ModelAloneRingsAllReduce) {
  Tuner t = withPlugin("none");
  EXPECT_EQ(t.plugin(), nullptr);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 1024, kRingTree).algorithm, Algo::kRing);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 4096, kRingTree).algorithm, Algo::kRing);
}

TEST(TunerPlugin, NewestVersion) {
  ScopedEnv env({{"WEFT_EXAMPLE_TUNER", ""}});
  Tuner t = withPlugin(WEFT_EXAMPLE_TUNER_V7);
  ASSERT_NE(t.plugin(), nullptr);
  EXPECT_EQ(t.plugin()->version(), 7);
  EXPECT_EQ(t.plugin()->name(), "weft-example-v7");
  expectTreeBelow64K(t);
}

TEST(TunerPlugin, FallbackVersions) {
  ScopedEnv env({{"WEFT_EXAMPLE_TUNER", ""}});
  Tuner v6 = withPlugin(WEFT_EXAMPLE_TUNER_V6);
  ASSERT_NE(v6.plugin(), nullptr);
  EXPECT_EQ(v6.plugin()->version(), 6);
  expectTreeBelow64K(v6);
  Tuner v5 = withPlugin(WEFT_EXAMPLE_TUNER_V5);
  ASSERT_NE(v5.plugin(), nullptr);
  EXPECT_EQ(v5.plugin()->version(), 5);
  expectTreeBelow64K(v5);
  Tuner v4 = withPlugin(WEFT_EXAMPLE_TUNER_V4);
  ASSERT_NE(v4.plugin(), nullptr);
  EXPECT_EQ(v4.plugin()->version(), 4);
  expectTreeBelow64K(v4);
}

TEST(TunerPlugin, ChannelsAndProtocol) {
  ScopedEnv env({{"WEFT_EXAMPLE_TUNER", "coll=allgather algo=ring proto=ll maxbytes=1048576 channels=3"}});
  Tuner t = withPlugin(WEFT_EXAMPLE_TUNER_V7);
  ASSERT_NE(t.plugin(), nullptr);
  TunerChoice c = t.choose(CollKind::kAllGather, 4096, kRingTree);
  EXPECT_EQ(c.algorithm, Algo::kRing);
  EXPECT_EQ(c.protocol, Protocol::kLL);
  EXPECT_EQ(c.nChannels, 3);
  EXPECT_EQ(t.choose(CollKind::kAllGather, 8 << 20, kRingTree).protocol, Protocol::kSimple);
}

TEST(TunerPlugin, FailingInitIsIgnored) {
  ScopedEnv env({{"WEFT_EXAMPLE_TUNER", "fail=1"}});
  Tuner t = withPlugin(WEFT_EXAMPLE_TUNER_V6);
  EXPECT_EQ(t.plugin(), nullptr);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 1024, kRingTree).algorithm, Algo::kRing);
}

TEST(TunerPlugin, MissingLibraryIsIgnored) {
  EXPECT_EQ(withPlugin("/nonexistent/libnccl-tuner-x.so").plugin(), nullptr);
  EXPECT_EQ(withPlugin("no-such-weft-tuner").plugin(), nullptr);
  // A library without any tuner symbol.
  EXPECT_EQ(withPlugin("libm.so.6").plugin(), nullptr);
}

}  // namespace
}  // namespace weft
