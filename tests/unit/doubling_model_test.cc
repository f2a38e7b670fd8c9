// Recursive doubling across hosts as the tuner sees it: which of its rounds stay within a host
// (ModelInput::sameHostPartnerBits), what each kind of round costs, the network constants a rank
// contributes (applyNetLink).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "algorithm_names.h"
#include "collectives/doubling/doubling.h"
#include "collectives/model/cost_path.h"
#include "collectives/model/rank_fold.h"
#include "tuning/tuner_setup.h"

namespace weft {
namespace {

// The model's view of ranks on these hosts (and machines: empty, each host is one), 128 KiB slots.
ModelInput modelFor(const std::vector<uint64_t>& hostOf, const std::vector<uint64_t>& machineOf = {},
                    int nChannels = 1) {
  param::Agreed agreed = param::localAgreed();
  TunerInit init;
  init.nranks = int(hostOf.size());
  init.hostOf = hostOf;
  init.machineOf = machineOf;
  init.nChannels = nChannels;
  init.slotBytes = 128 * 1024;
  init.agreed = &agreed;
  return modelInputFor(init);
}

TEST(DoublingModel, RoundsWithinAHostFollowHowRanksAreNumbered) {
  // Host by host: the low bit stays within a host, the high bit crosses.
  EXPECT_EQ(modelFor({7, 7, 9, 9}).sameHostPartnerBits, 0x1u);
  // Round robin: the low bit crosses, the high bit stays.
  EXPECT_EQ(modelFor({7, 9, 7, 9}).sameHostPartnerBits, 0x2u);
  // 4 hosts of 2, host by host: only bit 0.
  EXPECT_EQ(modelFor({1, 1, 2, 2, 3, 3, 4, 4}).sameHostPartnerBits, 0x1u);
  // 2 hosts of 4: bits 0 and 1.
  EXPECT_EQ(modelFor({1, 1, 1, 1, 2, 2, 2, 2}).sameHostPartnerBits, 0x3u);
  // One rank per host: every round crosses.
  EXPECT_EQ(modelFor({1, 2, 3, 4}).sameHostPartnerBits, 0x0u);
  // Uneven hosts: a partner on another host for some rank makes the round a network round.
  EXPECT_EQ(modelFor({1, 1, 1, 2}).sameHostPartnerBits, 0x0u);
}

// Not a power of two: the rounds run on the folded numbering (rank_fold.h), where rounds' rank v
// is communicator rank 2v+1 for the first `extra` of them and v+extra after.
TEST(DoublingModel, FoldedRanksArePricedByTheirOwnPartners) {
  const RankFold six(6);
  EXPECT_EQ(six.pow2, 4);
  EXPECT_EQ(six.extra, 2);
  EXPECT_EQ(six.folded(0), -1);
  EXPECT_EQ(six.folded(1), 0);
  EXPECT_EQ(six.folded(3), 1);
  EXPECT_EQ(six.folded(5), 3);
  EXPECT_EQ(six.rank(2), 4);
  // 3 hosts of 2: the pairs (0,1) and (2,3) fold within hosts; the rounds' ranks are 1, 3, 4, 5,
  // on hosts 1, 2, 3, 3, so bit 0 pairs host 1 with 2 (across) and bit 1 pairs 1 with 3 (across).
  ModelInput threeHosts = modelFor({1, 1, 2, 2, 3, 3});
  EXPECT_TRUE(threeHosts.sameHostFold);
  EXPECT_EQ(threeHosts.sameHostPartnerBits, 0x0u);
  // 2 hosts of 3: rank 2 (host 1) folds into rank 3 (host 2), across.
  EXPECT_FALSE(modelFor({1, 1, 1, 2, 2, 2}).sameHostFold);
  // 3 hosts of 4 (4 pairs fold): the rounds' ranks 1, 3 | 5, 7 | 8, 9, 10, 11 keep bit 0 within
  // hosts.
  ModelInput twelve = modelFor({1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  EXPECT_TRUE(twelve.sameHostFold);
  EXPECT_EQ(twelve.sameHostPartnerBits, 0x1u);
  // A power of two folds nothing.
  EXPECT_EQ(RankFold(8).extra, 0);
  EXPECT_EQ(RankFold(8).folded(5), 5);
  EXPECT_TRUE(modelFor({1, 1, 2, 2}).sameHostFold);
}

// Constants where the network is ten times slower than a core's copy.
HostConstants slowNetwork() {
  HostConstants hc;
  hc.copyGBps = hc.memGBps = 10;
  hc.reduceGBps = 5;
  hc.netGBps = 1;
  hc.netLatUs = 20;
  return hc;
}

TEST(DoublingModel, ARoundWithinAHostCostsLessThanOneAcrossHosts) {
  const HostConstants hc = slowNetwork();
  ModelInput byHost = modelFor({1, 1, 2, 2});
  ModelInput allCross = modelFor({1, 2, 3, 4});
  byHost.cores = allCross.cores = 4;
  for (size_t bytes : {size_t(8), size_t(1) << 20, size_t(64) << 20}) {
    const double local = estimateUs(byHost, hc, CollKind::kAllReduce, Algo::kDoubling, Protocol::kSimple, 1, bytes);
    const double cross = estimateUs(allCross, hc, CollKind::kAllReduce, Algo::kDoubling, Protocol::kSimple, 1, bytes);
    EXPECT_GT(local, 0) << bytes;
    EXPECT_LT(local, cross) << bytes;
  }
}

// What the 2-core development VM measured across 2 namespaces x 2 ranks (NCCL_ALGO forced, medians
// of 4-6 interleaved runs), priced with that VM's calibrated constants: doubling ahead of the ring
// from 64 KiB to 64 MiB (64 MiB: 97 against 210 ms) except near 1 MiB, where the two were within
// the noise.
TEST(DoublingModel, RanksTheAlgorithmsAsTheNamespacesMeasuredThem) {
  ModelInput in = modelFor({1, 1, 2, 2}, {5, 5, 5, 5}, 2);
  in.cores = 2;
  HostConstants hc;
  hc.copyGBps = 91;
  hc.reduceGBps = 47;
  hc.memGBps = 14.5;
  hc.handoffUs = 0.3;
  hc.yieldHandoffUs = 2.7;
  hc.netGBps = 1.25;
  hc.netLatUs = 20;
  for (size_t bytes : {size_t(64) << 10, size_t(256) << 10, size_t(4) << 20, size_t(16) << 20, size_t(64) << 20}) {
    const double doubling = estimateUs(in, hc, CollKind::kAllReduce, Algo::kDoubling, Protocol::kSimple, 1, bytes);
    double ring = 1e30;
    for (int c = 1; c <= 2; ++c)
      ring = std::min(ring, estimateUs(in, hc, CollKind::kAllReduce, Algo::kRing, Protocol::kSimple, c, bytes));
    EXPECT_LT(doubling, ring) << bytes << " B";
  }
  // Halving-doubling measured 1.3-1.9x faster than doubling from 256 KiB up, and doubling ahead
  // for small messages (half the rounds).
  auto est = [&](Algorithm a, size_t bytes) {
    return estimateUs(in, hc, CollKind::kAllReduce, a, Protocol::kSimple, 1, bytes);
  };
  EXPECT_LT(est(Algo::kDoubling, 8), est(Algo::kHalvingDoubling, 8));
  for (size_t bytes : {size_t(256) << 10, size_t(1) << 20, size_t(16) << 20, size_t(64) << 20})
    EXPECT_LT(est(Algo::kHalvingDoubling, bytes), est(Algo::kDoubling, bytes)) << bytes << " B";
}

TEST(DoublingModel, HostsThatShareAMachineShareItsCores) {
  ModelInput apart = modelFor({1, 1, 2, 2});
  EXPECT_EQ(apart.ranksPerMachine, 2);
  // Two "hosts" (WEFT_HOST_ID, containers) on one machine.
  ModelInput together = modelFor({1, 1, 2, 2}, {5, 5, 5, 5});
  EXPECT_EQ(together.ranksPerHost, 2);
  EXPECT_EQ(together.ranksPerMachine, 4);
  apart.cores = together.cores = 2;
  const HostConstants hc;
  const Path a = pathFor(apart, hc, true, 1 << 20), b = pathFor(together, hc, true, 1 << 20);
  EXPECT_DOUBLE_EQ(a.workScale, 1.0);
  EXPECT_DOUBLE_EQ(b.workScale, 2.0);
  EXPECT_DOUBLE_EQ(a.localLatUs, hc.handoffUs);
  // A partner's answer waits for a switch to it, behind the other rank of its core.
  EXPECT_DOUBLE_EQ(b.localLatUs, 2 * hc.yieldHandoffUs);
}

TEST(NetLink, TheHostTcpStackIsCappedByTheLinkAndOtherNetworksUseTheirOwnFigures) {
  HostConstants hc;
  hc.netGBps = 2.5;  // what calibration measured over loopback
  hc.netLatUs = 18;
  HostConstants socket = hc;
  applyNetLink({1.25, 0, true}, &socket);  // a 10 Gb/s interface
  EXPECT_DOUBLE_EQ(socket.netGBps, 1.25);
  EXPECT_DOUBLE_EQ(socket.netLatUs, 18);
  HostConstants fastLink = hc;
  applyNetLink({12.5, 0, true}, &fastLink);  // 100 Gb/s: the TCP stack is the limit
  EXPECT_DOUBLE_EQ(fastLink.netGBps, 2.5);
  HostConstants verbs = hc;
  applyNetLink({25, 2, false}, &verbs);  // RDMA does not pass through the TCP stack
  EXPECT_DOUBLE_EQ(verbs.netGBps, 25);
  EXPECT_DOUBLE_EQ(verbs.netLatUs, 2);
  HostConstants silent = hc;
  applyNetLink({0, 0, false}, &silent);  // a plugin that reports nothing: the defaults
  EXPECT_DOUBLE_EQ(silent.netGBps, HostConstants{}.netGBps);
  EXPECT_DOUBLE_EQ(silent.netLatUs, HostConstants{}.netLatUs);
}

}  // namespace
}  // namespace weft
