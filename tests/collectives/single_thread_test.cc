// One thread driving every rank, as single-process multi-GPU programs do: ncclCommInitAll, or
// ncclCommInitRank for every rank inside one group, then collectives and point-to-point calls
// for all ranks inside ncclGroupStart/End.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "coll_cases.h"
#include "harness.h"

namespace weft_test {
namespace {

TEST(SingleThread, InitAllGivesOrderedRanks) {
  EXPECT_RUN_OK(runClique(4, [](CliqueCtx& ctx) {
    for (int r = 0; r < ctx.nranks; ++r) {
      int count = -1, rank = -1;
      ctx.ok(ncclCommCount(ctx.comms[r], &count), "ncclCommCount", ctx.comms[r]);
      ctx.ok(ncclCommUserRank(ctx.comms[r], &rank), "ncclCommUserRank", ctx.comms[r]);
      if (count != ctx.nranks || rank != r) ctx.failf("comms[%d] is rank %d of %d", r, rank, count);
      int host = -1;
      ctx.ok(weftCommIsHostMode(ctx.comms[r], &host), "weftCommIsHostMode", ctx.comms[r]);
      if (host != 1) ctx.failf("comms[%d]: weftCommIsHostMode gave %d, expected 1", r, host);
    }
  }));
}

// Several different collectives per rank, all ranks, one group.
TEST(SingleThread, ManyCollectivesAllRanksOneGroup) {
  EXPECT_RUN_OK(runClique(3, [](CliqueCtx& ctx) {
    const std::vector<CollCase> cases = [] {
      std::vector<CollCase> v;
      auto add = [&](Coll coll, ncclDataType_t dt, Red red, size_t count, bool inPlace, int root) {
        CollCase c;
        c.coll = coll;
        c.dtype = dt;
        c.red = red;
        c.count = count;
        c.inPlace = inPlace;
        c.root = root;
        c.seed = static_cast<uint32_t>(v.size() + 100);
        v.push_back(c);
      };
      add(Coll::kAllReduce, ncclFloat32, Red::kSum, 5000, false, 0);
      add(Coll::kReduceScatter, ncclInt64, Red::kMin, 77, true, 0);
      add(Coll::kBroadcast, ncclBfloat16, Red::kSum, 999, false, 2);
      add(Coll::kAlltoAllv, ncclFloat16, Red::kSum, 31, false, 0);
      add(Coll::kScatter, ncclUint8, Red::kSum, 1000, true, 1);
      return v;
    }();
    std::vector<std::unique_ptr<CaseRun>> runs;
    for (const CollCase& c : cases)
      for (int r = 0; r < ctx.nranks; ++r) {
        runs.push_back(std::make_unique<CaseRun>(c, r, ctx.nranks));
        if (!runs.back()->createOp(ctx.comms[r], &ctx)) return;
        runs.back()->armScalar();
      }
    if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
    bool ok = true;
    for (size_t i = 0; i < runs.size(); ++i) {
      ncclComm_t comm = ctx.comms[i % ctx.nranks];
      ok = ctx.ok(runs[i]->issue(comm), runs[i]->label().c_str(), comm) && ok;
    }
    if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd") || !ok) return;
    for (auto& run : runs) run->verify(&ctx);
  }));
}

// The documented way for one thread to create a communicator per device: ncclCommInitRank for
// every rank inside one group.
TEST(SingleThread, InitRankForEveryRankInOneGroup) {
  RunOptions opts;
  opts.initComm = false;
  opts.deadlineMs = 20000;
  EXPECT_RUN_OK(runClique(
      3,
      [](CliqueCtx& ctx) {
        ncclUniqueId id;
        if (!ctx.ok(ncclGetUniqueId(&id), "ncclGetUniqueId")) return;
        ctx.comms.assign(ctx.nranks, nullptr);
        ctx.ok(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < ctx.nranks; ++r) {
          ctx.step("ncclCommInitRank(rank " + std::to_string(r) + ") inside a group");
          ctx.ok(ncclCommInitRank(&ctx.comms[r], ctx.nranks, id, r), "ncclCommInitRank in a group");
        }
        ctx.step("ncclGroupEnd after the inits");
        if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd (init)")) return;
        std::vector<std::vector<double>> bufs(ctx.nranks);
        ctx.ok(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < ctx.nranks; ++r) {
          bufs[r].assign(1000, r + 0.5);
          ctx.ok(ncclAllReduce(bufs[r].data(), bufs[r].data(), 1000, ncclFloat64, ncclSum, ctx.comms[r], nullptr),
                 "ncclAllReduce", ctx.comms[r]);
        }
        if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd (AllReduce)")) return;
        for (int r = 0; r < ctx.nranks; ++r)
          if (bufs[r][0] != 4.5 || bufs[r][999] != 4.5) ctx.failf("rank %d got %g, expected 4.5", r, bufs[r][0]);
      },
      opts));
}

// ncclCommSplit for every rank inside one group, from one thread.
TEST(SingleThread, SplitEveryRankInOneGroup) {
  RunOptions opts;
  opts.deadlineMs = 20000;
  EXPECT_RUN_OK(runClique(
      4,
      [](CliqueCtx& ctx) {
        std::vector<ncclComm_t> subs(ctx.nranks, nullptr);
        ctx.ok(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < ctx.nranks; ++r) {
          ctx.step("ncclCommSplit(rank " + std::to_string(r) + ") inside a group");
          ctx.ok(ncclCommSplit(ctx.comms[r], r % 2, -r, &subs[r], nullptr), "ncclCommSplit in a group", ctx.comms[r]);
        }
        ctx.step("ncclGroupEnd after the splits");
        if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd (split)")) return;
        for (int r = 0; r < ctx.nranks; ++r) {
          int count = -1, rank = -1;
          if (subs[r] == nullptr) {
            ctx.failf("rank %d: no communicator from the split", r);
            continue;
          }
          ctx.ok(ncclCommCount(subs[r], &count), "ncclCommCount", subs[r]);
          ctx.ok(ncclCommUserRank(subs[r], &rank), "ncclCommUserRank", subs[r]);
          // Keys -r: within each color the higher old rank comes first.
          const int want = r < 2 ? 1 : 0;
          if (count != 2 || rank != want)
            ctx.failf("old rank %d: rank %d of %d in its split, expected %d of 2", r, rank, count, want);
        }
        for (ncclComm_t c : subs)
          if (c) ctx.ok(ncclCommDestroy(c), "ncclCommDestroy(split)");
      },
      opts));
}

TEST(SingleThread, RingOfSendRecvOneGroup) {
  EXPECT_RUN_OK(runClique(4, [](CliqueCtx& ctx) {
    const int n = ctx.nranks;
    const size_t count = 1 << 20;
    std::vector<std::vector<int32_t>> out(n), in(n);
    for (int r = 0; r < n; ++r) {
      out[r].assign(count, 1000 * r);
      for (size_t i = 0; i < count; i += 4096) out[r][i] += static_cast<int32_t>(i / 4096);
      in[r].assign(count, -1);
    }
    if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
    for (int r = 0; r < n; ++r) {
      ctx.ok(ncclSend(out[r].data(), count, ncclInt32, (r + 1) % n, ctx.comms[r], nullptr), "ncclSend", ctx.comms[r]);
      ctx.ok(ncclRecv(in[r].data(), count, ncclInt32, (r + n - 1) % n, ctx.comms[r], nullptr), "ncclRecv",
             ctx.comms[r]);
    }
    if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd")) return;
    for (int r = 0; r < n; ++r)
      if (in[r] != out[(r + n - 1) % n]) ctx.failf("rank %d did not receive rank %d's data", r, (r + n - 1) % n);
  }));
}

}  // namespace
}  // namespace weft_test
