// The cost table: filled for every collective, size, algorithm and protocol; the cheapest usable
// entry wins; WEFT_TUNER_CONSTANTS names what it cannot use (the calibration itself:
// calibration_test.cc).
#include <gtest/gtest.h>

#include "algorithm_names.h"
#include "tuner_inputs.h"
#include "tuning/calibration.h"
#include "tuning/tuner.h"

namespace weft {
namespace {

ModelInput fourRanks() { return fourRanksOneHost(); }

TunerOptions noSettings() {
  TunerOptions o;
  o.pluginSetting = "none";
  return o;
}

const uint32_t kAll = allAlgorithmsMask();

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
    EXPECT_GT(t.cost(ar, b, Algo::kRing, Protocol::kSimple), 0);
    EXPECT_GT(t.cost(ar, b, Algo::kTree, Protocol::kSimple), 0);
    EXPECT_GT(t.cost(ar, b, Algo::kDdaFlat, Protocol::kSimple), 0);
    EXPECT_GT(t.cost(ar, b, Algo::kDdaTree, Protocol::kSimple), 0);
    EXPECT_GT(t.cost(ar, b, Algo::kLowPrecision, Protocol::kSimple), 0);
    EXPECT_LT(t.cost(ar, b, Algo::kDdaFlat, Protocol::kLL), 0);      // no protocols for DDA
    EXPECT_LT(t.cost(bc, b, Algo::kDdaFlat, Protocol::kSimple), 0);  // AllReduce only
    // The one-shot ring (Ring + LL) only within WEFT_ONESHOT_MAX_BYTES.
    bool fits = Tuner::bucketBytes(b) <= 8192;
    EXPECT_EQ(t.cost(ar, b, Algo::kRing, Protocol::kLL) >= 0, fits) << Tuner::bucketBytes(b);
    EXPECT_EQ(t.cost(ar, b, Algo::kRing, Protocol::kLL128), t.cost(ar, b, Algo::kRing, Protocol::kLL));
    if (b > 0)
      EXPECT_GE(t.cost(ar, b, Algo::kRing, Protocol::kSimple), t.cost(ar, b - 1, Algo::kRing, Protocol::kSimple));
    int ch = t.channels(ar, b, Algo::kRing, Protocol::kSimple);
    EXPECT_GE(ch, 1);
    EXPECT_LE(ch, 4);
  }
}

TEST(TunerTable, DirectAccessNeedsOneHost) {
  ModelInput in = fourRanks();
  in.nHosts = 2;
  in.ranksPerHost = 2;
  EXPECT_LT(estimateUs(in, HostConstants{}, CollKind::kAllReduce, Algo::kDdaFlat, Protocol::kSimple, 1, 4096), 0);
  EXPECT_GT(estimateUs(in, HostConstants{}, CollKind::kAllReduce, Algo::kRing, Protocol::kSimple, 1, 4096), 0);
  // Crossing hosts costs more than staying on one.
  EXPECT_GT(estimateUs(in, HostConstants{}, CollKind::kAllGather, Algo::kRing, Protocol::kSimple, 1, 1 << 20),
            estimateUs(fourRanks(), HostConstants{}, CollKind::kAllGather, Algo::kRing, Protocol::kSimple, 1, 1 << 20));
}

TEST(TunerTable, CheapestUsableEntryWins) {
  Tuner t(fourRanks(), HostConstants{}, noSettings());
  for (int c = 0; c < kNumTunedColls; ++c)
    for (uint32_t supported : {kAll, 1u << int(Algo::kRing), (1u << int(Algo::kRing)) | (1u << int(Algo::kDdaFlat))})
      for (size_t bytes = 8; bytes <= (size_t(1) << 28); bytes *= 4) {
        int b = Tuner::bucketOf(bytes);
        float best = -1;
        for (int a = 0; a < algorithmCount(); ++a)
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

// choose() remembers its last answer per (collective, size bucket). A per-call selection that
// allows every (algorithm, protocol) pair gives the same answer but never uses the memo, so it is
// the reference. Masks change between calls to the same bucket (the memo must not answer for the
// wrong mask), and the whole sweep runs twice (the second pass answers from the memo).
TEST(TunerTable, RememberedChoicesEqualFreshOnes) {
  ModelInput in = fourRanks();
  in.maxChannels = 8;  // channel counts above 1 must come back from the memo too
  Tuner t(in, HostConstants{}, noSettings());
  const uint64_t everyRow = ~uint64_t(0);
  const uint32_t ring = 1u << int(Algo::kRing), tree = 1u << int(Algo::kTree);
  const uint32_t dda = (1u << int(Algo::kDdaFlat)) | (1u << int(Algo::kDdaTree));
  int multiChannel = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int c = 0; c < kNumTunedColls; ++c)
      for (size_t bytes = 8; bytes <= (size_t(1) << 30); bytes *= 2)
        for (uint32_t supported : {kAll, ring, tree, ring | dda, dda, 0u, kAll}) {
          const TunerChoice fresh = t.choose(tunedCollKind(c), bytes, supported, everyRow);
          const TunerChoice got = t.choose(tunedCollKind(c), bytes, supported);
          SCOPED_TRACE(std::string(collName(tunedCollKind(c))) + " " + std::to_string(bytes) + " B, mask " +
                       std::to_string(supported) + ", pass " + std::to_string(pass));
          EXPECT_EQ(got.algorithm, fresh.algorithm);
          EXPECT_EQ(got.protocol, fresh.protocol);
          EXPECT_EQ(got.nChannels, fresh.nChannels);
          EXPECT_EQ(got.costUs, fresh.costUs);
          multiChannel += got.nChannels > 1 ? 1 : 0;
        }
  EXPECT_GT(multiChannel, 0) << "no choice used more than one channel: the channel count went untested";
}

TEST(TunerTable, SmallAllReduceTakesTheOneShotRingLargeTakesTheRing) {
  Tuner t(fourRanks(), HostConstants{}, noSettings());
  const uint32_t ring = 1u << int(Algo::kRing);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 8, ring).protocol, Protocol::kLL);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 1 << 20, ring).protocol, Protocol::kSimple);
  // Point-to-point kinds are not tuned: Ring/Simple, one channel.
  TunerChoice p2p = t.choose(CollKind::kSend, 1024, kAll);
  EXPECT_EQ(p2p.algorithm, Algo::kRing);
  EXPECT_LT(p2p.costUs, 0);
}

TEST(TunerTable, MoreRanksThanCoresPaysWakeUps) {
  ModelInput in = fourRanks();
  HostConstants hc;
  double fits = estimateUs(in, hc, CollKind::kAllReduce, Algo::kRing, Protocol::kSimple, 1, 1024);
  in.cores = 2;
  double crowded = estimateUs(in, hc, CollKind::kAllReduce, Algo::kRing, Protocol::kSimple, 1, 1024);
  EXPECT_GT(crowded, fits);
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

}  // namespace
}  // namespace weft
