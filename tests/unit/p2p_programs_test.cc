// The point-to-point programs (collectives/p2p) run for every rank at once through the
// deterministic simulator in program_sim.h: AlltoAll, AlltoAllv, Gather, Scatter (with NCCL's
// in-place rules at the root) and groups of Send/Recv in patterns that would deadlock if sends and
// receives to different peers did not progress independently.
#include <gtest/gtest.h>

#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/program_sim.h"

namespace {

using weft::CollKind;
using weft::collName;
using weft::Task;
using namespace weft::sim;

const size_t kCounts[] = {0, 1, 2, 7, 63, 64, 65, 1000, 4099};
const uint32_t kSlotBytes[] = {64, 256, 4096};
const ncclDataType_t kTypes[] = {ncclInt32, ncclFloat32, ncclInt8, ncclFloat64};

struct P2pCase {
  CollKind kind = CollKind::kAlltoAll;
  int nranks = 2;
  size_t count = 0;
  uint32_t slotBytes = 4096;
  uint32_t nSlots = 8;
  ncclDataType_t dtype = ncclInt32;
  int root = 0;
  bool inPlace = false;  // Gather/Scatter at the root

  std::string str() const {
    return std::string(collName(kind)) + " nranks=" + std::to_string(nranks) + " count=" + std::to_string(count) +
           " slotBytes=" + std::to_string(slotBytes) + " nSlots=" + std::to_string(nSlots) + " " +
           weft::dataTypeName(dtype) + " root=" + std::to_string(root) + (inPlace ? " in-place" : " out-of-place");
  }
};

// Runs one AlltoAll, Gather or Scatter on all ranks and checks every buffer completely.
testing::AssertionResult runP2p(const P2pCase& k) {
  const int n = k.nranks;
  const size_t c = k.count, nc = size_t(n) * c;
  Simulator sim(Geometry{n, k.slotBytes, k.nSlots, 1});
  std::vector<std::unique_ptr<Buffer>> sends(n), recvs(n);
  std::vector<Buffer*> sendB(n), recvB(n);
  std::vector<size_t> sendOff(n, 0), recvOff(n, 0);
  for (int r = 0; r < n; ++r) {
    const bool isRoot = r == k.root;
    size_t sendN = c, recvN = c;
    if (k.kind == CollKind::kAlltoAll) sendN = recvN = nc;
    if (k.kind == CollKind::kGather) recvN = isRoot ? nc : 0;
    if (k.kind == CollKind::kScatter) sendN = isRoot ? nc : 0;
    if (k.inPlace && isRoot) {
      // Gather: sendbuff == recvbuff + root*count; Scatter: recvbuff == sendbuff + root*count.
      sends[r] = std::make_unique<Buffer>(nc, k.dtype);
      sendB[r] = recvB[r] = sends[r].get();
      (k.kind == CollKind::kGather ? sendOff[r] : recvOff[r]) = size_t(r) * c;
    } else {
      sends[r] = std::make_unique<Buffer>(sendN, k.dtype);
      recvs[r] = std::make_unique<Buffer>(recvN, k.dtype, 0x5A);
      sendB[r] = sends[r].get();
      recvB[r] = recvs[r].get();
    }
    for (size_t i = 0; i < sendN; ++i) sendB[r]->set(sendOff[r] + i, inputValue(k.dtype, r, i));
    Task t;
    t.kind = k.kind;
    t.sendbuff = sendB[r]->at(sendOff[r]);
    t.recvbuff = recvB[r]->at(recvOff[r]);
    t.count = c;
    t.dtype = k.dtype;
    t.root = k.root;
    t.spec = resolveSpec(t.kind, t.dtype, ncclSum, n);
    sim.add(r, t, sendN, recvN);
  }
  std::vector<std::unique_ptr<Expectation>> sendX(n), recvX(n);
  for (int r = 0; r < n; ++r) {
    sendX[r] = std::make_unique<Expectation>(sendB[r], "rank " + std::to_string(r) + " sendbuff");
    if (recvB[r] != sendB[r])
      recvX[r] = std::make_unique<Expectation>(recvB[r], "rank " + std::to_string(r) + " recvbuff");
  }
  auto out = [&](int r) { return recvX[r] ? recvX[r].get() : sendX[r].get(); };
  for (size_t i = 0; i < c; ++i)
    for (int r = 0; r < n; ++r) {
      switch (k.kind) {
        case CollKind::kAlltoAll:
          // Block j of rank r's output is block r of rank j's input.
          for (int j = 0; j < n; ++j) out(r)->expectCopyOf(size_t(j) * c + i, sendB[j], sendOff[j] + size_t(r) * c + i);
          break;
        case CollKind::kGather:
          if (r == k.root)
            for (int j = 0; j < n; ++j) out(r)->expectCopyOf(recvOff[r] + size_t(j) * c + i, sendB[j], sendOff[j] + i);
          break;
        case CollKind::kScatter:
          out(r)->expectCopyOf(recvOff[r] + i, sendB[k.root], sendOff[k.root] + size_t(r) * c + i);
          break;
        default: break;
      }
    }
  sim.build(1);
  Outcome o = sim.run();
  if (!o.ok) return testing::AssertionFailure() << k.str() << ":\n" << o.error;
  std::string bad;
  for (int r = 0; r < n; ++r) {
    bad += sendX[r]->check();
    if (recvX[r]) bad += recvX[r]->check();
  }
  if (!bad.empty()) return testing::AssertionFailure() << k.str() << ":" << bad;
  return testing::AssertionSuccess();
}

TEST(P2pPrograms, SampledMatrixMatchesReference) {
  uint64_t idx = 0;
  for (CollKind kind : {CollKind::kAlltoAll, CollKind::kGather, CollKind::kScatter})
    for (int n = 1; n <= 16; ++n)
      for (size_t count : kCounts) {
        const uint64_t h = mix64(++idx * 104729);
        P2pCase k;
        k.kind = kind;
        k.nranks = n;
        k.count = count;
        k.slotBytes = kSlotBytes[h % 3];
        k.nSlots = 2 + uint32_t((h >> 8) % 7);
        k.dtype = kTypes[(h >> 16) % 4];
        const int roots[] = {0, n / 2, n - 1};
        k.root = roots[(h >> 24) % 3];
        k.inPlace = kind != CollKind::kAlltoAll && ((h >> 32) & 1);
        ASSERT_TRUE(runP2p(k));
      }
}

TEST(P2pPrograms, GatherScatterEveryRootInPlaceAndNot) {
  for (CollKind kind : {CollKind::kGather, CollKind::kScatter})
    for (int n : {1, 2, 3, 6})
      for (int root = 0; root < n; ++root)
        for (bool inPlace : {false, true}) {
          P2pCase k;
          k.kind = kind;
          k.nranks = n;
          k.count = 65;
          k.slotBytes = 64;
          k.nSlots = 2;
          k.root = root;
          k.inPlace = inPlace;
          ASSERT_TRUE(runP2p(k));
        }
}

// Uneven AlltoAllv: counts that differ per pair (zero included) and displacements that leave gaps,
// which must stay untouched.
TEST(P2pPrograms, AlltoAllvUnevenCounts) {
  for (int n : {1, 2, 3, 5, 8}) {
    Simulator sim(Geometry{n, 64, 3, 1});
    auto cnt = [](int from, int to) {
      return size_t((from * 7 + to * 13) % 11 == 3 ? 0 : 1 + (from * 31 + to * 17) % 90);
    };
    const size_t gap = 3;
    std::vector<std::unique_ptr<Buffer>> bufs;
    std::vector<std::unique_ptr<Expectation>> checks;
    std::vector<Buffer*> sendB(n);
    std::vector<std::vector<size_t>> sdispl(n, std::vector<size_t>(n));
    std::vector<Buffer*> recvB(n);
    std::vector<std::vector<size_t>> rdispl(n, std::vector<size_t>(n));
    for (int r = 0; r < n; ++r) {
      size_t s = 0, q = 0;
      for (int p = 0; p < n; ++p) {
        sdispl[r][p] = s;
        s += cnt(r, p) + gap;
        rdispl[r][p] = q;
        q += cnt(p, r) + gap;
      }
      bufs.push_back(std::make_unique<Buffer>(s, ncclFloat32));
      sendB[r] = bufs.back().get();
      for (size_t i = 0; i < s; ++i) sendB[r]->set(i, inputValue(ncclFloat32, r, i));
      bufs.push_back(std::make_unique<Buffer>(q, ncclFloat32, 0x5A));
      recvB[r] = bufs.back().get();
      Task t;
      t.kind = CollKind::kAlltoAllv;
      t.sendbuff = sendB[r]->at(0);
      t.recvbuff = recvB[r]->at(0);
      t.dtype = ncclFloat32;
      t.spec = resolveSpec(t.kind, t.dtype, ncclSum, n);
      t.vcounts.resize(4 * size_t(n));
      for (int p = 0; p < n; ++p) {
        t.vcounts[p] = cnt(r, p);
        t.vcounts[n + p] = sdispl[r][p];
        t.vcounts[2 * n + p] = cnt(p, r);
        t.vcounts[3 * n + p] = rdispl[r][p];
      }
      sim.add(r, t, s, q);
    }
    for (int r = 0; r < n; ++r) {
      checks.push_back(std::make_unique<Expectation>(sendB[r], "rank " + std::to_string(r) + " sendbuff"));
      checks.push_back(std::make_unique<Expectation>(recvB[r], "rank " + std::to_string(r) + " recvbuff"));
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < cnt(p, r); ++i)
          checks.back()->expectCopyOf(rdispl[r][p] + i, sendB[p], sdispl[p][r] + i);
    }
    sim.build(1);
    Outcome o = sim.run();
    ASSERT_TRUE(o.ok) << "AlltoAllv nranks=" << n << ": " << o.error;
    for (auto& x : checks) EXPECT_EQ(x->check(), "") << "AlltoAllv nranks=" << n;
  }
}

// One transfer of a Send/Recv group: `from` sends `count` elements to `to`. A transfer to self
// becomes the local copy group.cc makes of a matched send and receive to self.
struct Transfer {
  int from, to;
  size_t count;
};

// Issues `xfers` in list order on every rank (so each pair sees its sends and receives in the
// same order, as NCCL requires) and checks every receive buffer and that no send buffer changed.
testing::AssertionResult runTransfers(int n, uint32_t slotBytes, uint32_t nSlots, ncclDataType_t dt,
                                      const std::vector<Transfer>& xfers, const std::string& what) {
  Simulator sim(Geometry{n, slotBytes, nSlots, 1});
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<std::unique_ptr<Expectation>> checks;
  for (size_t x = 0; x < xfers.size(); ++x) {
    const Transfer& tr = xfers[x];
    auto in = std::make_unique<Buffer>(tr.count, dt);
    for (size_t i = 0; i < tr.count; ++i) in->set(i, inputValue(dt, tr.from, i, x + 1));
    auto out = std::make_unique<Buffer>(tr.count, dt, 0x5A);
    checks.push_back(std::make_unique<Expectation>(in.get(), what + " transfer " + std::to_string(x) + " sendbuff"));
    checks.push_back(std::make_unique<Expectation>(out.get(), what + " transfer " + std::to_string(x) + " recvbuff"));
    for (size_t i = 0; i < tr.count; ++i) checks.back()->expectCopyOf(i, in.get(), i);
    Task t;
    t.count = tr.count;
    t.dtype = dt;
    t.spec = resolveSpec(CollKind::kSend, dt, ncclSum, n);
    if (tr.from == tr.to) {
      t.kind = CollKind::kCopy;
      t.sendbuff = in->at(0);
      t.recvbuff = out->at(0);
      sim.add(tr.from, t, tr.count, tr.count);
    } else {
      // As the API records them: a Send has no recvbuff, a Recv no sendbuff.
      Task s = t;
      s.kind = CollKind::kSend;
      s.sendbuff = in->at(0);
      s.root = tr.to;
      sim.add(tr.from, s, tr.count, 0);
      Task r = t;
      r.kind = CollKind::kRecv;
      r.recvbuff = out->at(0);
      r.root = tr.from;
      sim.add(tr.to, r, 0, tr.count);
    }
    bufs.push_back(std::move(in));
    bufs.push_back(std::move(out));
  }
  sim.build(1);
  Outcome o = sim.run();
  if (!o.ok) return testing::AssertionFailure() << what << ":\n" << o.error;
  std::string bad;
  for (auto& x : checks) bad += x->check();
  if (!bad.empty()) return testing::AssertionFailure() << what << ":" << bad;
  return testing::AssertionSuccess();
}

// Every rank sends to rank+k and receives from rank-k for several k at once; counts far beyond the
// FIFO make each send wait for its receiver, which it can only do if the receive is not queued
// behind another peer's send.
TEST(P2pPrograms, SendRecvShiftPatterns) {
  for (int n : {1, 2, 3, 4, 7, 16})
    for (uint32_t nSlots : {2u, 8u}) {
      std::vector<Transfer> xs;
      for (int k : {1, n - 1, 0, 2, n + 1})
        for (int r = 0; r < n; ++r) xs.push_back(Transfer{r, (r + k) % n, size_t(300 + 97 * ((k + r) % 5))});
      ASSERT_TRUE(runTransfers(n, 64, nSlots, ncclInt32, xs,
                               "shift nranks=" + std::to_string(n) + " nSlots=" + std::to_string(nSlots)));
    }
}

// Both ranks of every pair send to each other before either receives (in issue order), with
// messages many times the FIFO.
TEST(P2pPrograms, SendRecvExchangeBothSendFirst) {
  for (int n : {2, 4, 6})
    for (size_t count : {size_t(1), size_t(1000), size_t(4099)}) {
      std::vector<Transfer> xs;
      for (int r = 0; r < n; ++r) xs.push_back(Transfer{r, r ^ 1, count});
      ASSERT_TRUE(runTransfers(n, 64, 2, ncclFloat32, xs, "exchange nranks=" + std::to_string(n)));
    }
}

// Random groups: several messages between the same pair (which must match in order), zero-byte
// messages, self copies, and fan-in to one rank.
TEST(P2pPrograms, SendRecvRandomGroups) {
  for (int trial = 0; trial < 60; ++trial) {
    uint64_t h = mix64(trial + 1);
    const int n = 1 + int(h % 9);
    const uint32_t slot = kSlotBytes[(h >> 8) % 3], nSlots = 2 + uint32_t((h >> 12) % 7);
    const ncclDataType_t dt = kTypes[(h >> 20) % 4];
    std::vector<Transfer> xs;
    const int m = 1 + int((h >> 24) % 24);
    for (int i = 0; i < m; ++i) {
      uint64_t g = mix64(h + i);
      const int from = int(g % n), to = (g >> 8) % 4 == 0 ? 0 : int((g >> 16) % n);
      xs.push_back(Transfer{from, to, kCounts[(g >> 32) % std::size(kCounts)]});
    }
    ASSERT_TRUE(runTransfers(n, slot, nSlots, dt, xs,
                             "random group trial " + std::to_string(trial) + " nranks=" + std::to_string(n) +
                                 " slotBytes=" + std::to_string(slot) + " nSlots=" + std::to_string(nSlots)));
  }
}

// A collective and sends/receives in one group travel on separate lanes and must not mix.
TEST(P2pPrograms, SendRecvInAGroupWithAnAllReduce) {
  for (int n : {2, 3, 5}) {
    Simulator sim(Geometry{n, 64, 2, 2});
    std::vector<std::unique_ptr<Buffer>> keep;
    std::vector<std::unique_ptr<Expectation>> checks;
    const size_t c = 333;
    std::vector<Buffer*> sendIn(n);
    for (int r = 0; r < n; ++r) {
      auto a = std::make_unique<Buffer>(c, ncclInt32), b = std::make_unique<Buffer>(c, ncclInt32, 0x5A);
      for (size_t i = 0; i < c; ++i) a->set(i, inputValue(ncclInt32, r, i));
      checks.push_back(std::make_unique<Expectation>(b.get(), "rank " + std::to_string(r) + " allreduce"));
      for (size_t i = 0; i < c; ++i) {
        std::vector<double> xs(n);
        for (int j = 0; j < n; ++j) xs[j] = inputValue(ncclInt32, j, i);
        checks.back()->expect(i, reference(Variant{ncclInt32, Red::kSum}, xs));
      }
      Task t;
      t.kind = CollKind::kAllReduce;
      t.sendbuff = a->at(0);
      t.recvbuff = b->at(0);
      t.count = c;
      t.dtype = ncclInt32;
      t.spec = resolveSpec(t.kind, t.dtype, ncclSum, n);
      sim.add(r, t, c, c);
      sendIn[r] = a.get();
      keep.push_back(std::move(a));
      keep.push_back(std::move(b));
    }
    // Then each rank sends its AllReduce input to the next rank.
    for (int r = 0; r < n; ++r) {
      const int to = (r + 1) % n, from = (r + n - 1) % n;
      auto got = std::make_unique<Buffer>(c, ncclInt32, 0x5A);
      checks.push_back(std::make_unique<Expectation>(got.get(), "rank " + std::to_string(r) + " recv"));
      for (size_t i = 0; i < c; ++i) checks.back()->expectCopyOf(i, sendIn[from], i);
      Task s;
      s.kind = CollKind::kSend;
      s.sendbuff = sendIn[r]->at(0);
      s.count = c;
      s.dtype = ncclInt32;
      s.root = to;
      s.spec = resolveSpec(s.kind, s.dtype, ncclSum, n);
      sim.add(r, s, c, 0);
      Task q = s;
      q.kind = CollKind::kRecv;
      q.sendbuff = nullptr;
      q.recvbuff = got->at(0);
      q.root = from;
      sim.add(r, q, 0, c);
      keep.push_back(std::move(got));
    }
    sim.build(2);
    Outcome o = sim.run();
    ASSERT_TRUE(o.ok) << "nranks=" << n << ": " << o.error;
    for (auto& x : checks) EXPECT_EQ(x->check(), "") << "nranks=" << n;
  }
}

}  // namespace
