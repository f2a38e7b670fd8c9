// Group semantics in host mode: calls inside ncclGroupStart/End run at the (outermost) ncclGroupEnd,
// which returns when all of them are done; one group may hold many collectives, several
// communicators, point-to-point calls, and a PreMulSum whose device scalar is read at execution.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "coll_cases.h"
#include "dtypes.h"
#include "harness.h"

namespace weft_test {
namespace {

CollCase makeCase(Coll coll, ncclDataType_t dt, Red red, size_t count, bool inPlace, int root, uint32_t seed) {
  CollCase c;
  c.coll = coll;
  c.dtype = dt;
  c.red = red;
  c.count = count;
  c.inPlace = inPlace;
  c.root = root;
  c.seed = seed;
  return c;
}

struct Planned {
  CollCase c;
  ncclComm_t comm;
  int rank;
  int nranks;
};

// Issues every planned case inside one group on this rank, then checks them all.
void runInOneGroup(RankCtx& ctx, const std::vector<Planned>& plan) {
  std::vector<std::unique_ptr<CaseRun>> runs;
  for (const Planned& p : plan) {
    runs.push_back(std::make_unique<CaseRun>(p.c, p.rank, p.nranks));
    if (!runs.back()->createOp(p.comm, &ctx)) return;
    runs.back()->armScalar();
  }
  if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
  bool ok = true;
  for (size_t i = 0; i < plan.size(); ++i)
    ok = ctx.ok(runs[i]->issue(plan[i].comm), runs[i]->label().c_str(), plan[i].comm) && ok;
  const ncclResult_t end = ncclGroupEnd();
  if (!ok || !ctx.ok(end, "ncclGroupEnd")) return;
  for (size_t i = 0; i < plan.size(); ++i) {
    runs[i]->verify(&ctx);
    runs[i]->destroyOp(plan[i].comm, &ctx);
  }
}

TEST(Groups, SeveralCollectivesOnOneComm) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    const int n = ctx.nranks, r = ctx.rank;
    std::vector<Planned> plan = {
        {makeCase(Coll::kAllReduce, ncclFloat32, Red::kSum, 1023, false, 0, 1), ctx.comm, r, n},
        {makeCase(Coll::kAllGather, ncclInt8, Red::kSum, 7, true, 0, 2), ctx.comm, r, n},
        {makeCase(Coll::kBroadcast, ncclFloat64, Red::kSum, 1023, false, 1, 3), ctx.comm, r, n},
        {makeCase(Coll::kReduceScatter, ncclBfloat16, Red::kAvg, 100, false, 0, 4), ctx.comm, r, n},
        {makeCase(Coll::kAlltoAll, ncclInt32, Red::kSum, 33, false, 0, 5), ctx.comm, r, n},
        {makeCase(Coll::kReduce, ncclFloat16, Red::kPreMulDev, 64, true, 2, 6), ctx.comm, r, n},
        {makeCase(Coll::kAllReduce, ncclUint8, Red::kMax, 100000, true, 0, 7), ctx.comm, r, n},
        {makeCase(Coll::kGather, ncclInt64, Red::kSum, 5, false, 1, 8), ctx.comm, r, n},
    };
    runInOneGroup(ctx, plan);
  }));
}

// A training loop repeats one call, and from the second time on that call runs the program built
// the first time (enqueue/group.cc). Repeats with new buffers and in place, broken by
// calls that differ in one thing each (count, type, operator, root, collective), must all be right:
// a difference the reuse missed would run one call with another's program.
TEST(Groups, RepeatedCallsStayRightWhenTheirProgramIsReused) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    std::vector<CollCase> calls;
    // 2 floats: the one-shot ring with scratch; 1023: one slot; 300000: many slots and channels.
    for (size_t count : {size_t(2), size_t(1023), size_t(300000)}) {
      const CollCase base = makeCase(Coll::kAllReduce, ncclFloat32, Red::kSum, count, false, 0, 0);
      // Each CaseRun allocates new buffers. The inputs of a repeat are the same as the first
      // time's: the runs check that every rank got the same bits for the same case.
      auto add = [&](CollCase c) {
        c.seed = 7;
        calls.push_back(c);
      };
      for (int i = 0; i < 3; ++i) add(base);
      CollCase c = base;
      c.inPlace = true;
      add(c);
      add(c);
      add(base);
      c = base;
      c.count = count + 1;
      add(c);
      add(base);
      c = base;
      c.dtype = ncclInt32;
      add(c);
      add(base);
      c = base;
      c.red = Red::kMax;
      add(c);
      add(base);
      for (int root : {0, 2, 2, 1}) add(makeCase(Coll::kBroadcast, ncclFloat32, Red::kSum, count, false, root, 0));
      for (int root : {1, 1, 0}) add(makeCase(Coll::kReduce, ncclFloat32, Red::kSum, count, false, root, 0));
      add(makeCase(Coll::kAllGather, ncclFloat32, Red::kSum, count, false, 0, 0));
      add(makeCase(Coll::kReduceScatter, ncclFloat32, Red::kSum, count, false, 0, 0));
      add(makeCase(Coll::kReduceScatter, ncclFloat32, Red::kSum, count, false, 0, 0));
      // The point-to-point patterns reuse their programs too.
      for (int i = 0; i < 2; ++i) add(makeCase(Coll::kAlltoAll, ncclFloat32, Red::kSum, count, false, 0, 0));
      for (int root : {1, 1, 2}) add(makeCase(Coll::kGather, ncclFloat32, Red::kSum, count, false, root, 0));
      for (int root : {0, 2, 2}) add(makeCase(Coll::kScatter, ncclFloat32, Red::kSum, count, false, root, 0));
      add(makeCase(Coll::kAlltoAll, ncclInt32, Red::kSum, count, false, 0, 0));
      add(base);
    }
    for (const CollCase& c : calls)
      if (!runCaseOnRank(c, ctx)) return;
  }));
}

// A group of several calls repeated reuses its program as well (enqueue/group.cc): repeats broken by
// groups that differ in one call, or in the calls' order, must all be right.
TEST(Groups, RepeatedGroupsStayRightWhenTheirProgramIsReused) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    const int n = ctx.nranks, r = ctx.rank;
    const std::vector<Planned> a = {
        {makeCase(Coll::kAllReduce, ncclFloat32, Red::kSum, 1023, false, 0, 1), ctx.comm, r, n},
        {makeCase(Coll::kAlltoAll, ncclInt32, Red::kSum, 33, false, 0, 2), ctx.comm, r, n},
        {makeCase(Coll::kBroadcast, ncclFloat64, Red::kSum, 300, false, 1, 3), ctx.comm, r, n},
    };
    const std::vector<Planned> b = [&] {
      std::vector<Planned> p = a;
      p[2].c.root = 2;
      return p;
    }();
    const std::vector<Planned> swapped = {a[1], a[0], a[2]};
    for (const std::vector<Planned>* plan : {&a, &a, &b, &a, &swapped, &swapped, &a}) runInOneGroup(ctx, *plan);
  }));
}

// One group holding calls on the parent communicator and on a split of it.
TEST(Groups, SpansCommAndItsSplit) {
  EXPECT_RUN_OK(runRanks(kTier, 4, [](RankCtx& ctx) {
    ncclComm_t sub = nullptr;
    if (!ctx.ok(ncclCommSplit(ctx.comm, ctx.rank % 2, ctx.rank, &sub, nullptr), "ncclCommSplit", ctx.comm)) return;
    int subRank = -1, subN = -1;
    ctx.ok(ncclCommUserRank(sub, &subRank), "ncclCommUserRank", sub);
    ctx.ok(ncclCommCount(sub, &subN), "ncclCommCount", sub);
    std::vector<Planned> plan = {
        {makeCase(Coll::kAllReduce, ncclFloat32, Red::kSum, 4097, false, 0, 11), ctx.comm, ctx.rank, ctx.nranks},
        {makeCase(Coll::kAllReduce, ncclInt32, Red::kSum, 4097, false, 0, 12), sub, subRank, subN},
        {makeCase(Coll::kAllGather, ncclFloat16, Red::kSum, 300, false, 0, 13), sub, subRank, subN},
        {makeCase(Coll::kBroadcast, ncclInt8, Red::kSum, 999, true, 3, 14), ctx.comm, ctx.rank, ctx.nranks},
    };
    if (subRank >= 0 && subN > 0) runInOneGroup(ctx, plan);
    ctx.ok(ncclCommDestroy(sub), "ncclCommDestroy(split)");
  }));
}

// Weft's uneven collectives in one group with NCCL's, on a communicator and on a split of it, next
// to point-to-point traffic on the same peers.
TEST(Groups, UnevenCollectivesBesideOthersOnTwoComms) {
  EXPECT_RUN_OK(runRanks(kTier, 4, [](RankCtx& ctx) {
    ncclComm_t sub = nullptr;
    if (!ctx.ok(ncclCommSplit(ctx.comm, ctx.rank % 2, ctx.rank, &sub, nullptr), "ncclCommSplit", ctx.comm)) return;
    int subRank = -1, subN = -1;
    ctx.ok(ncclCommUserRank(sub, &subRank), "ncclCommUserRank", sub);
    ctx.ok(ncclCommCount(sub, &subN), "ncclCommCount", sub);
    const int r = ctx.rank, n = ctx.nranks;
    std::vector<Planned> plan = {
        {makeCase(Coll::kAllGatherv, ncclFloat32, Red::kSum, 5000, false, 0, 31), ctx.comm, r, n},
        {makeCase(Coll::kAllReduce, ncclFloat32, Red::kSum, 999, false, 0, 32), ctx.comm, r, n},
        {makeCase(Coll::kReduceScatterv, ncclInt32, Red::kPreMulDev, 3000, true, 0, 33), sub, subRank, subN},
        {makeCase(Coll::kAlltoAllv, ncclInt8, Red::kSum, 40, false, 0, 34), ctx.comm, r, n},
        {makeCase(Coll::kReduceScatterv, ncclBfloat16, Red::kAvg, 700, false, 0, 35), ctx.comm, r, n},
        {makeCase(Coll::kAllGatherv, ncclInt64, Red::kSum, 65, true, 0, 36), sub, subRank, subN},
        {makeCase(Coll::kAllGather, ncclFloat16, Red::kSum, 300, false, 0, 37), sub, subRank, subN},
    };
    if (subRank >= 0 && subN > 0) runInOneGroup(ctx, plan);
    ctx.ok(ncclCommDestroy(sub), "ncclCommDestroy(split)");
  }));
}

// Inside a group nothing runs before the outermost ncclGroupEnd; nesting only counts depth.
TEST(Groups, NestedRunAtOutermostEnd) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    const size_t count = 4096;
    std::vector<float> inA(count, 1.0f + ctx.rank), outA(count, -1.0f), inB(count, 10.0f * (ctx.rank + 1)),
        outB(count, -1.0f);
    if (!ctx.ok(ncclGroupStart(), "ncclGroupStart (outer)")) return;
    ctx.ok(ncclGroupStart(), "ncclGroupStart (inner)");
    ctx.ok(ncclAllReduce(inA.data(), outA.data(), count, ncclFloat32, ncclSum, ctx.comm, nullptr), "ncclAllReduce A",
           ctx.comm);
    ctx.ok(ncclGroupStart(), "ncclGroupStart (innermost)");
    ctx.ok(ncclGroupEnd(), "ncclGroupEnd (innermost)");
    ctx.ok(ncclGroupEnd(), "ncclGroupEnd (inner)");
    if (outA[0] != -1.0f || outA[count - 1] != -1.0f)
      ctx.fail("AllReduce A ran at an inner ncclGroupEnd: operations must wait for the outermost one");
    ctx.ok(ncclAllReduce(inB.data(), outB.data(), count, ncclFloat32, ncclMax, ctx.comm, nullptr), "ncclAllReduce B",
           ctx.comm);
    if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd (outer)")) return;
    for (size_t i = 0; i < count; ++i) {
      if (outA[i] != 3.0f || outB[i] != 20.0f) {
        ctx.failf("after the outermost ncclGroupEnd: element %zu is A=%g B=%g, expected A=3 B=20", i, outA[i], outB[i]);
        break;
      }
    }
  }));
}

TEST(Groups, ResultsAppearAtGroupEndNotBefore) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    std::vector<int64_t> in(1000, ctx.rank + 1), out(1000, -7);
    const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
    std::vector<int64_t> sendBuf(10, 100 + ctx.rank), recvBuf(10, -7);
    if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
    ctx.ok(ncclAllReduce(in.data(), out.data(), in.size(), ncclInt64, ncclSum, ctx.comm, nullptr), "ncclAllReduce",
           ctx.comm);
    ctx.ok(ncclSend(sendBuf.data(), 10, ncclInt64, next, ctx.comm, nullptr), "ncclSend", ctx.comm);
    ctx.ok(ncclRecv(recvBuf.data(), 10, ncclInt64, prev, ctx.comm, nullptr), "ncclRecv", ctx.comm);
    if (out[0] != -7 || recvBuf[0] != -7) ctx.fail("a call inside a group wrote its result before ncclGroupEnd");
    if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd")) return;
    if (out[0] != 6 || out[999] != 6)
      ctx.failf("AllReduce in group: got %lld, expected 6", static_cast<long long>(out[0]));
    if (recvBuf[0] != 100 + prev || recvBuf[9] != 100 + prev)
      ctx.failf("Recv in group: got %lld, expected %d", static_cast<long long>(recvBuf[0]), 100 + prev);
  }));
}

// A device-resident PreMulSum scalar is read when the group executes: a value written after the
// call was enqueued (but before ncclGroupEnd) is the one that counts.
TEST(Groups, PreMulSumDeviceScalarReadAtGroupEnd) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    float scalar = 100.0f;  // wrong until just before ncclGroupEnd
    ncclRedOp_t op;
    if (!ctx.ok(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarDevice, ctx.comm),
                "ncclRedOpCreatePreMulSum(device)", ctx.comm))
      return;
    std::vector<float> in(257, 1.0f + ctx.rank), out(257, 0.0f);
    ctx.ok(ncclGroupStart(), "ncclGroupStart");
    ctx.ok(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, op, ctx.comm, nullptr), "ncclAllReduce",
           ctx.comm);
    scalar = 0.5f;
    ctx.ok(ncclGroupEnd(), "ncclGroupEnd");
    // 0.5 * (1 + 2 + 3) = 3
    if (out[0] != 3.0f || out[256] != 3.0f)
      ctx.failf(
          "PreMulSum with a device scalar changed before ncclGroupEnd: got %g, expected 3 (600 means the "
          "scalar was read when the call was enqueued)",
          out[0]);
    ctx.ok(ncclRedOpDestroy(op, ctx.comm), "ncclRedOpDestroy", ctx.comm);
  }));
}

// Two independent communicators over the same ranks, both used in one group, interleaved.
TEST(Groups, TwoCommunicatorsInterleaved) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    ncclComm_t twin = nullptr;
    if (!ctx.ok(ncclCommSplit(ctx.comm, 0, ctx.rank, &twin, nullptr), "ncclCommSplit(all, color 0)", ctx.comm)) return;
    std::vector<Planned> plan;
    for (int i = 0; i < 6; ++i) {
      ncclComm_t c = (i % 2) ? twin : ctx.comm;
      plan.push_back({makeCase(Coll::kAllReduce, ncclFloat32, Red::kSum, 1000 + i * 1000, false, 0, 20 + i), c,
                      ctx.rank, ctx.nranks});
    }
    runInOneGroup(ctx, plan);
    ctx.ok(ncclCommDestroy(twin), "ncclCommDestroy(twin)");
  }));
}

}  // namespace
}  // namespace weft_test
