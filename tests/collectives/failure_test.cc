// Failures between processes: a peer that never arrives at init, a peer killed (SIGKILL) in the
// middle of a large AllReduce. Survivors must get an error naming the rank within a bounded time
// and be able to abort; and nothing named "weft" may be left behind in /dev/shm, nor a
// shared-memory socket (@weft-shm...) stay bound.
//
// Weft reads WEFT_TIMEOUT_MS once per process; ctest runs every test in a process of its own, so
// each test sets it first thing.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// 3 ranks expected, rank 2 never starts: the others' init fails within a few seconds, naming rank 2.
RunReport peerNeverArrives(double timeoutSec) {
  RunOptions opts;
  opts.initComm = false;
  opts.absent = {2};
  opts.deadlineMs = 60000;
  return runRanks(
      Mode::kProcs, 3,
      [timeoutSec](RankCtx& ctx) {
        ctx.step("ncclCommInitRank without rank 2");
        const double t0 = nowSeconds();
        const ncclResult_t r = ncclCommInitRank(&ctx.comm, ctx.nranks, ctx.id, ctx.rank);
        const double took = nowSeconds() - t0;
        if (r == ncclSuccess || r == ncclInProgress) {
          ctx.failf("ncclCommInitRank returned %s although rank 2 never arrived", ncclGetErrorString(r));
          if (r == ncclSuccess) return;  // the harness destroys it
        }
        ctx.comm = nullptr;
        if (took > timeoutSec + 6)
          ctx.failf("init took %.1f s to give up; WEFT_TIMEOUT_MS allows %.1f s", took, timeoutSec);
        const std::string msg = lastError(nullptr);
        if (!namesRank(msg, 2)) ctx.failf("ncclGetLastError does not name the missing rank 2: \"%s\"", msg.c_str());
      },
      opts);
}

// Rank 2 SIGKILLs itself 300 ms into a loop of 32 MiB AllReduces. Survivors must fail with
// ncclRemoteError or ncclSystemError naming rank 2, well within boundSec, then abort promptly.
RunReport peerKilledInAllReduce(double boundSec) {
  constexpr int victim = 2;  // a constant: the lambdas below use it without capturing it
  RunOptions opts;
  opts.expectKilled = {victim};
  opts.deadlineMs = 90000;
  return runRanks(
      Mode::kProcs, 3,
      [boundSec](RankCtx& ctx) {
        const size_t count = size_t{8} << 20;
        std::vector<float> in(count, 1.0f), out(count, 0.0f);
        if (!ctx.ok(ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, ctx.comm, nullptr),
                    "warm-up AllReduce", ctx.comm))
          return;
        if (ctx.rank == victim) {
          std::thread([] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            kill(getpid(), SIGKILL);
          }).detach();
          for (;;) ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, ctx.comm, nullptr);
        }
        ctx.step("AllReduce loop until the dead peer is noticed");
        const double t0 = nowSeconds();
        ncclResult_t r = ncclSuccess;
        int rounds = 0;
        while (r == ncclSuccess && nowSeconds() - t0 < 60) {
          r = ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, ctx.comm, nullptr);
          ++rounds;
        }
        const double took = nowSeconds() - t0;
        if (r != ncclRemoteError && r != ncclSystemError)
          ctx.failf("after %d AllReduces (%.1f s) the call returned %s; expected ncclRemoteError or ncclSystemError",
                    rounds, took, ncclGetErrorString(r));
        if (took > boundSec)
          ctx.failf("the error came %.1f s after the loop began; the bound is %.0f s", took, boundSec);
        const std::string msg = lastError(ctx.comm);
        if (!namesRank(msg, victim))
          ctx.failf("ncclGetLastError does not name the dead rank %d: \"%s\"", victim, msg.c_str());
        ncclResult_t async = ncclSuccess;
        if (ncclCommGetAsyncError(ctx.comm, &async) == ncclSuccess && async == ncclSuccess)
          ctx.fail("ncclCommGetAsyncError reports ncclSuccess on a communicator whose peer died");
        // Later calls are refused, each quoting the failure once (not the previous refusal, nested).
        for (int i = 0; i < 25; i++)
          if (ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, ctx.comm, nullptr) != ncclInvalidUsage)
            ctx.fail("an AllReduce on the failed communicator was not refused with ncclInvalidUsage");
        const std::string later = lastError(ctx.comm);
        size_t quoted = 0;
        for (size_t at = later.find("failed earlier"); at != std::string::npos;
             at = later.find("failed earlier", at + 1))
          ++quoted;
        if (quoted != 1 || !namesRank(later, victim))
          ctx.failf("after 25 refused calls the message should quote the failure once and name rank %d: \"%s\"", victim,
                    later.c_str());
        ctx.step("ncclCommAbort after the failure");
        const double a0 = nowSeconds();
        ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort after the failure");
        ctx.comm = nullptr;
        if (nowSeconds() - a0 > 5) ctx.failf("ncclCommAbort took %.1f s after the failure", nowSeconds() - a0);
      },
      opts);
}

// After a peer dies, the survivors shrink the communicator without it (NCCL_SHRINK_ABORT: the
// parent's in-flight work is abandoned) and carry on.
RunReport shrinkAfterPeerDeath() {
  constexpr int victim = 1;
  RunOptions opts;
  opts.expectKilled = {victim};
  opts.deadlineMs = 30000;
  return runRanks(
      Mode::kProcs, 4,
      [](RankCtx& ctx) {
        std::vector<float> buf(1 << 20, 1.0f);
        if (!ctx.ok(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, ctx.comm, nullptr),
                    "warm-up AllReduce", ctx.comm))
          return;
        if (ctx.rank == victim) kill(getpid(), SIGKILL);
        std::vector<float> v(1 << 20, 1.0f);
        ctx.step("AllReduce with the dead peer");
        const ncclResult_t r = ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr);
        if (r == ncclSuccess) ctx.fail("AllReduce with a dead peer returned ncclSuccess");
        int exclude[1] = {victim};
        ncclComm_t shrunk = nullptr;
        const double t0 = nowSeconds();
        ctx.step("ncclCommShrink(NCCL_SHRINK_ABORT)");
        if (!ctx.ok(ncclCommShrink(ctx.comm, exclude, 1, &shrunk, nullptr, NCCL_SHRINK_ABORT),
                    "ncclCommShrink(NCCL_SHRINK_ABORT) after the peer died", ctx.comm))
          return;
        if (nowSeconds() - t0 > 10) ctx.failf("ncclCommShrink took %.1f s", nowSeconds() - t0);
        int n = -1, me = -1;
        ctx.ok(ncclCommCount(shrunk, &n), "ncclCommCount", shrunk);
        ctx.ok(ncclCommUserRank(shrunk, &me), "ncclCommUserRank", shrunk);
        if (n != 3 || me != (ctx.rank < victim ? ctx.rank : ctx.rank - 1))
          ctx.failf("shrunk communicator: rank %d of %d", me, n);
        std::vector<int32_t> w(4096, ctx.rank);
        ctx.step("AllReduce on the shrunk communicator");
        if (ctx.ok(ncclAllReduce(w.data(), w.data(), w.size(), ncclInt32, ncclSum, shrunk, nullptr),
                   "AllReduce on the shrunk communicator", shrunk) &&
            w[4095] != 0 + 2 + 3)
          ctx.failf("AllReduce on the shrunk communicator gave %d, expected 5", w[4095]);
        ctx.step("ncclCommDestroy(shrunk) and ncclCommAbort(parent)");
        ctx.ok(ncclCommDestroy(shrunk), "ncclCommDestroy(shrunk)");
        ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort(parent)");
        ctx.comm = nullptr;
      },
      opts);
}

// A healthy run through the usual paths, for the /dev/shm check.
RunReport healthyRun() {
  return runRanks(Mode::kProcs, 3, [](RankCtx& ctx) {
    std::vector<float> v(1 << 20, 1.0f), w(3 << 20, 0.0f);
    ctx.ok(ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr), "ncclAllReduce",
           ctx.comm);
    ctx.ok(ncclAlltoAll(w.data(), w.data() + (1 << 20), 1 << 18, ncclFloat32, ctx.comm, nullptr), "ncclAlltoAll",
           ctx.comm);
    ctx.ok(ncclGroupStart(), "ncclGroupStart");
    ctx.ok(ncclSend(v.data(), 1000, ncclFloat32, (ctx.rank + 1) % 3, ctx.comm, nullptr), "ncclSend", ctx.comm);
    ctx.ok(ncclRecv(w.data(), 1000, ncclFloat32, (ctx.rank + 2) % 3, ctx.comm, nullptr), "ncclRecv", ctx.comm);
    ctx.ok(ncclGroupEnd(), "ncclGroupEnd");
  });
}

TEST(Failure, PeerNeverArrivesAtInit) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "2000");
  EXPECT_RUN_OK(peerNeverArrives(2.0));
}

TEST(Failure, PeerKilledDuringAllReduce) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "5000");
  EXPECT_RUN_OK(peerKilledInAllReduce(15.0));
}

// The DDA failure tests run in the procs.ddaflat variant (NCCL_ALGO=DDAFlat), each in a process of
// its own with a short WEFT_TIMEOUT_MS, so that a wait they provoke ends soon.
#define WEFT_DDA_FLAT_FAILURE_TEST()                                                                       \
  const char* algo_ = getenv("NCCL_ALGO");                                                                 \
  if (algo_ == nullptr || std::string(algo_) != "DDAFlat") GTEST_SKIP() << "runs under NCCL_ALGO=DDAFlat"; \
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");                                            \
  ScopedEnv timeout_("WEFT_TIMEOUT_MS", "1500")

RunOptions ddaFailureOptions() {
  RunOptions opts;
  opts.deadlineMs = 30000;
  return opts;
}

// With DDA forced (the procs.ddaflat variant), a rank that never joins an AllReduce leaves its
// peers at the direct-access barrier: they time out with a message naming it as not arrived.
TEST(Failure, DdaBarrierTimeoutNamesTheMissingRank) {
  WEFT_DDA_FLAT_FAILURE_TEST();
  EXPECT_RUN_OK(runRanks(
      Mode::kProcs, 3,
      [](RankCtx& ctx) {
        std::vector<float> warm(1000, 1.0f);
        // First a call all ranks join, so the staging areas exist and the wait is at the barrier.
        if (!ctx.ok(ncclAllReduce(warm.data(), warm.data(), warm.size(), ncclFloat32, ncclSum, ctx.comm, nullptr),
                    "warm-up"))
          return;
        if (ctx.rank == 2) {
          std::this_thread::sleep_for(std::chrono::milliseconds(3000));
        } else {
          std::vector<float> v(1000, 1.0f);
          ctx.step("AllReduce that rank 2 never joins");
          const ncclResult_t r = ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr);
          const std::string msg = lastError(ctx.comm);
          if (r != ncclRemoteError) ctx.failf("expected ncclRemoteError, got %s", ncclGetErrorString(r));
          if (!namesRank(msg, 2) || msg.find("not arrived") == std::string::npos ||
              msg.find("barrier") == std::string::npos)
            ctx.failf("the timeout message does not name rank 2 as not arrived at the barrier: \"%s\"", msg.c_str());
        }
        ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort");
        ctx.comm = nullptr;
      },
      ddaFailureOptions()));
}

// Rank 1 deregisters a window that rank 0 keeps (deregistration is local), then both call an
// AllReduce whose input lies in it: rank 0 publishes its input there, and rank 1, which no longer
// maps it, must fail the call saying why instead of folding a staging area rank 0 never filled,
// and tell rank 0, which waits for it at the closing barrier, as ranks report a mismatch.
TEST(Failure, WindowDeregisteredOnOneRankFailsItsReads) {
  WEFT_DDA_FLAT_FAILURE_TEST();
  EXPECT_RUN_OK(runRanks(
      Mode::kProcs, 2,
      [](RankCtx& ctx) {
        const size_t count = 4096, bytes = count * sizeof(float);  // 16 KiB: flat AllReduce publishes
        void* in = nullptr;
        std::vector<float> out(count);
        ncclWindow_t win = nullptr;
        if (!ctx.ok(ncclMemAlloc(&in, bytes), "ncclMemAlloc") ||
            !ctx.ok(ncclCommWindowRegister(ctx.comm, in, bytes, &win, NCCL_WIN_DEFAULT), "ncclCommWindowRegister",
                    ctx.comm))
          return;
        std::fill_n(static_cast<float*>(in), count, 1.0f + ctx.rank);
        if (!ctx.ok(ncclAllReduce(in, out.data(), count, ncclFloat32, ncclSum, ctx.comm, nullptr), "AllReduce") ||
            out[count - 1] != 3.0f)
          return ctx.fail("the AllReduce on the window, before any deregistration, failed or gave a wrong sum");
        if (ctx.rank == 1) ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
        ctx.step("AllReduce after rank 1 deregistered the window");
        const ncclResult_t r = ncclAllReduce(in, out.data(), count, ncclFloat32, ncclSum, ctx.comm, nullptr);
        const std::string msg = lastError(ctx.comm);
        if (r != ncclInvalidUsage)
          ctx.failf("expected ncclInvalidUsage (the ranks disagree about the window), got %s", ncclGetErrorString(r));
        if (ctx.rank == 1 && (!namesRank(msg, 0) || msg.find("window") == std::string::npos))
          ctx.failf("rank 1's error does not say that rank 0's window cannot be read: \"%s\"", msg.c_str());
        if (ctx.rank == 0 && !namesRank(msg, 1)) ctx.failf("rank 0's error does not name rank 1: \"%s\"", msg.c_str());
        ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort");
        ctx.comm = nullptr;
        ctx.ok(ncclMemFree(in), "ncclMemFree");
      },
      ddaFailureOptions()));
}

TEST(Failure, ShrinkWithoutADeadPeer) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "3000");
  EXPECT_RUN_OK(shrinkAfterPeerDeath());
}

// Entries of /dev/shm with "weft" in their name that are not in `before`, and shared-memory
// sockets not in `socketsBefore`. Entries are removed after being reported, so one failure does
// not leak into the next run's picture (or fill /dev/shm).
std::string takeLeftovers(const std::set<std::string>& before, const std::set<std::string>& socketsBefore) {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string leftovers;
  for (const std::string& name : listUnixSockets("@weft-shm"))
    if (socketsBefore.count(name) == 0) leftovers += " " + name;
  for (const std::string& name : listShm("weft")) {
    if (before.count(name)) continue;
    leftovers += " /dev/shm/" + name;
    unlink(("/dev/shm/" + name).c_str());
  }
  return leftovers;
}

// Runs alone (RUN_SERIAL): a run, a killed peer and a missing peer, then compares /dev/shm.
TEST(ShmHygiene, NothingLeftInDevShm) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "3000");
  const std::set<std::string> before = listShm("weft"), socketsBefore = listUnixSockets("@weft-shm");
  for (const std::string& name : before) printf("note: /dev/shm/%s was already there before this test\n", name.c_str());
  // The scenarios' own checks belong to the tests above; here they only have to end, which the
  // harness guarantees (a hung rank is killed and reported).
  EXPECT_RUN_OK(healthyRun());
  for (const RunReport& rep : {peerKilledInAllReduce(15.0), peerNeverArrives(3.0)})
    if (!rep.ok()) printf("note (checked by the Failure tests):\n%s", rep.text().c_str());
  const std::string leftovers = takeLeftovers(before, socketsBefore);
  EXPECT_TRUE(leftovers.empty()) << "left behind after the procs runs (one with a SIGKILLed rank):" << leftovers;
}

// The rank that creates a connection's segment dies before its peer ever maps it (connections are
// made on first use, so rank 1, which never joins the AllReduce, never maps it). Nothing of it may
// stay in /dev/shm or bound as a socket.
TEST(ShmHygiene, CreatorKilledBeforePeerMaps) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "3000");
  const std::set<std::string> before = listShm("weft"), socketsBefore = listUnixSockets("@weft-shm");
  RunOptions opts;
  opts.expectKilled = {0};
  opts.deadlineMs = 30000;
  EXPECT_RUN_OK(runRanks(
      Mode::kProcs, 2,
      [](RankCtx& ctx) {
        if (ctx.rank == 0) {
          std::thread([] {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            kill(getpid(), SIGKILL);
          }).detach();
          std::vector<float> v(1 << 20, 1.0f);
          ctx.step("AllReduce that rank 1 never joins");
          ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr);
          std::this_thread::sleep_for(std::chrono::seconds(30));  // the kill comes first
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        ctx.step("ncclCommAbort after rank 0 died");
        ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort after rank 0 died");
        ctx.comm = nullptr;
      },
      opts));
  const std::string leftovers = takeLeftovers(before, socketsBefore);
  EXPECT_TRUE(leftovers.empty()) << "left behind by a SIGKILLed rank whose peer never mapped its segment:" << leftovers;
}

}  // namespace
}  // namespace weft_test
