// The double binary tree (collectives/tree): its shape on its own, then its programs for every
// rank at once through the simulator in program_sim.h, which runs them with the host executor's
// own stepping core over in-memory FIFOs: results against a plain reference, in place and not, deadlock freedom with
// FIFOs of one or two slots, bit-identical AllReduce results, groups of trees of different roots.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iterator>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "base/params.h"
#include "collectives/tree/tree_shape.h"
#include "comm/comm_algorithms.h"
#include "tests/unit/algorithm_names.h"
#include "tests/unit/program_sim.h"
#include "tuning/select.h"
#include "tuning/tuner.h"

namespace {

using weft::Buf;
using weft::CollKind;
using weft::collName;
using weft::Program;
using weft::StepOp;
using weft::Task;
using namespace weft::sim;
namespace tree = weft::tree;

// ---- Shape ----

// Every (n, root, tree): each rank but the root has exactly one parent that lists it as a child,
// every rank is reached from the root, the depth is logarithmic, and the two trees are
// complementary: no rank but the root forwards in both, and with n-1 even no rank is a leaf in both.
TEST(TreeShape, TwoComplementarySpanningTrees) {
  for (int n = 1; n <= 70; ++n)
    for (int root : {0, n / 2, n - 1}) {
      std::vector<int> inner(n, 0), leaf(n, 0);
      for (int t = 0; t < 2; ++t) {
        std::vector<tree::Links> l(n);
        for (int r = 0; r < n; ++r) l[r] = tree::linksOf(n, root, t, r);
        std::vector<int> depth(n, -1);
        std::queue<int> q;
        depth[root] = 0;
        q.push(root);
        int reached = 0, maxDepth = 0;
        while (!q.empty()) {
          const int r = q.front();
          q.pop();
          ++reached;
          maxDepth = std::max(maxDepth, depth[r]);
          for (int c : l[r].child) {
            if (c < 0) continue;
            ASSERT_TRUE(c >= 0 && c < n && depth[c] < 0) << n << " " << root << " " << t << " rank " << c;
            ASSERT_EQ(l[c].parent, r) << "n=" << n << " root=" << root << " tree " << t;
            depth[c] = depth[r] + 1;
            q.push(c);
          }
        }
        ASSERT_EQ(reached, n) << "n=" << n << " root=" << root << " tree " << t;
        EXPECT_EQ(l[root].parent, -1);
        int log2 = 0;
        while ((2 << log2) <= n) ++log2;
        EXPECT_LE(maxDepth, log2 + 1) << "n=" << n;
        for (int r = 0; r < n; ++r)
          if (r != root) (l[r].child[0] >= 0 ? inner : leaf)[r]++;
      }
      for (int r = 0; r < n; ++r) {
        if (r == root) continue;
        EXPECT_LE(inner[r], 1) << "n=" << n << " root=" << root << ": rank " << r << " forwards in both trees";
        if ((n - 1) % 2 == 0) EXPECT_LE(leaf[r], 1) << "n=" << n << ": rank " << r << " is a leaf in both trees";
      }
    }
}

// ---- Programs ----

using TreeCase = CollCase;

// One tree collective on every rank: buffers, inputs, and what every buffer must hold afterwards.
struct TreeOp {
  TreeCase k;
  std::vector<std::unique_ptr<Buffer>> send, recv;  // recv empty when in place
  std::vector<std::unique_ptr<Expectation>> x;

  Buffer* out(int r) { return k.inPlace ? send[r].get() : recv[r].get(); }

  void setup(Simulator& sim, const TreeCase& kase, uint64_t salt) {
    k = kase;
    const int n = k.nranks;
    const ncclDataType_t dt = k.v.dtype;
    for (int r = 0; r < n; ++r) {
      send.push_back(std::make_unique<Buffer>(k.count, dt));
      if (!k.inPlace) recv.push_back(std::make_unique<Buffer>(k.count, dt, 0x5A));
      for (size_t i = 0; i < k.count; ++i) send[r]->set(i, inputValue(dt, r, i, salt));
      // NCCL leaves the send buffer of Broadcast's non-roots and the receive buffer of Reduce's
      // non-roots unused: zero extents make any access to them an error.
      const bool sendUsed = k.kind != CollKind::kBroadcast || r == k.root;
      const bool recvUsed = k.kind != CollKind::kReduce || r == k.root;
      Task t;
      t.kind = k.kind;
      t.sendbuff = send[r]->at(0);
      t.recvbuff = out(r)->at(0);
      t.count = k.count;
      t.dtype = dt;
      t.root = k.root;
      t.algorithm = weft::Algo::kTree;
      t.nChannels = k.channels;
      t.spec = specFor(k.v, k.kind, n);
      sim.add(r, t, sendUsed ? k.count : 0, recvUsed ? k.count : 0);
    }
    for (int r = 0; r < n; ++r) {
      x.push_back(std::make_unique<Expectation>(send[r].get(), "rank " + std::to_string(r) + " sendbuff"));
      if (!k.inPlace)
        x.push_back(std::make_unique<Expectation>(recv[r].get(), "rank " + std::to_string(r) + " recvbuff"));
    }
    auto expectation = [&](int r) { return x[k.inPlace ? r : 2 * r + 1].get(); };
    for (size_t i = 0; i < k.count; ++i) {
      std::vector<double> xs(n);
      for (int j = 0; j < n; ++j) xs[j] = inputValue(dt, j, i, salt);
      if (k.kind == CollKind::kBroadcast)
        for (int r = 0; r < n; ++r) expectation(r)->expectCopyOf(i, send[k.root].get(), i);
      else if (k.kind == CollKind::kReduce)
        expectation(k.root)->expect(i, reference(k.v, xs));
      else
        for (int r = 0; r < n; ++r) expectation(r)->expect(i, reference(k.v, xs));
    }
  }

  std::string check() const {
    std::string bad;
    for (const auto& e : x) bad += e->check();
    return bad;
  }
};

void buildTree(const Task& t, Program* p) { weft::buildProgram(weft::commShape(t.comm), t, p); }

testing::AssertionResult runTreeGroup(const std::vector<TreeCase>& ops,
                                      std::vector<std::vector<unsigned char>>* results = nullptr,
                                      const Simulator::Builder& builder = buildTree) {
  const TreeCase& g = ops.front();
  Simulator sim(Geometry{g.nranks, g.slotBytes, g.nSlots, 4});
  std::vector<TreeOp> state(ops.size());
  std::string what;
  for (size_t i = 0; i < ops.size(); ++i) {
    state[i].setup(sim, ops[i], i);
    what += (i ? " + " : "") + ops[i].str();
  }
  sim.build(builder);
  Outcome o = sim.run();
  if (!o.ok) return testing::AssertionFailure() << what << ":\n" << o.error;
  std::string bad;
  for (const TreeOp& op : state) bad += op.check();
  if (!bad.empty()) return testing::AssertionFailure() << what << ":" << bad;
  if (results) {
    results->clear();
    const size_t bytes = g.count * weft::dataTypeSize(g.v.dtype);
    for (int r = 0; r < g.nranks; ++r) {
      auto* p = static_cast<const unsigned char*>(state[0].out(r)->at(0));
      results->emplace_back(p, p + bytes);
    }
  }
  return testing::AssertionSuccess();
}

testing::AssertionResult runTree(const TreeCase& k, std::vector<std::vector<unsigned char>>* results = nullptr) {
  return runTreeGroup({k}, results);
}

const CollKind kTreeKinds[] = {CollKind::kAllReduce, CollKind::kBroadcast, CollKind::kReduce};
const size_t kCounts[] = {0, 1, 2, 3, 7, 63, 64, 65, 1000, 4099};
const uint32_t kSlotBytes[] = {64, 256, 4096};
const Variant kVariants[] = {
    {ncclInt32, Red::kSum},   {ncclInt32, Red::kMax},          {ncclFloat32, Red::kSum},
    {ncclFloat32, Red::kAvg}, {ncclInt32, Red::kPreMulSum, 3}, {ncclFloat32, Red::kPreMulSum, 0.375},
    {ncclInt32, Red::kAvg},   {ncclFloat64, Red::kSum},        {ncclInt8, Red::kMax},
    {ncclInt8, Red::kSum},    {ncclFloat32, Red::kMax},        {ncclInt32, Red::kPreMulSum, -7},
    {ncclFloat64, Red::kAvg},
};

int rootFor(int n, uint64_t pick) {
  const int roots[] = {0, n / 2, n - 1};
  return roots[pick % 3];
}

// Every kind x nranks 1..16 x every count (odd ones included), in place and not; channels, slot
// size, FIFO depth (down to one slot), reduction and root drawn from a fixed hash.
TEST(TreePrograms, SampledMatrixMatchesReference) {
  uint64_t idx = 0;
  for (CollKind kind : kTreeKinds)
    for (int n = 1; n <= 16; ++n)
      for (size_t count : kCounts) {
        const uint64_t h = mix64(++idx * 104729);
        TreeCase k;
        k.kind = kind;
        k.nranks = n;
        k.count = count;
        k.channels = 1 + int(h % 3);
        k.slotBytes = kSlotBytes[(h >> 8) % 3];
        k.nSlots = 1 + uint32_t((h >> 16) % 8);
        k.v = kVariants[(h >> 24) % std::size(kVariants)];
        k.root = rootFor(n, h >> 32);
        for (bool inPlace : {false, true}) {
          k.inPlace = inPlace;
          ASSERT_TRUE(runTree(k));
        }
      }
}

// Data hundreds of times the FIFO: 64-byte slots, one or two of them. A step that needed more room
// than a FIFO has before its peer could drain it would deadlock here.
TEST(TreePrograms, NoDeadlockWithTinyFifos) {
  for (CollKind kind : kTreeKinds)
    for (int n = 2; n <= 16; ++n)
      for (uint32_t nSlots : {1u, 2u}) {
        TreeCase k;
        k.kind = kind;
        k.nranks = n;
        k.count = 4099;
        k.channels = 1 + n % 2;
        k.slotBytes = 64;
        k.nSlots = nSlots;
        k.v = kVariants[n % std::size(kVariants)];
        k.root = rootFor(n, n + nSlots);
        k.inPlace = (n + nSlots) % 2 == 0;
        ASSERT_TRUE(runTree(k));
      }
}

// The root computes each element once and the value travels down unchanged: every rank ends with
// the same bits.
TEST(TreePrograms, AllReduceFloatBitIdenticalOnEveryRank) {
  for (int n : {2, 3, 5, 8, 13, 16})
    for (Variant v : {Variant{ncclFloat32, Red::kSum}, Variant{ncclFloat32, Red::kAvg},
                      Variant{ncclFloat32, Red::kPreMulSum, 0.1}, Variant{ncclFloat64, Red::kSum}}) {
      TreeCase k;
      k.nranks = n;
      k.channels = 1 + n % 3;
      k.count = 1001;
      k.slotBytes = 256;
      k.nSlots = 2;
      k.v = v;
      k.inPlace = n % 2 == 0;
      std::vector<std::vector<unsigned char>> res;
      ASSERT_TRUE(runTree(k, &res));
      for (int r = 1; r < n; ++r) ASSERT_TRUE(res[r] == res[0]) << k.str() << ": rank " << r << " differs from rank 0";
    }
}

// Trees of different roots in one group share the tree lane's links with other roles: they run
// one after another on one chain per connection channel, in issue order on every rank.
TEST(TreePrograms, GroupOfDifferentKindsAndRoots) {
  for (int n : {2, 3, 5, 8}) {
    std::vector<TreeCase> ops;
    const CollKind kinds[] = {CollKind::kAllReduce, CollKind::kBroadcast, CollKind::kReduce, CollKind::kBroadcast,
                              CollKind::kAllReduce};
    for (int i = 0; i < 5; ++i) {
      TreeCase k;
      k.kind = kinds[i];
      k.nranks = n;
      k.count = 300 + 37 * i;
      k.channels = 2;
      k.slotBytes = 64;
      k.nSlots = 2;
      k.v = kVariants[i];
      k.root = rootFor(n, i);
      k.inPlace = i % 2 == 1;
      ops.push_back(k);
    }
    ASSERT_TRUE(runTreeGroup(ops));
  }
}

// ---- The simulator's multi-peer checks ----

// A tree AllReduce whose root sends down in the same step as it reduces (recvReduceCopySend to its
// children) while they still send up: with data larger than the FIFOs, root and child block on
// each other's full FIFOs. The simulator must call that a deadlock, and the real builder fine.
void fusedRootAllReduce(const Task& t, Program* p) {
  const int n = t.comm->nranks, r = t.comm->rank;
  const tree::Links l = tree::linksOf(n, 0, 0, r);
  int peers[weft::kMaxSeqPeers] = {l.parent, l.child[0], l.child[1]};
  p->beginMultiPeerSequence(weft::Lane::kTree, 0, peers, peers);
  const uint8_t parent = l.parent >= 0 ? 1 : 0;
  uint8_t children = 0;
  for (int i = 0, b = parent ? 1 : 0; i < 2; ++i)
    if (l.child[i] >= 0) children |= uint8_t(1u << b++);
  const size_t c = t.count;
  if (!parent) {
    p->addPeerStep(StepOp::kRecvReduceCopySend, weft::kStepPre | weft::kStepPost, children, children, Buf::kSend, 0,
                   Buf::kRecv, 0, c);
    return;
  }
  if (children)
    p->addPeerStep(StepOp::kRecvReduceSend, weft::kStepPre, children, parent, Buf::kSend, 0, Buf::kRecv, 0, c);
  else
    p->addPeerStep(StepOp::kSend, weft::kStepPre, 0, parent, Buf::kSend, 0, Buf::kRecv, 0, c);
  if (children)
    p->addPeerStep(StepOp::kRecvCopySend, 0, parent, children, Buf::kSend, 0, Buf::kRecv, 0, c);
  else
    p->addPeerStep(StepOp::kRecv, 0, parent, 0, Buf::kSend, 0, Buf::kRecv, 0, c);
}

TEST(TreeProgramSim, ReportsDeadlockOfAFusedRoot) {
  TreeCase k;
  k.nranks = 4;
  k.count = 1000;
  k.slotBytes = 64;
  k.nSlots = 2;
  testing::AssertionResult r = runTreeGroup({k}, nullptr, fusedRootAllReduce);
  ASSERT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("DEADLOCK"), std::string::npos) << r.message();
  EXPECT_NE(std::string(r.message()).find("tree ch 0"), std::string::npos) << r.message();
  EXPECT_NE(std::string(r.message()).find("recvReduceCopySend"), std::string::npos) << r.message();
  // With the whole message inside the FIFOs the fused root happens to work: only small FIFOs show it.
  k.count = 16;
  EXPECT_TRUE(runTreeGroup({k}, nullptr, fusedRootAllReduce));
  k.count = 1000;
  EXPECT_TRUE(runTree(k));
}

TEST(TreeProgramSim, ReportsMasksNamingMissingPeers) {
  TreeCase k;
  k.nranks = 2;
  k.count = 10;
  testing::AssertionResult r = runTreeGroup({k}, nullptr, [](const Task& t, Program* p) {
    const int other = 1 - t.comm->rank;
    int peers[weft::kMaxSeqPeers] = {other, -1, -1};
    p->beginMultiPeerSequence(weft::Lane::kTree, 0, peers, peers);
    p->addPeerStep(StepOp::kSend, 0, 0, 0x2, Buf::kSend, 0, Buf::kRecv, 0, t.count);
  });
  ASSERT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("mask names a peer the sequence lacks"), std::string::npos) << r.message();
}

// ---- Dispatch ----

// NCCL_ALGO=Tree makes the tree what runs AllReduce, Broadcast and Reduce (the other kinds keep
// the ring), and buildProgram then emits tree-lane sequences.
TEST(TreeDispatch, NcclAlgoTreeSelectsTheTree) {
  const char* old = getenv("NCCL_ALGO");
  const std::string saved = old ? old : "";
  setenv("NCCL_ALGO", "Tree", 1);
  weft::param::reloadForTesting();
  ncclComm comm;
  comm.rank = 1;
  comm.nranks = 4;
  comm.slotBytes = 4096;
  comm.nChannels = 2;
  comm.ranks.resize(4);  // one host
  // The tuner as init builds it, from the (here: this process's) agreed settings.
  comm.tuner.reset(
      new weft::Tuner(weft::modelInputFor(&comm), weft::HostConstants{}, weft::tunerOptionsFrom(comm.agreed, "none")));
  std::vector<float> in(100), outv(400);
  for (CollKind kind : {CollKind::kAllReduce, CollKind::kBroadcast, CollKind::kReduce, CollKind::kAllGather}) {
    Task t;
    t.comm = &comm;
    t.kind = kind;
    t.sendbuff = in.data();
    t.recvbuff = outv.data();
    t.count = in.size();
    t.dtype = ncclFloat32;
    weft::selectAlgorithm(comm.tuner.get(), weft::commShape(&comm), &t);
    const bool tree = kind != CollKind::kAllGather;
    EXPECT_EQ(t.algorithm, tree ? weft::Algo::kTree : weft::Algo::kRing) << collName(kind);
    Program p;
    weft::buildProgram(weft::commShape(&comm), t, &p);
    ASSERT_FALSE(p.sequences.empty());
    for (const auto& s : p.sequences) EXPECT_EQ(s.lane, tree ? weft::Lane::kTree : weft::Lane::kRing) << collName(kind);
  }
  if (old)
    setenv("NCCL_ALGO", saved.c_str(), 1);
  else
    unsetenv("NCCL_ALGO");
  weft::param::reloadForTesting();
}

}  // namespace
