// The nccl<Coll>Config calls (NCCL 2.31's per-call ncclCollConfig_t): NCCL's checks of the struct,
// algSelection honoured (every rank gets the right result with each algorithm it names; ranks that
// name different algorithms fail with a mismatch that names both instead of hanging), its
// forceAlgSelection fallback, channel bounds, and every collective's Config entry point.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

ncclCollConfig_t selecting(const char* algos) {
  ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
  c.algSelection = algos;
  return c;
}

// 3 ranks, float sum of (rank + 1) * (i % 7) over 4099 elements (odd: the tails), out of place.
bool allReduceIsRight(RankCtx& ctx, const ncclCollConfig_t* config, const char* what) {
  const size_t n = 4099;
  std::vector<float> in(n), out(n, -1.0f);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>((ctx.rank + 1) * (i % 7));
  if (!ctx.ok(ncclAllReduceConfig(in.data(), out.data(), n, ncclFloat32, ncclSum, ctx.comm, nullptr, config), what,
              ctx.comm))
    return false;
  const int rankSum = ctx.nranks * (ctx.nranks + 1) / 2;  // 1 + 2 + ... + nranks
  const auto sum = static_cast<float>(rankSum);
  for (size_t i = 0; i < n; ++i)
    if (out[i] != sum * static_cast<float>(i % 7)) {
      ctx.failf("%s: element %zu is %g, expected %g", what, i, out[i], sum * static_cast<float>(i % 7));
      return false;
    }
  return true;
}

TEST(CollConfig, EverySelectionGivesTheRightResult) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    if (!allReduceIsRight(ctx, nullptr, "ncclAllReduceConfig with a NULL config")) return;
    ncclCollConfig_t plain = NCCL_COLLCONFIG_INITIALIZER;
    if (!allReduceIsRight(ctx, &plain, "ncclAllReduceConfig with the initializer's config")) return;
    // NCCL's grammar: prefixes, case and whitespace ignored, ',' unions, '+' intersects, '^' negates.
    for (const char* sel : {"RING", "tree", "DDAFlat", "ddatree", "Ring_Simple", " TREE , ^TREE_LL ", "dda+^ddaflat",
                            "^RING+^TREE+^DDATREE"}) {
      ncclCollConfig_t c = selecting(sel);
      if (!allReduceIsRight(ctx, &c, (std::string("algSelection \"") + sel + "\"").c_str())) return;
    }
    // Bounds on the channels, and the profiler tag, change nothing in the result.
    ncclCollConfig_t bounded = selecting("RING");
    bounded.minCTAs = 2;
    bounded.maxCTAs = 2;
    bounded.userProfilerTag = 42;
    allReduceIsRight(ctx, &bounded, "algSelection RING on 2 channels");
  }));
}

// Rank 0 asks for the ring and rank 1 for the tree: the selection is honoured on each rank, so the
// two run different algorithms, and the op stamps turn that into an error naming both, at once.
TEST(CollConfig, RanksThatSelectDifferentAlgorithmsFailNamingBoth) {
  RunOptions opts;
  opts.deadlineMs = 30000;
  EXPECT_RUN_OK(runRanks(
      kTier, 2,
      [](RankCtx& ctx) {
        std::vector<float> v(1000, 1.0f);
        ncclCollConfig_t c = selecting(ctx.rank == 0 ? "RING" : "TREE");
        const ncclResult_t r = ncclAllReduceConfig(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm,
                                                   nullptr, &c);
        const std::string msg = lastError(ctx.comm);
        if (r != ncclInvalidUsage)
          ctx.failf("rank %d: returned %s, expected ncclInvalidUsage", ctx.rank, ncclGetErrorString(r));
        for (const char* name : {"Ring", "Tree"})
          if (msg.find(name) == std::string::npos)
            ctx.failf("rank %d: the error does not name %s: \"%s\"", ctx.rank, name, msg.c_str());
        ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort after the mismatch");
        ctx.comm = nullptr;
      },
      opts));
}

TEST(CollConfig, BadConfigsAreRejectedAndTheCommunicatorStaysUsable) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    float x = 1.0f;
    auto call = [&](const ncclCollConfig_t& c) {
      return ncclAllReduceConfig(&x, &x, 1, ncclFloat32, ncclSum, ctx.comm, nullptr, &c);
    };
    auto rejected = [&](ncclCollConfig_t c, ncclResult_t want, const char* what, const char* mentions) {
      if (!ctx.expect(call(c), want, what, ctx.comm)) return;
      const std::string msg = lastError(ctx.comm);
      if (msg.find("ncclAllReduceConfig") == std::string::npos || msg.find(mentions) == std::string::npos)
        ctx.failf("%s: the error \"%s\" names neither the call nor \"%s\"", what, msg.c_str(), mentions);
    };
    // Each case: the initializer's config with one change, what NCCL returns, a word the message has.
    struct BadField {
      void (*edit)(ncclCollConfig_t*);
      ncclResult_t want;
      const char* what;
      const char* mentions;
    };
    const BadField bad[] = {
        {[](ncclCollConfig_t* c) { c->size = 32; }, ncclInvalidArgument, "a config of 32 bytes", "size"},
        {[](ncclCollConfig_t* c) { c->magic = 0; }, ncclInvalidArgument, "a config without the magic", "magic"},
        {[](ncclCollConfig_t* c) { c->forceAlgSelection = 2; }, ncclInvalidArgument, "forceAlgSelection 2",
         "forceAlgSelection"},
        {[](ncclCollConfig_t* c) { c->CTAPolicy = 9; }, ncclInvalidArgument, "CTAPolicy 9", "CTAPolicy"},
        {[](ncclCollConfig_t* c) { c->minCTAs = 0; }, ncclInvalidArgument, "minCTAs 0", "minCTAs"},
        {[](ncclCollConfig_t* c) {
           c->minCTAs = 3;
           c->maxCTAs = 2;
         },
         ncclInvalidArgument, "minCTAs above maxCTAs", "maxCTAs"},
    };
    for (const BadField& b : bad) {
      ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
      b.edit(&c);
      rejected(c, b.want, b.what, b.mentions);
    }
    rejected(selecting("FOO"), ncclInvalidArgument, "algSelection FOO", "FOO");
    rejected(selecting("RING,,TREE"), ncclInvalidArgument, "an empty term", "empty");
    rejected(selecting("NVLS"), ncclInvalidArgument, "NVLS, which Weft does not have", "can run with");
    rejected(selecting("RING+^RING"), ncclInvalidArgument, "an empty intersection", "can run with");
    ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
    c.launchCompletionEvent = reinterpret_cast<decltype(c.launchCompletionEvent)>(static_cast<uintptr_t>(0x1000));
    rejected(c, ncclInvalidUsage, "a launch-completion event", "launchCompletionEvent");
    // A 2.31 struct ends before the event: whatever lies after it is not read.
    c.size = offsetof(ncclCollConfig_t, launchCompletionEvent);
    ctx.ok(call(c), "a 2.31-sized config", ctx.comm);
    // Without force, what cannot be honoured falls back to the automatic choice.
    for (const char* sel : {"FOO", "NVLS", "RING+^RING"}) {
      c = selecting(sel);
      c.forceAlgSelection = 0;
      ctx.ok(call(c), (std::string("algSelection \"") + sel + "\" with forceAlgSelection 0").c_str(), ctx.comm);
    }
    // None of the refusals touched the communicator.
    x = 1.0f;
    if (ctx.ok(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, ctx.comm, nullptr), "a plain AllReduce after",
               ctx.comm) &&
        x != 2.0f)
      ctx.failf("the AllReduce after the refused configs gave %g, expected 2", x);
  }));
}

// Every Config entry point runs its collective, alone and in a group.
TEST(CollConfig, EveryCollectiveHasAConfigCall) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    const int n = ctx.nranks, r = ctx.rank;
    const size_t k = 257;
    ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
    c.maxCTAs = 1;
    c.userProfilerTag = 7;
    std::vector<int32_t> in(k * n), out(k * n);
    auto fill = [&] {
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>(100 * r + i);
      std::fill(out.begin(), out.end(), -1);
    };
    fill();
    if (ctx.ok(ncclBroadcastConfig(in.data(), out.data(), k, ncclInt32, 1, ctx.comm, nullptr, &c), "Broadcast",
               ctx.comm) &&
        out[k - 1] != static_cast<int32_t>(100 + k - 1))
      ctx.failf("ncclBroadcastConfig: last element %d", out[k - 1]);
    fill();
    if (ctx.ok(ncclReduceConfig(in.data(), out.data(), k, ncclInt32, ncclSum, 0, ctx.comm, nullptr, &c), "Reduce",
               ctx.comm) &&
        r == 0 && out[5] != 300 + 3 * 5)
      ctx.failf("ncclReduceConfig: element 5 is %d", out[5]);
    fill();
    if (ctx.ok(ncclAllGatherConfig(in.data(), out.data(), k, ncclInt32, ctx.comm, nullptr, &c), "AllGather",
               ctx.comm) &&
        out[2 * k + 1] != 201)
      ctx.failf("ncclAllGatherConfig: element %zu is %d", 2 * k + 1, out[2 * k + 1]);
    fill();
    if (ctx.ok(ncclReduceScatterConfig(in.data(), out.data(), k, ncclInt32, ncclSum, ctx.comm, nullptr, &c),
               "ReduceScatter", ctx.comm) &&
        out[0] != static_cast<int32_t>(300 + 3 * k * r))
      ctx.failf("ncclReduceScatterConfig: element 0 is %d", out[0]);
    fill();
    if (ctx.ok(ncclAlltoAllConfig(in.data(), out.data(), k, ncclInt32, ctx.comm, nullptr, &c), "AlltoAll", ctx.comm) &&
        out[2 * k] != static_cast<int32_t>(200 + k * r))
      ctx.failf("ncclAlltoAllConfig: element %zu is %d", 2 * k, out[2 * k]);
    fill();
    if (ctx.ok(ncclGatherConfig(in.data(), out.data(), k, ncclInt32, 2, ctx.comm, nullptr, &c), "Gather", ctx.comm) &&
        r == 2 && out[k] != 100)
      ctx.failf("ncclGatherConfig: element %zu is %d", k, out[k]);
    fill();
    if (ctx.ok(ncclScatterConfig(in.data(), out.data(), k, ncclInt32, 0, ctx.comm, nullptr, &c), "Scatter", ctx.comm) &&
        out[0] != static_cast<int32_t>(k * r))
      ctx.failf("ncclScatterConfig: element 0 is %d", out[0]);
    // Two calls with their own selections in one group.
    std::vector<float> a(1000, 1.0f), b(3000, 2.0f);
    ncclCollConfig_t ring = selecting("RING"), tree = selecting("TREE");
    ctx.ok(ncclGroupStart(), "ncclGroupStart");
    ctx.ok(ncclAllReduceConfig(a.data(), a.data(), a.size(), ncclFloat32, ncclSum, ctx.comm, nullptr, &ring),
           "AllReduce on the ring in a group", ctx.comm);
    ctx.ok(ncclAllReduceConfig(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, ctx.comm, nullptr, &tree),
           "AllReduce on the tree in a group", ctx.comm);
    if (ctx.ok(ncclGroupEnd(), "ncclGroupEnd") && (a[999] != 3.0f || b[2999] != 6.0f))
      ctx.failf("in a group: %g and %g, expected 3 and 6", a[999], b[2999]);
  }));
}

}  // namespace
}  // namespace weft_test
