// One-sided operations on windows (ncclPutSignal, ncclSignal, ncclWaitSignal) in host mode: in
// the threads binary the ranks share a process (puts are memory copies), in the procs binary they
// are processes (puts go through cross-memory attach).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

int32_t valueOf(int round, int from, size_t i) { return round * 1000000 + from * 10000 + static_cast<int32_t>(i); }

ncclWindow_t registerWindow(RankCtx& ctx, void* buf, size_t bytes) {
  ncclWindow_t win = nullptr;
  if (!ctx.ok(ncclCommWindowRegister(ctx.comm, buf, bytes, &win, NCCL_WIN_DEFAULT), "ncclCommWindowRegister", ctx.comm))
    return nullptr;
  return win;
}

// Every rank puts a block into every rank's window (its own included) and signals it, then waits
// for one signal from each and checks what landed. Then it signals every rank that its window is
// free again, and a rank starts the next round's puts only once all have said so, so that no put
// overwrites a block its owner has not checked yet. (Signals from one rank arrive in order and
// only count: each round consumes one "data" and, after the first, one "free" from every rank.)
TEST(OneSided, PutSignalWaitBetweenEveryPair) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    const int n = ctx.nranks;
    const size_t per = 1001;
    std::vector<int32_t> window(n * per, -1);
    ncclWindow_t win = registerWindow(ctx, window.data(), window.size() * sizeof(int32_t));
    if (win == nullptr) return;
    std::vector<ncclWaitSignalDesc_t> descs;
    for (int peer = 0; peer < n; ++peer) descs.push_back({1, peer, 0, 0});
    for (int round = 0; round < 3; ++round) {
      if (round > 0 && !ctx.ok(ncclWaitSignal(n, descs.data(), ctx.comm, nullptr), "ncclWaitSignal (free)", ctx.comm))
        return;
      std::vector<int32_t> mine(per);
      for (size_t i = 0; i < per; ++i) mine[i] = valueOf(round, ctx.rank, i);
      for (int peer = 0; peer < n; ++peer)
        if (!ctx.ok(ncclPutSignal(mine.data(), per, ncclInt32, peer, win, ctx.rank * per * sizeof(int32_t), 0, 0, 0,
                                  ctx.comm, nullptr),
                    "ncclPutSignal", ctx.comm))
          return;
      if (!ctx.ok(ncclWaitSignal(n, descs.data(), ctx.comm, nullptr), "ncclWaitSignal (data)", ctx.comm)) return;
      for (int from = 0; from < n; ++from)
        for (size_t i = 0; i < per; ++i)
          if (window[from * per + i] != valueOf(round, from, i))
            return ctx.failf("round %d: element %zu from rank %d is %d, expected %d", round, i, from,
                             window[from * per + i], valueOf(round, from, i));
      for (int peer = 0; peer < n; ++peer)
        if (!ctx.ok(ncclSignal(peer, 0, 0, 0, ctx.comm, nullptr), "ncclSignal (free)", ctx.comm)) return;
    }
    checkSum(ctx, ctx.comm, 1, n, "AllReduce after the rounds");
    ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
  }));
}

// A put of 3 MiB and 5 bytes at offset 3 lands exactly there: the bytes around it stay untouched.
TEST(OneSided, PutOfOddSizeAtOddOffset) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    const size_t len = (3u << 20) + 5, offset = 3;
    std::vector<uint8_t> window(len + 16, 0xEE);
    ncclWindow_t win = registerWindow(ctx, window.data(), window.size());
    if (win == nullptr) return;
    std::vector<uint8_t> mine(len);
    for (size_t i = 0; i < len; ++i) mine[i] = static_cast<uint8_t>(i * 7 + ctx.rank);
    const int peer = 1 - ctx.rank;
    ncclWaitSignalDesc_t desc = {1, peer, 0, 0};
    if (!ctx.ok(ncclPutSignal(mine.data(), len, ncclUint8, peer, win, offset, 0, 0, 0, ctx.comm, nullptr),
                "ncclPutSignal", ctx.comm) ||
        !ctx.ok(ncclWaitSignal(1, &desc, ctx.comm, nullptr), "ncclWaitSignal", ctx.comm))
      return;
    for (size_t i = 0; i < window.size(); ++i) {
      const bool inside = i >= offset && i < offset + len;
      const uint8_t want = inside ? static_cast<uint8_t>((i - offset) * 7 + peer) : 0xEE;
      if (window[i] != want) return ctx.failf("byte %zu is 0x%02x, expected 0x%02x", i, window[i], want);
    }
    checkSum(ctx, ctx.comm, 1, 2, "AllReduce before deregistering");
    ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
  }));
}

// One-sided calls need a registered window first. Signals count: three from rank 0 satisfy
// descriptors asking for two and one. Inside a group the puts run before the waits, so two ranks
// that each wait and put in one group do not wait on each other, whatever order they issued the
// calls in; a window registered inside a group is usable after ncclGroupEnd.
TEST(OneSided, SignalsAddUpAndGroupsPutBeforeWaiting) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    const int peer = 1 - ctx.rank;
    ctx.expect(ncclSignal(peer, 0, 0, 0, ctx.comm, nullptr), ncclInvalidUsage, "ncclSignal before any window");
    if (!mentionsAny(lastError(ctx.comm), {"ncclCommWindowRegister"}))
      ctx.failf("the refusal of a signal before any window does not say why: %s", lastError(ctx.comm).c_str());
    std::vector<double> window(64, 0.0), mine(64, 1.5 + ctx.rank);
    ncclWindow_t win = nullptr;
    ctx.ok(ncclGroupStart(), "ncclGroupStart");
    ctx.ok(ncclCommWindowRegister(ctx.comm, window.data(), window.size() * sizeof(double), &win, NCCL_WIN_DEFAULT),
           "ncclCommWindowRegister in a group", ctx.comm);
    if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd after the registration", ctx.comm)) return;
    if (ctx.rank == 0) {
      for (int i = 0; i < 3; ++i)
        if (!ctx.ok(ncclSignal(1, 0, 0, 0, ctx.comm, nullptr), "ncclSignal", ctx.comm)) return;
    } else {
      ncclWaitSignalDesc_t descs[2] = {{2, 0, 0, 0}, {1, 0, 0, 0}};
      if (!ctx.ok(ncclWaitSignal(2, descs, ctx.comm, nullptr), "ncclWaitSignal for 2 + 1 signals", ctx.comm)) return;
    }
    ncclWaitSignalDesc_t desc = {1, peer, 0, 0};
    ctx.ok(ncclGroupStart(), "ncclGroupStart");
    ctx.ok(ncclWaitSignal(1, &desc, ctx.comm, nullptr), "ncclWaitSignal in a group", ctx.comm);
    ctx.ok(ncclPutSignal(mine.data(), mine.size(), ncclFloat64, peer, win, 0, 0, 0, 0, ctx.comm, nullptr),
           "ncclPutSignal in a group", ctx.comm);
    if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd of a wait and a put", ctx.comm)) return;
    for (size_t i = 0; i < window.size(); ++i)
      if (window[i] != 1.5 + peer) return ctx.failf("element %zu is %g, expected %g", i, window[i], 1.5 + peer);
    checkSum(ctx, ctx.comm, 1, 2, "AllReduce after the one-sided calls");
    ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
  }));
}

// The target takes no part in a put: while it sits outside Weft (here, reading its own memory),
// the data arrives, written by the origin (same host) or by the target's network proxy.
TEST(OneSided, PutsLandWhileTheTargetIsOutsideWeft) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "reads the window without synchronizing on purpose, which ThreadSanitizer reports";
#endif
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    const size_t n = 300000;  // over a megabyte: several network messages
    std::vector<int64_t> window(n, 0);
    ncclWindow_t win = registerWindow(ctx, window.data(), n * sizeof(int64_t));
    if (win == nullptr) return;
    if (ctx.rank == 0) {
      std::vector<int64_t> mine(n);
      for (size_t i = 0; i < n; ++i) mine[i] = static_cast<int64_t>(i) * 3 + 1;
      ctx.ok(ncclPutSignal(mine.data(), n, ncclInt64, 1, win, 0, 0, 0, 0, ctx.comm, nullptr), "ncclPutSignal",
             ctx.comm);
    } else {
      const double deadline = nowSeconds() + 20;
      while (__atomic_load_n(&window[n - 1], __ATOMIC_ACQUIRE) == 0)
        if (nowSeconds() > deadline) return ctx.failf("the put's last element never arrived without a Weft call");
      ncclWaitSignalDesc_t desc = {1, 0, 0, 0};
      if (!ctx.ok(ncclWaitSignal(1, &desc, ctx.comm, nullptr), "ncclWaitSignal", ctx.comm)) return;
      for (size_t i = 0; i < n; ++i)
        if (window[i] != static_cast<int64_t>(i) * 3 + 1)
          return ctx.failf("element %zu is %lld", i, static_cast<long long>(window[i]));
    }
    checkSum(ctx, ctx.comm, 1, 2, "AllReduce after the put");
    ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
  }));
}

// Over the network the target's proxy writes each put: one into a window its owner already
// deregistered is dropped, and the owner's next wait says so instead of returning as if the bytes
// had arrived. (Between ranks of one host the origin writes the memory itself, which is still
// there, so nothing can be noticed: this runs under NCCL_SHM_DISABLE=1 only.)
TEST(OneSided, PutIntoADeregisteredWindowFailsTheWait) {
  const char* shmOff = getenv("NCCL_SHM_DISABLE");
  if (shmOff == nullptr || std::string(shmOff) != "1") GTEST_SKIP() << "runs over the network (NCCL_SHM_DISABLE=1)";
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    std::vector<float> keep(16), gone(16);
    ncclWindow_t kept = registerWindow(ctx, keep.data(), keep.size() * sizeof(float));
    ncclWindow_t win = registerWindow(ctx, gone.data(), gone.size() * sizeof(float));
    if (kept == nullptr || win == nullptr) return;
    if (ctx.rank == 1) ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
    checkSum(ctx, ctx.comm, 1, 2, "AllReduce once rank 1 deregistered");
    if (ctx.rank == 0) {
      std::vector<float> mine(16, 2.0f);
      ctx.ok(ncclPutSignal(mine.data(), mine.size(), ncclFloat32, 1, win, 0, 0, 0, 0, ctx.comm, nullptr),
             "ncclPutSignal into rank 1's deregistered window", ctx.comm);
      ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
    } else {
      ncclWaitSignalDesc_t desc = {1, 0, 0, 0};
      ctx.expect(ncclWaitSignal(1, &desc, ctx.comm, nullptr), ncclInvalidUsage, "ncclWaitSignal for the dropped put");
      if (!mentionsAny(lastError(ctx.comm), {"dropped"}))
        ctx.failf("the wait does not say the put was dropped: %s", lastError(ctx.comm).c_str());
    }
    checkSum(ctx, ctx.comm, 1, 2, "AllReduce afterwards");
    ctx.ok(ncclCommWindowDeregister(ctx.comm, kept), "ncclCommWindowDeregister", ctx.comm);
  }));
}

TEST(OneSided, BadCallsAreRefused) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    std::vector<float> buf(1024, 1.0f);
    ncclWindow_t win = registerWindow(ctx, buf.data(), buf.size() * sizeof(float));
    if (win == nullptr) return;
    const int peer = 1 - ctx.rank;
    ctx.expect(ncclPutSignal(buf.data(), 4, ncclFloat32, 7, win, 0, 0, 0, 0, ctx.comm, nullptr), ncclInvalidArgument,
               "ncclPutSignal to rank 7 of 2");
    ctx.expect(ncclPutSignal(buf.data(), 4, ncclFloat32, peer, win, 0, 1, 0, 0, ctx.comm, nullptr), ncclInvalidArgument,
               "ncclPutSignal with sigIdx 1");
    ctx.expect(ncclPutSignal(buf.data(), 4, ncclFloat32, peer, nullptr, 0, 0, 0, 0, ctx.comm, nullptr),
               ncclInvalidArgument, "ncclPutSignal with no window");
    ctx.expect(ncclPutSignal(buf.data(), 4, ncclFloat32, peer, win, 4090, 0, 0, 0, ctx.comm, nullptr),
               ncclInvalidArgument, "ncclPutSignal past the window's end");
    if (!mentionsAny(lastError(ctx.comm), {"do not fit"}))
      ctx.failf("the refusal of a put past the window's end does not say why: %s", lastError(ctx.comm).c_str());
    ctx.expect(ncclSignal(peer, 0, 0, 1, ctx.comm, nullptr), ncclInvalidArgument, "ncclSignal with flags 1");
    ctx.expect(ncclSignal(peer, 0, 2, 0, ctx.comm, nullptr), ncclInvalidArgument, "ncclSignal with ctx 2");
    ncclWaitSignalDesc_t bad = {0, peer, 0, 0};
    ctx.expect(ncclWaitSignal(1, &bad, ctx.comm, nullptr), ncclInvalidArgument, "ncclWaitSignal with opCnt 0");
    ctx.expect(ncclWaitSignal(0, &bad, ctx.comm, nullptr), ncclInvalidArgument, "ncclWaitSignal with no descriptor");
    checkSum(ctx, ctx.comm, 3, 6, "AllReduce after the refused one-sided calls");
    ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
  }));
}

// A wait for a signal that never comes ends at WEFT_TIMEOUT_MS with ncclRemoteError naming the
// peer and the count; the communicator stays usable.
TEST(OneSided, WaitForAMissingSignalTimesOutNamingThePeer) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "1500");
  SharedCounter waited;
  EXPECT_RUN_OK(runRanks(kTier, 2, [&waited](RankCtx& ctx) {
    std::vector<char> buf(64);
    ncclWindow_t win = registerWindow(ctx, buf.data(), buf.size());
    if (win == nullptr) return;
    if (ctx.rank == 1) {
      ncclWaitSignalDesc_t desc = {2, 0, 0, 0};
      const double t0 = nowSeconds();
      ctx.expect(ncclWaitSignal(1, &desc, ctx.comm, nullptr), ncclRemoteError, "ncclWaitSignal nobody answers");
      const std::string msg = lastError(ctx.comm);
      if (!namesRank(msg, 0) || msg.find("0 of 2") == std::string::npos ||
          msg.find("WEFT_TIMEOUT_MS") == std::string::npos)
        ctx.failf("the timeout does not name rank 0, the count and the limit: %s", msg.c_str());
      if (nowSeconds() - t0 > 10) ctx.failf("the wait took %.1f s with WEFT_TIMEOUT_MS=1500", nowSeconds() - t0);
      waited.add();
    } else if (!waited.waitFor(1, 30)) {
      return ctx.failf("rank 1's wait never ended");
    }
    checkSum(ctx, ctx.comm, 1, 2, "AllReduce after the timed-out wait");
    ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
  }));
}

// A rank whose peer dies while it waits for that peer's signal learns so within the liveness
// period, not at the timeout. Processes only: a thread cannot be killed alone.
TEST(OneSided, PeerKilledWhileWaitedFor) {
  if (kTier != Mode::kProcs) GTEST_SKIP() << "kills a rank's process";
  RunOptions opts;
  opts.expectKilled = {0};
  opts.deadlineMs = 30000;
  EXPECT_RUN_OK(runRanks(
      kTier, 2,
      [](RankCtx& ctx) {
        std::vector<char> buf(64);
        if (registerWindow(ctx, buf.data(), buf.size()) == nullptr) return;
        if (ctx.rank == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          kill(getpid(), SIGKILL);
          return;
        }
        ncclWaitSignalDesc_t desc = {1, 0, 0, 0};
        const double t0 = nowSeconds();
        ctx.step("ncclWaitSignal for rank 0, which dies");
        ctx.expect(ncclWaitSignal(1, &desc, ctx.comm, nullptr), ncclRemoteError, "ncclWaitSignal for a dead rank");
        if (!namesRank(lastError(ctx.comm), 0))
          ctx.failf("the failure does not name rank 0: %s", lastError(ctx.comm).c_str());
        if (nowSeconds() - t0 > 10) ctx.failf("the dead rank was noticed after %.1f s", nowSeconds() - t0);
        ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort");
        ctx.comm = nullptr;
      },
      opts));
}

}  // namespace
}  // namespace weft_test
