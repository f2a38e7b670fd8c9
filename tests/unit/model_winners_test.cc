// The cost model against measured times. For AllReduce (float32 sum, out of place) on one host of
// 2 cores, with 2 ranks and with 4 ranks (twice as many as cores), the algorithm the tuner picks
// at each size from 8 B to 64 MiB must be one whose measured time was within 15% of the fastest
// algorithm allowed at that size (DDA within host mode's default size limits); the same for
// AllGather and ReduceScatter further down, between the ring and DDA flat, and for Broadcast and
// Reduce, between the ring and the tree.
//
// The times are the best of 3 repetitions of `benchmarks/run_algo_compare.sh --ranks N --reps 3`,
// measured on 2026-12-01 on a 2-core AMD EPYC VM (Debian 12), each algorithm forced with NCCL_ALGO.
// The tuner runs with three calibrations of that machine taken the same morning, which differ by
// up to 40% (reduceGBps): a pick that hangs on a hair of the constants fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "algorithm_names.h"
#include "tuner_inputs.h"
#include "tuning/tuner.h"

namespace weft {
namespace {

struct Row {
  size_t bytes;
  double ring, tree, ddaFlat, ddaTree;  // us
};

const std::vector<Row> kTwoRanks = {
    {8, 0.56, 1.11, 0.88, 1.17},
    {16, 0.54, 1.06, 0.88, 1.25},
    {32, 0.58, 1.10, 0.93, 1.21},
    {64, 0.72, 1.09, 0.95, 1.27},
    {128, 0.72, 1.39, 0.92, 1.41},
    {256, 0.73, 1.46, 0.97, 1.47},
    {512, 0.86, 1.47, 0.96, 1.45},
    {1024, 0.86, 1.54, 1.14, 1.69},
    {2048, 1.03, 2.52, 1.51, 1.98},
    {4096, 1.35, 3.22, 1.68, 2.18},
    {8192, 1.51, 4.92, 2.38, 2.29},
    {16384, 2.71, 4.34, 3.45, 2.92},
    {32768, 3.59, 5.98, 4.89, 3.94},
    {65536, 6.16, 9.30, 8.79, 6.58},
    {131072, 11.18, 15.96, 15.23, 11.19},
    {262144, 22.17, 29.67, 31.35, 21.34},
    {524288, 43.22, 49.21, 58.98, 45.31},
    {1048576, 87.33, 91.16, 124.42, 85.95},
    {2097152, 189.06, 195.66, 254.62, 216.26},
    {4194304, 351.05, 373.89, 499.39, 339.88},
    {8388608, 885.91, 918.79, 1027.11, 742.53},
    {16777216, 1842.67, 1865.06, 2233.10, 1960.98},
    {33554432, 4481.48, 4009.10, 6137.40, 4526.89},
    {67108864, 9174.12, 8705.53, 11103.90, 9360.63},
};

const std::vector<Row> kFourRanks = {
    {8, 17.00, 25.22, 10.96, 22.17},
    {16, 19.16, 26.48, 10.35, 18.96},
    {32, 17.06, 26.31, 10.39, 19.20},
    {64, 19.57, 26.39, 10.40, 19.00},
    {128, 19.51, 27.05, 10.35, 19.32},
    {256, 20.31, 27.90, 10.43, 19.27},
    {512, 19.62, 32.58, 11.03, 19.68},
    {1024, 20.54, 33.14, 11.45, 23.45},
    {2048, 21.27, 27.91, 13.96, 24.47},
    {4096, 20.88, 30.56, 13.82, 20.40},
    {8192, 23.37, 29.35, 14.56, 21.31},
    {16384, 39.71, 35.99, 17.23, 22.65},
    {32768, 42.52, 37.31, 21.68, 25.95},
    {65536, 49.59, 49.60, 33.24, 32.06},
    {131072, 64.04, 62.50, 56.96, 42.64},
    {262144, 91.03, 109.05, 95.77, 64.80},
    {524288, 149.57, 203.05, 183.71, 113.84},
    {1048576, 280.70, 343.09, 371.33, 204.85},
    {2097152, 604.11, 587.17, 743.72, 408.92},
    {4194304, 1282.14, 1284.74, 1744.81, 907.48},
    {8388608, 3357.30, 2994.61, 3589.70, 2192.39},
    {16777216, 7364.27, 6633.89, 7283.07, 5014.40},
    {33554432, 14886.70, 13570.80, 15407.90, 10962.60},
    {67108864, 34972.80, 25469.40, 32583.50, 21089.50},
};

// copyGBps, reduceGBps, handoffUs, stepUs, futexWakeUs, yieldHandoffUs, memGBps, peerReadGBps.
HostConstants calibration(double copy, double reduce, double handoff, double step, double futex, double yield,
                          double mem, double peerRead) {
  HostConstants c;
  c.copyGBps = copy;
  c.reduceGBps = reduce;
  c.handoffUs = handoff;
  c.stepUs = step;
  c.futexWakeUs = futex;
  c.yieldHandoffUs = yield;
  c.memGBps = mem;
  c.peerReadGBps = peerRead;
  c.cacheMiB = 32;
  return c;
}

const std::vector<HostConstants> kCalibrations = {
    calibration(90.52, 44.11, 0.4414, 0.06979, 14.86, 2.168, 19.95, 26.03),
    calibration(95.75, 49.40, 0.3827, 0.06512, 13.69, 1.954, 15.34, 24.64),
    calibration(84.52, 28.72, 0.3067, 0.06731, 15.76, 2.112, 13.79, 25.08),
};

// RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES at its default. RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES at its
// default sets no limit in host mode: DDA tree is allowed at every size.
constexpr size_t kFlatMaxBytes = 204800;

// Sizes where the model is known to pick an algorithm more than 15% behind, and by how much it
// was measured behind: each is listed so that it shows, and so that a model that gets it right
// does not fail.
struct KnownMiss {
  int nranks;
  size_t bytes;
};
// 4 ranks, 32 KiB: DDATree (25.95 us) against DDAFlat (21.68); the model has them within 2%.
// 2 ranks, 8 MiB: Ring (885.91 us) against DDATree (742.53); at 4 MiB DDATree was 3% ahead and at
// 16 MiB Ring 6% ahead, so this one is the machine's noise as much as the model's.
const std::vector<KnownMiss> kKnownMisses = {{4, 32768}, {2, 8388608}};

// The measuring machine: nranks on 2 cores, 1-2 channels of 128 KiB slots, the one-shot ring up to
// 8 KiB; the tuner under calibration k, without plugins.
Tuner twoCoreTuner(int nranks, size_t k) {
  ModelInput in = fourRanksOneHost();
  in.nranks = in.ranksPerHost = in.ranksPerMachine = nranks;
  in.cores = 2;
  in.maxChannels = 2;
  TunerOptions opts;
  opts.pluginSetting = "none";
  return Tuner(in, kCalibrations[k], opts);
}

void expectPicksNearTheFastest(int nranks, const std::vector<Row>& rows) {
  for (size_t k = 0; k < kCalibrations.size(); ++k) {
    const Tuner tuner = twoCoreTuner(nranks, k);
    for (const Row& r : rows) {
      uint32_t allowed = 1u << int(Algo::kRing) | 1u << int(Algo::kTree) | 1u << int(Algo::kDdaTree);
      if (r.bytes <= kFlatMaxBytes) allowed |= 1u << int(Algo::kDdaFlat);
      auto measured = [&](Algorithm a) {
        return a == Algo::kRing ? r.ring : a == Algo::kTree ? r.tree : a == Algo::kDdaFlat ? r.ddaFlat : r.ddaTree;
      };
      double fastest = 1e300;
      for (Algorithm a : {Algo::kRing, Algo::kTree, Algo::kDdaFlat, Algo::kDdaTree})
        if (allowed >> int(a) & 1) fastest = std::min(fastest, measured(a));
      const Algorithm pick = tuner.choose(CollKind::kAllReduce, r.bytes, allowed).algorithm;
      ASSERT_TRUE(allowed >> int(pick) & 1) << algorithmName(pick);
      const double behind = measured(pick) / fastest;
      const bool known = std::any_of(kKnownMisses.begin(), kKnownMisses.end(),
                                     [&](const KnownMiss& m) { return m.nranks == nranks && m.bytes == r.bytes; });
      if (!known)
        EXPECT_LE(behind, 1.15) << nranks << " ranks, " << r.bytes << " B, calibration " << k << ": the model picks "
                                << algorithmName(pick) << ", measured " << behind << "x the fastest";
    }
  }
}

TEST(ModelWinners, TwoRanksOnTwoCores) { expectPicksNearTheFastest(2, kTwoRanks); }

TEST(ModelWinners, FourRanksOnTwoCores) { expectPicksNearTheFastest(4, kFourRanks); }

// AllGather and ReduceScatter (float32, sum, out of place), the ring against DDA flat, on the same
// machine (2026-12-01, medians of 3 interleaved runs of `all_gather_perf` and `reduce_scatter_perf
// -N n -a 3 --rotate 0 -c 1` with NCCL_ALGO=Ring and NCCL_ALGO=DDAFlat; bytes: the whole output of
// AllGather, the whole input of ReduceScatter). From 3 ranks on, every rank of the ring but the
// last moves each block through a FIFO slot besides its own work, and the ring's n-1 hops wait for
// ranks that share cores; with 2 ranks the ring has no middle rank and stays ahead.
struct PairRow {
  size_t bytes;
  double ring, other;  // us: the ring, and the algorithm it is weighed against
};

const std::vector<PairRow> kGatherTwoRanks = {
    {32, 0.53, 0.94},
    {512, 0.69, 0.94},
    {2048, 0.90, 1.06},
    {8192, 1.30, 1.47},
    {65536, 3.41, 4.00},
    {262144, 14.62, 12.00},
    {1048576, 54.93, 45.90},
    {4194304, 228.49, 241.43},
    {16777216, 997.33, 1192.03},
    {67108864, 5547.20, 7275.18},
};

const std::vector<PairRow> kGatherFourRanks = {
    {128, 22.42, 13.14},          {512, 22.28, 13.29},
    {2048, 24.09, 13.35},         {8192, 25.92, 15.05},
    {65536, 32.43, 19.46},        {262144, 54.88, 36.28},
    {1048576, 208.50, 102.89},    {4194304, 1001.15, 440.40},
    {16777216, 4238.66, 2644.22}, {67108864, 23423.00, 12385.90},
};

const std::vector<PairRow> kScatterTwoRanks = {
    {32, 0.40, 0.46},
    {512, 0.38, 0.47},
    {2048, 0.38, 0.59},
    {8192, 0.75, 0.77},
    {65536, 2.09, 2.84},
    {262144, 8.20, 13.19},
    {1048576, 35.14, 48.44},
    {4194304, 205.53, 238.41},
    {16777216, 1120.19, 1363.17},
    {67108864, 5792.20, 6557.49},
};

const std::vector<PairRow> kScatterFourRanks = {
    {128, 18.11, 10.13},          {512, 18.48, 10.14},
    {2048, 18.74, 10.17},         {8192, 18.84, 10.77},
    {65536, 23.24, 14.94},        {262144, 36.75, 36.16},
    {1048576, 141.15, 117.47},    {4194304, 522.62, 719.02},
    {16777216, 2971.93, 2858.05}, {67108864, 19217.40, 11481.70},
};

// Broadcast and Reduce (float32, sum, out of place), the ring against the tree, on the same
// machine (2026-12-01, medians of 3 interleaved runs of `broadcast_perf` and `reduce_perf -N n -a 3
// --rotate 0 -c 1` with NCCL_ALGO=Ring and NCCL_ALGO=Tree). The ring was ahead up to 1 MiB (2.7-3.7x
// at 4 ranks up to 8 KiB); above, the tree was at most 12% ahead, but for the Reduce listed below.
const std::vector<PairRow> kBroadcastTwoRanks = {
    {8, 0.28, 0.45},
    {512, 0.31, 0.57},
    {2048, 0.47, 0.92},
    {8192, 0.79, 1.87},
    {65536, 2.70, 3.67},
    {262144, 11.61, 12.81},
    {1048576, 45.57, 46.34},
    {4194304, 194.30, 204.11},
    {16777216, 1015.40, 1006.94},
    {67108864, 6109.38, 5915.94},
};

const std::vector<PairRow> kBroadcastFourRanks = {
    {8, 1.90, 7.03},
    {512, 2.24, 6.93},
    {2048, 2.65, 8.25},
    {8192, 3.00, 8.95},
    {65536, 8.15, 15.99},
    {262144, 24.41, 34.65},
    {1048576, 99.38, 110.01},
    {4194304, 602.59, 633.90},
    {16777216, 2709.91, 2690.00},
    {67108864, 12411.40, 20535.40},
};

const std::vector<PairRow> kReduceTwoRanks = {
    {8, 0.39, 0.46},
    {512, 0.43, 0.58},
    {2048, 0.63, 1.03},
    {8192, 0.90, 1.58},
    {65536, 4.40, 6.69},
    {262144, 16.83, 21.36},
    {1048576, 48.66, 49.19},
    {4194304, 211.47, 218.34},
    {16777216, 1005.70, 895.68},
    {67108864, 5480.56, 5180.78},
};

const std::vector<PairRow> kReduceFourRanks = {
    {8, 2.56, 7.56},
    {512, 2.46, 7.47},
    {2048, 2.74, 8.02},
    {8192, 4.36, 11.93},
    {65536, 19.38, 21.03},
    {262144, 66.66, 73.42},
    {1048576, 200.46, 219.19},
    {4194304, 871.61, 829.43},
    {16777216, 4492.64, 4234.78},
    {67108864, 19886.30, 16420.20},
};

struct PairMiss {
  CollKind coll;
  int nranks;
  size_t bytes;
};
// AllGather, 2 ranks, 256 KiB and 1 MiB: the model keeps the ring, measured 1.22x and 1.20x behind
// DDA; the tuner's own runs (the ring) took 11.97 and 46.49 us in the same session, level with DDA.
// ReduceScatter, 4 ranks, 1 MiB and 64 MiB: the model takes the ring from 1 MiB, measured 1.20x and
// 1.67x behind DDA; at 4 MiB the ring was 1.38x ahead and at 16 MiB the two were level, so the
// large sizes swing from run to run on this machine.
// Reduce, 4 ranks, 64 MiB: the model keeps the ring, measured 1.21x behind the tree out of place;
// in place, in the same runs, the ring was 1.32x ahead.
const std::vector<PairMiss> kPairMisses = {{CollKind::kAllGather, 2, 262144},
                                           {CollKind::kAllGather, 2, 1048576},
                                           {CollKind::kReduceScatter, 4, 1048576},
                                           {CollKind::kReduceScatter, 4, 67108864},
                                           {CollKind::kReduce, 4, 67108864}};

void expectPairPicksNearTheFastest(CollKind coll, int nranks, const std::vector<PairRow>& rows,
                                   Algorithm other = Algo::kDdaFlat) {
  const uint32_t allowed = 1u << int(Algo::kRing) | 1u << int(other);
  for (size_t k = 0; k < kCalibrations.size(); ++k) {
    const Tuner tuner = twoCoreTuner(nranks, k);
    for (const PairRow& r : rows) {
      const Algorithm pick = tuner.choose(coll, r.bytes, allowed).algorithm;
      ASSERT_TRUE(allowed >> int(pick) & 1) << algorithmName(pick);
      const double behind = (pick == Algo::kRing ? r.ring : r.other) / std::min(r.ring, r.other);
      const bool known = std::any_of(kPairMisses.begin(), kPairMisses.end(), [&](const PairMiss& m) {
        return m.coll == coll && m.nranks == nranks && m.bytes == r.bytes;
      });
      if (!known)
        EXPECT_LE(behind, 1.15) << collName(coll) << ", " << nranks << " ranks, " << r.bytes << " B, calibration " << k
                                << ": the model picks " << algorithmName(pick) << ", measured " << behind
                                << "x the fastest";
    }
  }
}

TEST(ModelWinners, AllGatherTwoRanksOnTwoCores) {
  expectPairPicksNearTheFastest(CollKind::kAllGather, 2, kGatherTwoRanks);
}

TEST(ModelWinners, AllGatherFourRanksOnTwoCores) {
  expectPairPicksNearTheFastest(CollKind::kAllGather, 4, kGatherFourRanks);
}

TEST(ModelWinners, ReduceScatterTwoRanksOnTwoCores) {
  expectPairPicksNearTheFastest(CollKind::kReduceScatter, 2, kScatterTwoRanks);
}

TEST(ModelWinners, ReduceScatterFourRanksOnTwoCores) {
  expectPairPicksNearTheFastest(CollKind::kReduceScatter, 4, kScatterFourRanks);
}

TEST(ModelWinners, BroadcastTwoRanksOnTwoCores) {
  expectPairPicksNearTheFastest(CollKind::kBroadcast, 2, kBroadcastTwoRanks, Algo::kTree);
}

TEST(ModelWinners, BroadcastFourRanksOnTwoCores) {
  expectPairPicksNearTheFastest(CollKind::kBroadcast, 4, kBroadcastFourRanks, Algo::kTree);
}

TEST(ModelWinners, ReduceTwoRanksOnTwoCores) {
  expectPairPicksNearTheFastest(CollKind::kReduce, 2, kReduceTwoRanks, Algo::kTree);
}

TEST(ModelWinners, ReduceFourRanksOnTwoCores) {
  expectPairPicksNearTheFastest(CollKind::kReduce, 4, kReduceFourRanks, Algo::kTree);
}

}  // namespace
}  // namespace weft
