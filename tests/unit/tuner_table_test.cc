// The cost table: filled for every collective, size, algorithm and protocol; the cheapest usable
// entry wins; calibration constants round-trip through the cache file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tuner_env.h"
#include "tuning/calibration.h"
#include "tuning/tuner.h"

namespace weft {
namespace {

ModelInput fourRanks() {
  ModelInput in;
  in.nranks = 4;
  in.nHosts = 1;
  in.ranksPerHost = 4;
  in.cores = 8;
  in.minChannels = 1;
  in.maxChannels = 4;
  in.slotBytes = 128 * 1024;
  in.oneShotMaxBytes = 8192;
  return in;
}

TunerOptions noSettings() {
  TunerOptions o;
  o.pluginSetting = "none";
  return o;
}

constexpr uint32_t kAll = (1u << kNumAlgorithms) - 1;

TEST(TunerTable, BucketsCoverEverySize) {
  for (size_t n : {size_t(1), size_t(2), size_t(3), size_t(5), size_t(7), size_t(8), size_t(9), size_t(1000),
                   size_t(4096), size_t(4097), size_t(6000), size_t(1) << 30, (size_t(1) << 30) + 1}) {
    int b = Tuner::bucketOf(n);
    EXPECT_GE(Tuner::bucketBytes(b), n) << n;
    if (b > 0 && n > 1) EXPECT_LT(Tuner::bucketBytes(b - 1), n) << n;
  }
  EXPECT_EQ(Tuner::bucketOf(size_t(1) << 50), Tuner::kNumBuckets - 1);
}

TEST(TunerTable, FilledWhereTheModelHasAFormula) {
  Tuner t(fourRanks(), HostConstants{}, noSettings());
  const int ar = tunedCollIndex(CollKind::kAllReduce), bc = tunedCollIndex(CollKind::kBroadcast);
  for (int b = 0; b < Tuner::kNumBuckets; ++b) {
    EXPECT_GT(t.cost(ar, b, Algorithm::kRing, Protocol::kSimple), 0);
    EXPECT_GT(t.cost(ar, b, Algorithm::kTree, Protocol::kSimple), 0);
    EXPECT_GT(t.cost(ar, b, Algorithm::kDdaFlat, Protocol::kSimple), 0);
    EXPECT_GT(t.cost(ar, b, Algorithm::kDdaTree, Protocol::kSimple), 0);
    EXPECT_GT(t.cost(ar, b, Algorithm::kLowPrecision, Protocol::kSimple), 0);
    EXPECT_LT(t.cost(ar, b, Algorithm::kDdaFlat, Protocol::kLL), 0);  // no protocols for DDA
    EXPECT_LT(t.cost(bc, b, Algorithm::kDdaFlat, Protocol::kSimple), 0);  // AllReduce only
    // The one-shot ring (Ring + LL) only within WEFT_ONESHOT_MAX_BYTES.
    bool fits = Tuner::bucketBytes(b) <= 8192;
    EXPECT_EQ(t.cost(ar, b, Algorithm::kRing, Protocol::kLL) >= 0, fits) << Tuner::bucketBytes(b);
    EXPECT_EQ(t.cost(ar, b, Algorithm::kRing, Protocol::kLL128), t.cost(ar, b, Algorithm::kRing, Protocol::kLL));
    if (b > 0)
      EXPECT_GE(t.cost(ar, b, Algorithm::kRing, Protocol::kSimple), t.cost(ar, b - 1, Algorithm::kRing, Protocol::kSimple));
    int ch = t.channels(ar, b, Algorithm::kRing, Protocol::kSimple);
    EXPECT_GE(ch, 1);
    EXPECT_LE(ch, 4);
  }
}

TEST(TunerTable, DirectAccessNeedsOneHost) {
  ModelInput in = fourRanks();
  in.nHosts = 2;
  in.ranksPerHost = 2;
  EXPECT_LT(estimateUs(in, HostConstants{}, CollKind::kAllReduce, Algorithm::kDdaFlat, Protocol::kSimple, 1, 4096), 0);
  EXPECT_GT(estimateUs(in, HostConstants{}, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, 1, 4096), 0);
  // Crossing hosts costs more than staying on one.
  EXPECT_GT(estimateUs(in, HostConstants{}, CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, 1, 1 << 20),
            estimateUs(fourRanks(), HostConstants{}, CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, 1,
                       1 << 20));
}

TEST(TunerTable, CheapestUsableEntryWins) {
  Tuner t(fourRanks(), HostConstants{}, noSettings());
  for (int c = 0; c < kNumTunedColls; ++c)
    for (uint32_t supported : {kAll, 1u << int(Algorithm::kRing), (1u << int(Algorithm::kRing)) | (1u << int(Algorithm::kDdaFlat))})
      for (size_t bytes = 8; bytes <= (size_t(1) << 28); bytes *= 4) {
        int b = Tuner::bucketOf(bytes);
        float best = -1;
        for (int a = 0; a < kNumAlgorithms; ++a)
          for (int p = 0; p < kNumProtocols; ++p) {
            float cost = t.cost(c, b, Algorithm(a), Protocol(p));
            if ((supported >> a & 1) && cost >= 0 && (best < 0 || cost < best)) best = cost;
          }
        TunerChoice ch = t.choose(tunedCollKind(c), bytes, supported);
        SCOPED_TRACE(std::string(collName(tunedCollKind(c))) + " " + std::to_string(bytes));
        EXPECT_TRUE(supported >> int(ch.algorithm) & 1);
        EXPECT_FLOAT_EQ(ch.costUs, best);
        EXPECT_EQ(ch.nChannels, t.channels(c, b, ch.algorithm, ch.protocol));
      }
}

TEST(TunerTable, SmallAllReduceTakesTheOneShotRingLargeTakesTheRing) {
  Tuner t(fourRanks(), HostConstants{}, noSettings());
  const uint32_t ring = 1u << int(Algorithm::kRing);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 8, ring).protocol, Protocol::kLL);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 1 << 20, ring).protocol, Protocol::kSimple);
  // Point-to-point kinds are not tuned: Ring/Simple, one channel.
  TunerChoice p2p = t.choose(CollKind::kSend, 1024, kAll);
  EXPECT_EQ(p2p.algorithm, Algorithm::kRing);
  EXPECT_LT(p2p.costUs, 0);
}

TEST(TunerTable, MoreRanksThanCoresPaysWakeUps) {
  ModelInput in = fourRanks();
  HostConstants hc;
  double fits = estimateUs(in, hc, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, 1, 1024);
  in.cores = 2;
  double crowded = estimateUs(in, hc, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, 1, 1024);
  EXPECT_GT(crowded, fits);
}

TEST(TunerCalibration, CacheFileRoundTrip) {
  std::string path = "/tmp/weft-tuner-test-" + std::to_string(getpid()) + "/weft/cal.txt";
  HostConstants hc;
  hc.copyGBps = 12.5;
  hc.handoffUs = 0.33;
  std::string why;
  ASSERT_TRUE(saveHostConstants(path, hc, &why)) << why;
  HostConstants back;
  ASSERT_TRUE(loadHostConstants(path, &back));
  EXPECT_DOUBLE_EQ(back.copyGBps, 12.5);
  EXPECT_DOUBLE_EQ(back.handoffUs, 0.33);
  { std::ofstream(path) << "weft-tuner-calibration 1\ncopyGBps -3\n"; }
  EXPECT_FALSE(loadHostConstants(path, &back));
  { std::ofstream(path) << "something else\n"; }
  EXPECT_FALSE(loadHostConstants(path, &back));
  EXPECT_FALSE(loadHostConstants(path + ".missing", &back));
  std::remove(path.c_str());
}

TEST(TunerCalibration, OverridesNameTheBadTokens) {
  HostConstants hc;
  std::string bad;
  applyConstantOverrides("copygbps=3, handoffUs=0.5,bogus=1,stepUs=-2,netGBps", &hc, &bad);
  EXPECT_DOUBLE_EQ(hc.copyGBps, 3);
  EXPECT_DOUBLE_EQ(hc.handoffUs, 0.5);
  EXPECT_DOUBLE_EQ(hc.stepUs, HostConstants{}.stepUs);
  EXPECT_NE(bad.find("bogus=1"), std::string::npos);
  EXPECT_NE(bad.find("stepUs=-2"), std::string::npos);
  EXPECT_NE(bad.find("netGBps"), std::string::npos);
}

TEST(TunerCalibration, ModesOffAutoRedo) {
  std::string dir = "/tmp/weft-tuner-cal-" + std::to_string(getpid());
  {
    // WEFT_TUNER_CONSTANTS is agreed per communicator (agreed_constants.h), not applied to this
    // host's contribution.
    ScopedEnv env({{"WEFT_TUNER_CALIBRATE", "off"}, {"XDG_CACHE_HOME", dir}, {"WEFT_TUNER_CONSTANTS", "netLatUs=7"}});
    EXPECT_DOUBLE_EQ(hostConstants().copyGBps, HostConstants{}.copyGBps);
    EXPECT_DOUBLE_EQ(hostConstants().netLatUs, HostConstants{}.netLatUs);
    EXPECT_EQ(hostConstantsSource(), "defaults");
  }
  std::string path;
  {
    ScopedEnv env({{"WEFT_TUNER_CALIBRATE", "auto"}, {"XDG_CACHE_HOME", dir}});
    path = calibrationCachePath();
    EXPECT_EQ(path.rfind(dir + "/weft/calibration-", 0), 0u) << path;
    std::remove(path.c_str());
    const HostConstants& hc = hostConstants();
    for (int i = 0; i < kNumConstantFields; ++i) EXPECT_GT(hc.*kConstantFields[i].field, 0);
    EXPECT_EQ(hostConstantsSource().rfind("measured", 0), 0u);
    HostConstants cached;
    ASSERT_TRUE(loadHostConstants(path, &cached));
    // A changed cache is what the next process reads.
    cached.copyGBps = 1234;
    std::string why;
    ASSERT_TRUE(saveHostConstants(path, cached, &why));
    calibrationResetForTesting();
    EXPECT_DOUBLE_EQ(hostConstants().copyGBps, 1234);
    EXPECT_EQ(hostConstantsSource(), "cache " + path);
  }
  {
    ScopedEnv env({{"WEFT_TUNER_CALIBRATE", "redo"}, {"XDG_CACHE_HOME", dir}});
    EXPECT_EQ(hostConstantsSource().rfind("measured", 0), 0u);
    HostConstants cached;
    ASSERT_TRUE(loadHostConstants(path, &cached));
    EXPECT_NE(cached.copyGBps, 1234);  // rewritten by the new measurement
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace weft
