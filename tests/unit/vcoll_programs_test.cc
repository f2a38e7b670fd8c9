// The uneven collectives' programs (AllGatherv, ReduceScatterv: collectives/ring/ring_v_programs.cc,
// collectives/p2p, collectives/dda/dda_v_programs.cc) run for every rank at once through the
// deterministic simulators: FIFOs of two slots far smaller than the blocks, so a schedule that
// needs more room than a ring of bounded FIFOs has deadlocks here; layouts with empty blocks, one
// large block, gaps and displacements out of rank order; in place and out of place; every buffer
// checked whole (guards included). The tuner's part: every rank's choice comes from the total, and
// NCCL_ALGO names each algorithm.
#include <gtest/gtest.h>

#include <cstdlib>

#include <memory>
#include <string>
#include <vector>

#include "base/params.h"
#include "collectives/dda/dda.h"
#include "collectives/registry.h"
#include "tests/unit/algorithm_names.h"
#include "tests/unit/program_sim.h"
#include "tests/unit/tuner_env.h"
#include "tuning/tuner.h"

namespace {

using weft::CollKind;
using weft::Program;
using weft::Task;
using namespace weft::sim;

enum class Builder { kRing, kP2p, kDda };
const char* builderName(Builder b) { return b == Builder::kRing ? "ring" : b == Builder::kP2p ? "p2p" : "dda"; }

struct VCase {
  CollKind kind = CollKind::kAllGatherv;
  Builder builder = Builder::kRing;
  int nranks = 2;
  int channels = 1;
  uint32_t slotBytes = 64;
  Variant v{ncclInt32, Red::kSum};
  bool inPlace = false;
  std::vector<size_t> counts, displs;

  size_t extent() const {
    size_t e = 0;
    for (int r = 0; r < nranks; ++r)
      if (counts[r] > 0) e = std::max(e, displs[r] + counts[r]);
    return e;
  }
  std::string str() const {
    std::string s = std::string(weft::collName(kind)) + " " + builderName(builder) + " n=" + std::to_string(nranks) +
                    " ch=" + std::to_string(channels) + " slot=" + std::to_string(slotBytes) + " " + v.name() +
                    (inPlace ? " in place" : " out of place") + " counts/displs:";
    for (int r = 0; r < nranks; ++r) s += " " + std::to_string(counts[r]) + "@" + std::to_string(displs[r]);
    return s;
  }
};

// A layout from a seed: block sizes from empty to many slots, blocks in a shuffled order with gaps.
void makeLayout(uint64_t seed, int n, std::vector<size_t>* counts, std::vector<size_t>* displs) {
  static const size_t sizes[] = {0, 0, 1, 3, 17, 64, 250, 1001};
  counts->assign(n, 0);
  displs->assign(n, 0);
  std::vector<int> order(n);
  for (int r = 0; r < n; ++r) {
    (*counts)[r] = sizes[mix64(seed * 131 + r) % 8];
    order[r] = r;
  }
  for (int r = n - 1; r > 0; --r) std::swap(order[r], order[mix64(seed ^ (r * 977)) % (r + 1)]);
  size_t at = mix64(seed) % 3;
  for (int r : order) {
    (*displs)[r] = at;
    at += (*counts)[r] + mix64(seed + r) % 3;
  }
}

testing::AssertionResult runV(const VCase& k) {
  const int n = k.nranks;
  const ncclDataType_t dt = k.v.dtype;
  const size_t ext = k.extent();
  const bool gather = k.kind == CollKind::kAllGatherv;
  std::vector<std::unique_ptr<Buffer>> send(n), recv(n);
  std::vector<Buffer*> sendB(n), recvB(n);
  std::vector<size_t> sendOff(n, 0), recvOff(n, 0);
  Simulator sim(Geometry{n, k.slotBytes, 2, k.channels});
  for (int r = 0; r < n; ++r) {
    const size_t sendN = gather ? k.counts[r] : ext, recvN = gather ? ext : k.counts[r];
    if (k.inPlace) {
      send[r] = std::make_unique<Buffer>(ext, dt);
      sendB[r] = recvB[r] = send[r].get();
      (gather ? sendOff : recvOff)[r] = k.displs[r];
    } else {
      send[r] = std::make_unique<Buffer>(sendN, dt);
      recv[r] = std::make_unique<Buffer>(recvN, dt, 0x5A);
      sendB[r] = send[r].get();
      recvB[r] = recv[r].get();
    }
    for (size_t i = 0; i < sendN; ++i) sendB[r]->set(sendOff[r] + i, inputValue(dt, r, i));
    Task t;
    t.kind = k.kind;
    t.sendbuff = sendB[r]->at(sendOff[r]);
    t.recvbuff = recvB[r]->at(recvOff[r]);
    for (int p = 0; p < n; ++p) t.count += k.counts[p];
    t.dtype = dt;
    t.spec = specFor(k.v, k.kind, n);
    t.vcounts = k.counts;
    t.vcounts.insert(t.vcounts.end(), k.displs.begin(), k.displs.end());
    sim.add(r, t, k.inPlace ? ext - sendOff[r] : sendN, k.inPlace ? ext - recvOff[r] : recvN);
  }
  std::vector<std::unique_ptr<Expectation>> want;
  for (int r = 0; r < n; ++r) {
    want.push_back(std::make_unique<Expectation>(sendB[r], "rank " + std::to_string(r) + " sendbuff"));
    if (!k.inPlace) want.push_back(std::make_unique<Expectation>(recvB[r], "rank " + std::to_string(r) + " recvbuff"));
  }
  auto out = [&](int r) { return want[k.inPlace ? r : 2 * r + 1].get(); };
  for (int r = 0; r < n; ++r) {
    if (gather) {
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < k.counts[p]; ++i) out(r)->expectCopyOf(k.displs[p] + i, sendB[p], sendOff[p] + i);
    } else {
      for (size_t i = 0; i < k.counts[r]; ++i) {
        std::vector<double> xs(n);
        for (int p = 0; p < n; ++p) xs[p] = inputValue(dt, p, k.displs[r] + i);
        out(r)->expect(recvOff[r] + i, reference(k.v, xs));
      }
    }
  }
  const int channels = k.channels;
  if (k.builder == Builder::kDda) {
    sim.build([](const Task& t, Program* p) { weft::buildDdaVProgram(weft::commShape(t.comm), t, p); });
  } else if (k.builder == Builder::kP2p) {
    sim.build([](const Task& t, Program* p) { weft::buildP2pProgram(weft::commShape(t.comm), t, p); });
  } else {
    sim.build(
        [channels](const Task& t, Program* p) { weft::buildRingProgram(weft::commShape(t.comm), t, channels, p); });
  }
  const Outcome o = sim.run();
  if (!o.ok) return testing::AssertionFailure() << k.str() << ":\n" << o.error;
  std::string bad;
  for (const auto& w : want) bad += w->check();
  if (!bad.empty()) return testing::AssertionFailure() << k.str() << ":" << bad;
  return testing::AssertionSuccess();
}

const Variant kVariants[] = {{ncclInt32, Red::kSum},
                             {ncclFloat32, Red::kAvg},
                             {ncclInt8, Red::kMax},
                             {ncclInt32, Red::kPreMulSum, -7},
                             {ncclFloat64, Red::kSum}};

std::vector<VCase> sampled(CollKind kind, Builder builder) {
  std::vector<VCase> out;
  uint64_t seed = 1;
  for (int n : {1, 2, 3, 4, 5, 8})
    for (int layout = 0; layout < 6; ++layout, ++seed) {
      VCase k;
      k.kind = kind;
      k.builder = builder;
      k.nranks = n;
      k.channels = builder == Builder::kRing ? 1 + int(seed % 3) : 1;
      k.slotBytes = seed % 2 ? 64 : 256;
      k.v = kind == CollKind::kAllGatherv ? Variant{seed % 2 ? ncclInt8 : ncclFloat64, Red::kSum}
                                          : kVariants[seed % std::size(kVariants)];
      k.inPlace = seed % 3 == 0;
      makeLayout(seed, n, &k.counts, &k.displs);
      if (layout == 0) k.counts.assign(n, 0);  // all empty
      if (layout == 1) {                       // one rank holds everything, many slots of it
        k.counts.assign(n, 0);
        k.counts[n - 1] = 20000;
      }
      if (n == 1 && builder == Builder::kDda) continue;  // the direct lane needs two ranks
      out.push_back(k);
    }
  return out;
}

TEST(VCollPrograms, RingAllGathervWithTwoSlotFifos) {
  for (const VCase& k : sampled(CollKind::kAllGatherv, Builder::kRing)) ASSERT_TRUE(runV(k));
}

TEST(VCollPrograms, RingReduceScattervWithTwoSlotFifos) {
  for (const VCase& k : sampled(CollKind::kReduceScatterv, Builder::kRing)) ASSERT_TRUE(runV(k));
}

TEST(VCollPrograms, P2pAllGatherv) {
  for (const VCase& k : sampled(CollKind::kAllGatherv, Builder::kP2p)) ASSERT_TRUE(runV(k));
}

// 64 KiB staging areas: the large block takes several rounds (alternating halves).
TEST(VCollPrograms, DdaAllGathervAndReduceScattervInRounds) {
  setenv("RCCL_DDA_SENDBUF_BYTES", "65536", 1);
  weft::param::reloadForTesting();
  for (CollKind kind : {CollKind::kAllGatherv, CollKind::kReduceScatterv})
    for (const VCase& k : sampled(kind, Builder::kDda)) EXPECT_TRUE(runV(k));
  unsetenv("RCCL_DDA_SENDBUF_BYTES");
  weft::param::reloadForTesting();
}

// Empty blocks have no steps and open no FIFO: in the p2p pattern only ranks with data send.
TEST(VCollPrograms, EmptyBlocksBuildNothing) {
  Simulator sim(Geometry{3, 64, 2, 1});
  std::vector<int32_t> in(10, 1), out(10, 0);
  for (int r = 0; r < 3; ++r) {
    Task t;
    t.kind = CollKind::kAllGatherv;
    t.sendbuff = in.data();
    t.recvbuff = out.data();
    t.count = 0;
    t.dtype = ncclInt32;
    t.vcounts = {0, 0, 0, 0, 0, 0};
    sim.add(r, t, 0, 0);
  }
  sim.build([](const Task& t, Program* p) { weft::buildP2pProgram(weft::commShape(t.comm), t, p); });
  EXPECT_TRUE(sim.program(1).sequences.empty());
  sim.build([](const Task& t, Program* p) { weft::buildRingProgram(weft::commShape(t.comm), t, 2, p); });
  EXPECT_TRUE(sim.program(1).steps.empty());
}

// ---- Selection: the tuner weighs the direct patterns against the ring on the total size ----

weft::ModelInput fourRanksOneHost() {
  weft::ModelInput in;
  in.nranks = 4;
  in.ranksPerHost = 4;
  in.cores = 8;
  in.maxChannels = 4;
  in.slotBytes = 128 * 1024;
  return in;
}

using weft::Algo;
const uint32_t kVCandidates = (1u << int(Algo::kRing)) | (1u << int(Algo::kP2p)) | (1u << int(Algo::kDdaFlat));

TEST(VCollTuning, DirectPatternsForSmallSizesTheRingForLarge) {
  weft::TunerOptions o;
  o.pluginSetting = "none";
  weft::Tuner t(fourRanksOneHost(), weft::HostConstants{}, o);
  for (CollKind kind : {CollKind::kAllGatherv, CollKind::kReduceScatterv}) {
    SCOPED_TRACE(weft::collName(kind));
    EXPECT_NE(t.choose(kind, 64, kVCandidates).algorithm, Algo::kRing);
    EXPECT_EQ(t.choose(kind, size_t(64) << 20, kVCandidates).algorithm, Algo::kRing);
  }
  // Only AllGatherv has the point-to-point pattern; across hosts only the ring and P2p remain.
  EXPECT_LT(weft::estimateUs(fourRanksOneHost(), weft::HostConstants{}, CollKind::kReduceScatterv, Algo::kP2p,
                             weft::Protocol::kSimple, 1, 4096),
            0);
  weft::ModelInput twoHosts = fourRanksOneHost();
  twoHosts.nHosts = 2;
  twoHosts.ranksPerHost = 2;
  EXPECT_LT(weft::estimateUs(twoHosts, weft::HostConstants{}, CollKind::kAllGatherv, Algo::kDdaFlat,
                             weft::Protocol::kSimple, 1, 4096),
            0);
  EXPECT_GT(weft::estimateUs(twoHosts, weft::HostConstants{}, CollKind::kAllGatherv, Algo::kP2p,
                             weft::Protocol::kSimple, 1, 4096),
            0);
}

TEST(VCollTuning, NcclAlgoNamesEachAlgorithmPerCollective) {
  ScopedEnv env({{"NCCL_ALGO", "allgatherv:p2p;reducescatterv:ddaflat;allreduce:ring"}, {"NCCL_TUNER_PLUGIN", "none"}});
  weft::TunerOptions o = weft::tunerOptionsFrom(weft::param::localAgreed(), weft::param::tunerPlugin());
  EXPECT_TRUE(o.warnings.empty());
  weft::Tuner t(fourRanksOneHost(), weft::HostConstants{}, o);
  EXPECT_EQ(t.choose(CollKind::kAllGatherv, size_t(64) << 20, kVCandidates).algorithm, Algo::kP2p);
  EXPECT_EQ(t.choose(CollKind::kReduceScatterv, size_t(64) << 20, kVCandidates).algorithm, Algo::kDdaFlat);
  ScopedEnv ring({{"NCCL_ALGO", "Ring"}});
  weft::Tuner r(fourRanksOneHost(), weft::HostConstants{},
                weft::tunerOptionsFrom(weft::param::localAgreed(), weft::param::tunerPlugin()));
  EXPECT_EQ(r.choose(CollKind::kAllGatherv, 64, kVCandidates).algorithm, Algo::kRing);
  EXPECT_EQ(r.choose(CollKind::kReduceScatterv, 64, kVCandidates).algorithm, Algo::kRing);
}

}  // namespace
