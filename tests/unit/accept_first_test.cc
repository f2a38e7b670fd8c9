// Links set up on first use over a network whose connect completes only after the peer's accept
// (aws-ofi-nccl's order; MemHandshake in mem_fabric.h), through the deterministic simulator in
// program_sim.h. A ring's first step only sends, on every rank: a rank that drove only the links
// of its current step would wait in connect for an accept that its peer, itself waiting in
// connect, never makes. The executor moves every handshake of the run on in every pass instead.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/program_sim.h"

namespace {

using weft::CollKind;
using weft::collName;
using weft::Task;
using namespace weft::sim;

struct SimRun {
  Outcome outcome;
  std::vector<std::vector<int32_t>> out;  // every rank's receive buffer
};

// One int32 sum collective of `count` elements per block on n ranks, every rank's input rank + 1.
SimRun runAcceptFirst(CollKind kind, int n, size_t count, int channels) {
  Simulator sim(Geometry{.nranks = n, .slotBytes = 256, .nSlots = 4, .nChannels = channels, .acceptFirst = true});
  const size_t blocks = size_t(n) * count;
  const bool perRankIn = kind == CollKind::kReduceScatter || kind == CollKind::kAlltoAll;
  const bool perRankOut = kind == CollKind::kAllGather || kind == CollKind::kAlltoAll;
  std::vector<std::vector<int32_t>> in(n);
  SimRun run;
  run.out.resize(n);
  for (int r = 0; r < n; ++r) {
    in[r].assign(perRankIn ? blocks : count, r + 1);
    run.out[r].assign(perRankOut ? blocks : count, -1);
    Task t;
    t.kind = kind;
    t.sendbuff = in[r].data();
    t.recvbuff = run.out[r].data();
    t.count = count;
    t.dtype = ncclInt32;
    t.spec = resolveSpec(kind, ncclInt32, ncclSum, n);
    sim.add(r, t, in[r].size(), run.out[r].size());
  }
  sim.build(channels);
  run.outcome = sim.run();
  return run;
}

std::string name(CollKind kind, int n, int channels) {
  return std::string(collName(kind)) + " on " + std::to_string(n) + " ranks, " + std::to_string(channels) +
         " channel(s)";
}

TEST(AcceptFirstLinks, RingAllReduceConnectsAndSums) {
  for (int n : {2, 3, 4, 5})
    for (int channels : {1, 2}) {
      SimRun run = runAcceptFirst(CollKind::kAllReduce, n, 1000, channels);
      ASSERT_TRUE(run.outcome.ok) << name(CollKind::kAllReduce, n, channels) << ":\n" << run.outcome.error;
      for (int r = 0; r < n; ++r)
        for (int32_t v : run.out[r]) ASSERT_EQ(v, n * (n + 1) / 2) << name(CollKind::kAllReduce, n, channels);
    }
}

TEST(AcceptFirstLinks, EveryRingAndPointToPointKindConnects) {
  for (CollKind kind :
       {CollKind::kBroadcast, CollKind::kReduce, CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kAlltoAll})
    for (int n : {2, 4}) {
      SimRun run = runAcceptFirst(kind, n, 100, 1);
      EXPECT_TRUE(run.outcome.ok) << name(kind, n, 1) << ":\n" << run.outcome.error;
    }
}

// After a run every link it used is up: nothing is left for later runs to drive.
TEST(AcceptFirstLinks, NoHandshakeOutlivesTheRun) {
  Simulator sim(Geometry{.nranks = 3, .slotBytes = 256, .nSlots = 4, .nChannels = 1, .acceptFirst = true});
  std::vector<std::vector<int32_t>> in(3, std::vector<int32_t>(64, 1)), out(3, std::vector<int32_t>(64));
  for (int r = 0; r < 3; ++r) {
    Task t;
    t.kind = CollKind::kAllReduce;
    t.sendbuff = in[r].data();
    t.recvbuff = out[r].data();
    t.count = 64;
    t.dtype = ncclInt32;
    t.spec = resolveSpec(t.kind, t.dtype, ncclSum, 3);
    sim.add(r, t, 64, 64);
  }
  sim.build(1);
  Outcome o = sim.run();
  ASSERT_TRUE(o.ok) << o.error;
  for (int r = 0; r < 3; ++r)
    for (const MemLink* link : sim.fabric(r).handshakes(sim.comm(r)))
      EXPECT_TRUE(link->connected()) << "rank " << r << " still drives a link to or from rank " << link->peer();
}

}  // namespace
