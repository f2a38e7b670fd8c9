// Communicator lifecycle across ranks: split (colors, NOCOLOR, key order, split of a split),
// shrink, non-blocking and scalable init, finalize/destroy, abort, revoke, the rank queries, and
// buffer/window registration with collectives on the registered buffers.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

TEST(CommSplit, EvenOddColors) {
  EXPECT_RUN_OK(runRanks(kTier, 5, [](RankCtx& ctx) {
    ncclComm_t sub = nullptr;
    if (!ctx.ok(ncclCommSplit(ctx.comm, ctx.rank % 2, ctx.rank, &sub, nullptr), "ncclCommSplit", ctx.comm)) return;
    if (sub == nullptr) return ctx.fail("ncclCommSplit with a color gave a NULL communicator");
    const int subCount = ctx.rank % 2 ? 2 : 3;
    expectShape(ctx, sub, subCount, ctx.rank / 2, "even/odd split");
    // Sum of (old rank + 1) over the color: evens 1+3+5 = 9, odds 2+4 = 6.
    checkSum(ctx, sub, ctx.rank + 1, ctx.rank % 2 ? 6 : 9, "AllReduce on the split");
    checkSum(ctx, ctx.comm, 1, ctx.nranks, "AllReduce on the parent after the split");
    ctx.ok(ncclCommDestroy(sub), "ncclCommDestroy(split)");
  }));
}

TEST(CommSplit, NoColorGivesNull) {
  EXPECT_RUN_OK(runRanks(kTier, 4, [](RankCtx& ctx) {
    const bool out = ctx.rank == 2;
    ncclComm_t sub = reinterpret_cast<ncclComm_t>(static_cast<uintptr_t>(0x5a5a5a));  // must be overwritten
    if (!ctx.ok(ncclCommSplit(ctx.comm, out ? NCCL_SPLIT_NOCOLOR : 7, ctx.rank, &sub, nullptr), "ncclCommSplit",
                ctx.comm))
      return;
    if (out) {
      if (sub != nullptr) ctx.fail("ncclCommSplit with NCCL_SPLIT_NOCOLOR must set *newcomm to NULL");
      return;
    }
    expectShape(ctx, sub, 3, ctx.rank < 2 ? ctx.rank : ctx.rank - 1, "split without rank 2");
    checkSum(ctx, sub, ctx.rank, 0 + 1 + 3, "AllReduce on the split");
    ctx.ok(ncclCommDestroy(sub), "ncclCommDestroy(split)");
  }));
}

TEST(CommSplit, KeysOrderRanks) {
  EXPECT_RUN_OK(runRanks(kTier, 4, [](RankCtx& ctx) {
    ncclComm_t sub = nullptr;
    if (!ctx.ok(ncclCommSplit(ctx.comm, 0, 100 - ctx.rank, &sub, nullptr), "ncclCommSplit(reverse keys)", ctx.comm))
      return;
    const int n = ctx.nranks;
    expectShape(ctx, sub, n, n - 1 - ctx.rank, "split with reversed keys");
    // The gathered old ranks come back in the new order: n-1, ..., 0.
    int32_t mine = ctx.rank;
    std::vector<int32_t> all(n, -1);
    if (ctx.ok(ncclAllGather(&mine, all.data(), 1, ncclInt32, sub, nullptr), "ncclAllGather on the split", sub)) {
      for (int i = 0; i < n; ++i)
        if (all[i] != n - 1 - i) ctx.failf("new rank %d holds old rank %d, expected %d", i, all[i], n - 1 - i);
    }
    ctx.ok(ncclCommDestroy(sub), "ncclCommDestroy(split)");
  }));
}

TEST(CommSplit, SplitOfASplit) {
  const int n = kTier == Mode::kProcs ? 4 : 8;
  EXPECT_RUN_OK(runRanks(kTier, n, [](RankCtx& ctx) {
    ncclComm_t half = nullptr, quarter = nullptr;
    if (!ctx.ok(ncclCommSplit(ctx.comm, ctx.rank % 2, ctx.rank, &half, nullptr), "ncclCommSplit (first)", ctx.comm))
      return;
    int halfRank = -1;
    ctx.ok(ncclCommUserRank(half, &halfRank), "ncclCommUserRank", half);
    if (ctx.ok(ncclCommSplit(half, halfRank % 2, halfRank, &quarter, nullptr), "ncclCommSplit (second)", half)) {
      // Old ranks with the same value mod 4 end up together: {r, r+4, ...}.
      expectShape(ctx, quarter, ctx.nranks / 4, ctx.rank / 4, "split of a split");
      int64_t want = 0;
      for (int r = ctx.rank % 4; r < ctx.nranks; r += 4) want += r;
      checkSum(ctx, quarter, ctx.rank, want, "AllReduce on the split of a split");
      ctx.ok(ncclCommDestroy(quarter), "ncclCommDestroy(quarter)");
    }
    ctx.ok(ncclCommDestroy(half), "ncclCommDestroy(half)");
  }));
}

TEST(CommShrink, ExcludedRankDoesNotCall) {
  EXPECT_RUN_OK(runRanks(kTier, 4, [](RankCtx& ctx) {
    const int excluded = 1;
    if (ctx.rank == excluded) return;  // leaves; the harness destroys its parent communicator
    int exclude[1] = {excluded};
    ncclComm_t shrunk = nullptr;
    if (!ctx.ok(ncclCommShrink(ctx.comm, exclude, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT), "ncclCommShrink",
                ctx.comm))
      return;
    expectShape(ctx, shrunk, 3, ctx.rank < excluded ? ctx.rank : ctx.rank - 1, "shrunk communicator");
    checkSum(ctx, shrunk, ctx.rank, 0 + 2 + 3, "AllReduce on the shrunk communicator");
    ctx.ok(ncclCommDestroy(shrunk), "ncclCommDestroy(shrunk)");
  }));
}

TEST(CommInit, NonBlockingConfig) {
  RunOptions opts;
  opts.initComm = false;
  EXPECT_RUN_OK(runRanks(
      kTier, 3,
      [](RankCtx& ctx) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        const ncclResult_t r = ncclCommInitRankConfig(&ctx.comm, ctx.nranks, ctx.id, ctx.rank, &config);
        if (r != ncclSuccess && r != ncclInProgress) {
          ctx.expect(r, ncclInProgress, "ncclCommInitRankConfig(blocking=0)");
          ctx.comm = nullptr;
          return;
        }
        if (!ctx.ok(waitNotInProgress(ctx.comm, 30000), "ncclCommGetAsyncError after a non-blocking init", ctx.comm))
          return;
        std::vector<float> v(1000, 1.0f);
        const ncclResult_t ar = ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr);
        if (ar != ncclSuccess && ar != ncclInProgress)
          return (void)ctx.ok(ar, "ncclAllReduce (non-blocking comm)", ctx.comm);
        if (!ctx.ok(waitNotInProgress(ctx.comm, 30000), "ncclCommGetAsyncError after AllReduce", ctx.comm)) return;
        if (v[0] != 3.0f || v[999] != 3.0f)
          ctx.failf("AllReduce on a non-blocking communicator gave %g, expected 3", v[0]);
      },
      opts));
}

// A non-blocking communicator through a group, a non-blocking split and a finalize: every call
// may return ncclInProgress, and then ncclCommGetAsyncError tells when it is done.
TEST(CommInit, NonBlockingGroupSplitFinalize) {
  RunOptions opts;
  opts.initComm = false;
  EXPECT_RUN_OK(runRanks(
      kTier, 4,
      [](RankCtx& ctx) {
        auto accept = [&](ncclResult_t r, ncclComm_t comm, const char* what) {
          if (r != ncclSuccess && r != ncclInProgress) return ctx.ok(r, what, comm);
          return ctx.ok(waitNotInProgress(comm, 30000), what, comm);
        };
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        config.commName = "weft-nonblocking-test";
        const ncclResult_t init = ncclCommInitRankConfig(&ctx.comm, ctx.nranks, ctx.id, ctx.rank, &config);
        if (init != ncclSuccess && init != ncclInProgress) {
          ctx.ok(init, "ncclCommInitRankConfig(blocking=0)");
          ctx.comm = nullptr;
          return;
        }
        if (!accept(ncclSuccess, ctx.comm, "non-blocking init")) return;
        std::vector<double> a(5000, ctx.rank + 1.0), b(5000, 0.0);
        ctx.ok(ncclGroupStart(), "ncclGroupStart");
        ncclResult_t r1 = ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat64, ncclSum, ctx.comm, nullptr);
        if (r1 != ncclSuccess && r1 != ncclInProgress) ctx.ok(r1, "ncclAllReduce in a group (non-blocking)", ctx.comm);
        if (!accept(ncclGroupEnd(), ctx.comm, "ncclGroupEnd (non-blocking)")) return;
        if (b[0] != 10.0 || b[4999] != 10.0)
          ctx.failf("AllReduce on the non-blocking communicator gave %g, expected 10", b[0]);
        ncclComm_t sub = nullptr;
        if (!accept(ncclCommSplit(ctx.comm, ctx.rank / 2, ctx.rank, &sub, &config), ctx.comm,
                    "ncclCommSplit (non-blocking)"))
          return;
        if (sub == nullptr) return ctx.fail("the non-blocking split gave no communicator");
        if (!accept(ncclSuccess, sub, "the split communicator becoming ready")) return;
        std::vector<int32_t> v(100, ctx.rank);
        if (accept(ncclAllReduce(v.data(), v.data(), v.size(), ncclInt32, ncclSum, sub, nullptr), sub,
                   "AllReduce on the split") &&
            v[99] != (ctx.rank < 2 ? 1 : 5))
          ctx.failf("AllReduce on the non-blocking split gave %d", v[99]);
        accept(ncclCommFinalize(sub), sub, "ncclCommFinalize (split)");
        ctx.ok(ncclCommDestroy(sub), "ncclCommDestroy (split)");
        accept(ncclCommFinalize(ctx.comm), ctx.comm, "ncclCommFinalize");
        ctx.ok(ncclCommDestroy(ctx.comm), "ncclCommDestroy");
        ctx.comm = nullptr;
      },
      opts));
}

TEST(CommInit, ScalableWithOneId) {
  RunOptions opts;
  opts.initComm = false;
  EXPECT_RUN_OK(runRanks(
      kTier, 3,
      [](RankCtx& ctx) {
        ncclUniqueId ids[1] = {ctx.id};
        if (!ctx.ok(ncclCommInitRankScalable(&ctx.comm, ctx.nranks, ctx.rank, 1, ids, nullptr),
                    "ncclCommInitRankScalable")) {
          ctx.comm = nullptr;
          return;
        }
        expectShape(ctx, ctx.comm, ctx.nranks, ctx.rank, "scalable init");
        checkSum(ctx, ctx.comm, 2, 2 * ctx.nranks, "AllReduce after scalable init");
      },
      opts));
}

TEST(CommLifecycle, FinalizeThenDestroy) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    checkSum(ctx, ctx.comm, 1, ctx.nranks, "AllReduce before finalize");
    const ncclResult_t f = ncclCommFinalize(ctx.comm);
    if (f != ncclSuccess && f != ncclInProgress) ctx.expect(f, ncclSuccess, "ncclCommFinalize", ctx.comm);
    ctx.ok(waitNotInProgress(ctx.comm, 30000), "ncclCommGetAsyncError after finalize", ctx.comm);
    ctx.ok(ncclCommDestroy(ctx.comm), "ncclCommDestroy after finalize");
    ctx.comm = nullptr;
  }));
}

TEST(CommLifecycle, AbortReturnsPromptly) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    checkSum(ctx, ctx.comm, 1, ctx.nranks, "AllReduce before abort");
    const double t0 = nowSeconds();
    ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort");
    ctx.comm = nullptr;
    if (nowSeconds() - t0 > 5) ctx.failf("ncclCommAbort took %.1f s", nowSeconds() - t0);
  }));
}

// A watchdog (PyTorch's, for one) may abort a communicator whose first call is still connecting
// its links. Each round splits a fresh communicator off the whole, starts its first AllReduce, and
// aborts it from another thread a little later each round, so that the abort lands before, during
// and after the links connect. The call must end soon after the abort, the abort must succeed, and
// the parent must be unharmed. Under ThreadSanitizer (and in the net variant, over sockets) this is
// where a link published without a lock shows up as a race.
TEST(CommSplit, AbortFromAnotherThreadWhileTheFirstCallConnects) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    for (int round = 0; round < 6; ++round) {
      ncclComm_t comm = nullptr;
      if (!ctx.ok(ncclCommSplit(ctx.comm, 0, ctx.rank, &comm, nullptr), "ncclCommSplit", ctx.comm)) return;
      std::vector<float> buf(1 << 14, 1.0f);
      std::atomic<bool> returned{false};
      double abortAt = 0;
      ncclResult_t aborted = ncclInternalError;
      std::thread watchdog([&, round] {
        // Abort only once the call runs (or has returned): an abort that frees the communicator
        // before the call starts would leave the call a dangling handle, which no watchdog does.
        char dump[1024];
        while (!returned.load() &&
               (weftCommDumpState(comm, dump, sizeof dump) != ncclSuccess || strstr(dump, " running 0 ") != nullptr))
          std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::microseconds(300 * round));
        abortAt = nowSeconds();
        aborted = ncclCommAbort(comm);
      });
      ctx.step("the first AllReduce of split communicator " + std::to_string(round) + ", aborted by a watchdog");
      // Success or an error are both right, depending on when the abort lands.
      (void)ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
      const double returnedAt = nowSeconds();
      returned.store(true);
      watchdog.join();
      ctx.ok(aborted, "ncclCommAbort from a watchdog thread");
      if (returnedAt - abortAt > 5)
        ctx.failf("round %d: the AllReduce returned %.1f s after the abort", round, returnedAt - abortAt);
    }
    checkSum(ctx, ctx.comm, 1, ctx.nranks, "AllReduce on the parent after its splits were aborted");
  }));
}

TEST(CommLifecycle, RevokeThenDestroy) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    checkSum(ctx, ctx.comm, 1, ctx.nranks, "AllReduce before revoke");
    const ncclResult_t r = ncclCommRevoke(ctx.comm, NCCL_REVOKE_DEFAULT);
    if (r != ncclSuccess && r != ncclInProgress) ctx.expect(r, ncclSuccess, "ncclCommRevoke(comm, 0)", ctx.comm);
    ctx.ok(waitNotInProgress(ctx.comm, 30000), "ncclCommGetAsyncError after revoke", ctx.comm);
    ctx.ok(ncclCommDestroy(ctx.comm), "ncclCommDestroy after revoke");
    ctx.comm = nullptr;
  }));
}

TEST(CommQueries, CountRankDeviceHostMode) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    expectShape(ctx, ctx.comm, ctx.nranks, ctx.rank, "ncclCommInitRank");
    int dev = -12345;
    ctx.ok(ncclCommCuDevice(ctx.comm, &dev), "ncclCommCuDevice", ctx.comm);
    if (dev == -12345) ctx.fail("ncclCommCuDevice returned success without writing the device");
    int host = -1;
    ctx.ok(weftCommIsHostMode(ctx.comm, &host), "weftCommIsHostMode", ctx.comm);
    if (host != 1) ctx.failf("weftCommIsHostMode gave %d, expected 1 with WEFT_DEVICE=host", host);
    ncclResult_t async = ncclInternalError;
    ctx.ok(ncclCommGetAsyncError(ctx.comm, &async), "ncclCommGetAsyncError", ctx.comm);
    ctx.expect(async, ncclSuccess, "the async error state of a healthy communicator", ctx.comm);
  }));
}

// Buffers from ncclMemAlloc, registered (ncclCommRegister) and as windows (ncclCommWindowRegister):
// collectives on them give the same results.
TEST(CommRegister, CollectivesOnRegisteredBuffers) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    const size_t count = 300000, bytes = count * sizeof(float);
    void* in = nullptr;
    void* out = nullptr;
    if (!ctx.ok(ncclMemAlloc(&in, bytes), "ncclMemAlloc") || !ctx.ok(ncclMemAlloc(&out, bytes), "ncclMemAlloc")) return;
    if (reinterpret_cast<uintptr_t>(in) % NCCL_WIN_REQUIRED_ALIGNMENT ||
        reinterpret_cast<uintptr_t>(out) % NCCL_WIN_REQUIRED_ALIGNMENT)
      ctx.fail("ncclMemAlloc returned memory not aligned to NCCL_WIN_REQUIRED_ALIGNMENT");
    auto* fin = static_cast<float*>(in);
    auto* fout = static_cast<float*>(out);
    auto run = [&](const char* what, float base) {
      for (size_t i = 0; i < count; ++i) fin[i] = base + ctx.rank + static_cast<float>(i % 7);
      memset(out, 0, bytes);
      if (!ctx.ok(ncclAllReduce(in, out, count, ncclFloat32, ncclSum, ctx.comm, nullptr), what, ctx.comm)) return;
      for (size_t i = 0; i < count; ++i) {
        const float want = 3 * (base + static_cast<float>(i % 7)) + 3;  // ranks 0+1+2
        if (fout[i] != want) return ctx.failf("%s: element %zu is %g, expected %g", what, i, fout[i], want);
      }
    };
    void* hin = nullptr;
    void* hout = nullptr;
    if (ctx.ok(ncclCommRegister(ctx.comm, in, bytes, &hin), "ncclCommRegister", ctx.comm) &&
        ctx.ok(ncclCommRegister(ctx.comm, out, bytes, &hout), "ncclCommRegister", ctx.comm)) {
      run("AllReduce on registered buffers", 1.0f);
      ctx.ok(ncclCommDeregister(ctx.comm, hin), "ncclCommDeregister", ctx.comm);
      ctx.ok(ncclCommDeregister(ctx.comm, hout), "ncclCommDeregister", ctx.comm);
    }
    for (int flags : {NCCL_WIN_DEFAULT, NCCL_WIN_COLL_SYMMETRIC}) {
      ncclWindow_t win = nullptr;
      ncclWindow_t wout = nullptr;
      if (ctx.ok(ncclCommWindowRegister(ctx.comm, in, bytes, &win, flags), "ncclCommWindowRegister", ctx.comm) &&
          ctx.ok(ncclCommWindowRegister(ctx.comm, out, bytes, &wout, flags), "ncclCommWindowRegister", ctx.comm)) {
        run(flags ? "AllReduce on symmetric windows" : "AllReduce on windows", 2.0f);
        ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
        ctx.ok(ncclCommWindowDeregister(ctx.comm, wout), "ncclCommWindowDeregister", ctx.comm);
      }
    }
    run("AllReduce after deregistration", 3.0f);
    // Ordinary host memory (not from ncclMemAlloc) registers too.
    std::vector<int32_t> plain(4099, ctx.rank + 1);
    void* hplain = nullptr;
    if (ctx.ok(ncclCommRegister(ctx.comm, plain.data(), plain.size() * sizeof(int32_t), &hplain),
               "ncclCommRegister(plain host buffer)", ctx.comm)) {
      if (ctx.ok(ncclAllReduce(plain.data(), plain.data(), plain.size(), ncclInt32, ncclSum, ctx.comm, nullptr),
                 "AllReduce in place on a registered plain buffer", ctx.comm) &&
          plain[4098] != 6)
        ctx.failf("AllReduce on a registered plain buffer gave %d, expected 6", plain[4098]);
      ctx.ok(ncclCommDeregister(ctx.comm, hplain), "ncclCommDeregister(plain host buffer)", ctx.comm);
    }
    ctx.ok(ncclMemFree(in), "ncclMemFree");
    ctx.ok(ncclMemFree(out), "ncclMemFree");
  }));
}

}  // namespace
}  // namespace weft_test
