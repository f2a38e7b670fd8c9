// Robustness beyond single calls: an abort from another thread ends a blocked call, a peer that
// skips a collective is reported after WEFT_TIMEOUT_MS, mismatched counts fail on both sides,
// repeated init/split/destroy leaks no file descriptors or threads, communicators are usable from
// several threads at once, and long runs of small back-to-back collectives stay correct.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

int countEntries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

struct Usage {
  int fds;
  int threads;
};
Usage usageNow() { return {countEntries("/proc/self/fd"), countEntries("/proc/self/task")}; }

TEST(Robustness, AbortFromAnotherThreadEndsABlockedCall) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "30000");  // the abort, not a timeout, must end the call
  SharedCounter done;
  RunOptions opts;
  opts.deadlineMs = 60000;
  EXPECT_RUN_OK(runRanks(
      kTier, 2,
      [&done](RankCtx& ctx) {
        if (ctx.rank == 1) {  // never joins the AllReduce; leaves once rank 0 is through
          if (!done.waitFor(1, 40)) ctx.fail("rank 0 never finished");
          ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort (rank 1)");
          ctx.comm = nullptr;
          return;
        }
        std::vector<float> buf(1 << 20, 1.0f);
        double abortAt = 0, abortTook = 0;
        ncclResult_t abortResult = ncclInternalError;
        ncclComm_t comm = ctx.comm;
        std::thread watchdog([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          abortAt = nowSeconds();
          abortResult = ncclCommAbort(comm);
          abortTook = nowSeconds() - abortAt;
        });
        const ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
        const double returnedAt = nowSeconds();
        watchdog.join();
        ctx.comm = nullptr;
        done.add();
        if (r == ncclSuccess) ctx.fail("an AllReduce whose peer never came returned ncclSuccess");
        if (returnedAt - abortAt > 5)
          ctx.failf("the blocked AllReduce returned %.1f s after ncclCommAbort from another thread",
                    returnedAt - abortAt);
        ctx.ok(abortResult, "ncclCommAbort from a watchdog thread while a call is blocked");
        if (abortTook > 5) ctx.failf("ncclCommAbort took %.1f s", abortTook);
      },
      opts));
}

TEST(Robustness, PeerSkippingACollectiveIsReportedAfterTheTimeout) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "2000");
  SharedCounter done;
  RunOptions opts;
  opts.deadlineMs = 60000;
  EXPECT_RUN_OK(runRanks(
      kTier, 2,
      [&done](RankCtx& ctx) {
        if (ctx.rank == 1) {  // alive, but never calls the AllReduce
          if (!done.waitFor(1, 40)) ctx.fail("rank 0 never finished");
          ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort (rank 1)");
          ctx.comm = nullptr;
          return;
        }
        std::vector<float> buf(4096, 1.0f);
        const double t0 = nowSeconds();
        const ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, ctx.comm,
                                             nullptr);
        const double took = nowSeconds() - t0;
        if (r == ncclSuccess || r == ncclInProgress)
          ctx.failf("AllReduce without its peer returned %s", ncclGetErrorString(r));
        if (took > 8) ctx.failf("the AllReduce gave up after %.1f s; WEFT_TIMEOUT_MS is 2000", took);
        if (took < 1)
          ctx.failf("the AllReduce gave up after %.2f s, before WEFT_TIMEOUT_MS (2 s), with a live peer", took);
        const std::string msg = lastError(ctx.comm);
        if (!namesRank(msg, 1))
          ctx.failf("ncclGetLastError does not name the peer (rank 1) it waited for: \"%s\"", msg.c_str());
        ncclResult_t async = ncclSuccess;
        ctx.ok(ncclCommGetAsyncError(ctx.comm, &async), "ncclCommGetAsyncError", ctx.comm);
        if (async == ncclSuccess) ctx.fail("ncclCommGetAsyncError reports ncclSuccess after the timeout");
        done.add();
        ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort after the timeout");
        ctx.comm = nullptr;
      },
      opts));
}

TEST(Robustness, MismatchedCountsFailOnBothRanks) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "3000");
  RunOptions opts;
  opts.deadlineMs = 60000;
  EXPECT_RUN_OK(runRanks(
      kTier, 2,
      [](RankCtx& ctx) {
        const size_t count = ctx.rank == 0 ? 1000 : 3000;
        std::vector<float> buf(count, 1.0f);
        const double t0 = nowSeconds();
        const ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), count, ncclFloat32, ncclSum, ctx.comm, nullptr);
        const double took = nowSeconds() - t0;
        if (r == ncclSuccess)
          ctx.failf("AllReduce with count %zu against a peer's %zu returned ncclSuccess", count, 4000 - count);
        if (took > 10) ctx.failf("the mismatched AllReduce took %.1f s to fail", took);
        const std::string msg = lastError(ctx.comm);
        if (r != ncclSuccess && !mentionsAny(msg, {"count", "size", "bytes", "agree", "mismatch", "rank"}))
          ctx.failf("ncclGetLastError does not say what went wrong: \"%s\"", msg.c_str());
        ctx.ok(ncclCommAbort(ctx.comm), "ncclCommAbort");
        ctx.comm = nullptr;
      },
      opts));
}

// Split, use and destroy a communicator 30 times: no file descriptors or threads pile up.
TEST(Robustness, SplitLoopLeaksNothing) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    const bool measure = kTier == Mode::kProcs || ctx.rank == 0;  // threads: one process-wide view
    Usage base{0, 0};
    std::vector<int32_t> one(1, 1);
    for (int i = 0; i < 30; ++i) {
      ncclComm_t sub = nullptr;
      if (!ctx.ok(ncclCommSplit(ctx.comm, 0, ctx.rank, &sub, nullptr), "ncclCommSplit", ctx.comm)) return;
      std::vector<int32_t> v(5000, ctx.rank);
      if (!ctx.ok(ncclAllReduce(v.data(), v.data(), v.size(), ncclInt32, ncclSum, sub, nullptr), "AllReduce on split",
                  sub))
        return;
      if (v[4999] != 3) return ctx.failf("iteration %d: AllReduce on the split gave %d, expected 3", i, v[4999]);
      if (!ctx.ok(ncclCommDestroy(sub), "ncclCommDestroy(split)")) return;
      // Everyone is past the destroy; measure while everyone waits in the second AllReduce.
      ctx.ok(ncclAllReduce(one.data(), one.data(), 1, ncclInt32, ncclSum, ctx.comm, nullptr), "barrier", ctx.comm);
      if (measure && i == 4) base = usageNow();
      if (measure && i == 29) {
        const Usage now = usageNow();
        if (now.fds > base.fds + 2 || now.threads > base.threads + 1)
          ctx.failf("after 25 more split/destroy cycles: %d -> %d open file descriptors, %d -> %d threads", base.fds,
                    now.fds, base.threads, now.threads);
      }
      ctx.ok(ncclAllReduce(one.data(), one.data(), 1, ncclInt32, ncclSum, ctx.comm, nullptr), "barrier", ctx.comm);
    }
  }));
}

// Whole runs (unique id, init, collectives, destroy) 20 times: this process keeps no file
// descriptors or threads (in procs mode this process only makes the ids and serves rendezvous),
// nothing named weft ever appears in /dev/shm, and no shared-memory socket stays bound.
TEST(Robustness, InitDestroyLoopLeaksNothing) {
  auto oneRun = [] {
    return runRanks(kTier, 3, [](RankCtx& ctx) {
      std::vector<float> v(30000, 1.0f), w(30000, 0.0f);
      ctx.ok(ncclAllReduce(v.data(), w.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr), "AllReduce",
             ctx.comm);
      ctx.ok(ncclAlltoAll(v.data(), w.data(), 10000, ncclFloat32, ctx.comm, nullptr), "AlltoAll", ctx.comm);
      ctx.ok(ncclGroupStart(), "ncclGroupStart");
      ctx.ok(ncclSend(v.data(), 100, ncclFloat32, (ctx.rank + 1) % 3, ctx.comm, nullptr), "ncclSend", ctx.comm);
      ctx.ok(ncclRecv(w.data(), 100, ncclFloat32, (ctx.rank + 2) % 3, ctx.comm, nullptr), "ncclRecv", ctx.comm);
      ctx.ok(ncclGroupEnd(), "ncclGroupEnd");
    });
  };
  for (int i = 0; i < 3; ++i) EXPECT_RUN_OK(oneRun());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const Usage base = usageNow();
  const std::set<std::string> shmBase = listShm("weft"), socketBase = listUnixSockets("@weft-shm");
  for (int i = 0; i < 20; ++i) {
    EXPECT_RUN_OK(oneRun());
    EXPECT_EQ(listShm("weft"), shmBase) << "run " << i << ": Weft made entries in /dev/shm";
  }
  // Rendezvous roots are detached threads that exit just after their last rank connected: on a busy
  // machine that can take a moment, so wait (bounded) for the counts to settle.
  Usage now = usageNow();
  for (int i = 0; i < 30 && (now.fds > base.fds + 2 || now.threads > base.threads + 1); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    now = usageNow();
  }
  EXPECT_LE(now.fds, base.fds + 2) << "open file descriptors grew over 20 init/destroy runs";
  EXPECT_LE(now.threads, base.threads + 1) << "threads grew over 20 init/destroy runs";
  EXPECT_EQ(listUnixSockets("@weft-shm"), socketBase) << "shared-memory sockets stayed bound after 20 runs";
}

// Each rank drives two communicators from two threads at the same time.
TEST(Robustness, TwoCommunicatorsFromTwoThreadsAtOnce) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    ncclComm_t twin = nullptr;
    if (!ctx.ok(ncclCommSplit(ctx.comm, 0, ctx.rank, &twin, nullptr), "ncclCommSplit", ctx.comm)) return;
    Reporter helperReport;
    std::thread helper([&] {
      for (int i = 0; i < 40; ++i) {
        std::vector<int64_t> v(7000 + i, ctx.rank + i);
        if (!helperReport.ok(ncclAllReduce(v.data(), v.data(), v.size(), ncclInt64, ncclSum, twin, nullptr),
                             "AllReduce on twin", twin))
          return;
        if (v.back() != 3 + 3 * i)
          return helperReport.failf("twin AllReduce %d gave %lld", i, static_cast<long long>(v.back()));
      }
    });
    for (int i = 0; i < 40; ++i) {
      std::vector<float> mine(3000 + i, static_cast<float>(ctx.rank * 100 + i)), all(3 * (3000 + i), -1.0f);
      if (!ctx.ok(ncclAllGather(mine.data(), all.data(), mine.size(), ncclFloat32, ctx.comm, nullptr), "AllGather",
                  ctx.comm))
        break;
      for (int p = 0; p < 3; ++p)
        if (all[p * mine.size()] != static_cast<float>(p * 100 + i)) {
          ctx.failf("AllGather %d: block %d holds %g", i, p, all[p * mine.size()]);
          break;
        }
    }
    helper.join();
    for (const std::string& e : helperReport.errors()) ctx.fail("helper thread: " + e);
    ctx.ok(ncclCommDestroy(twin), "ncclCommDestroy(twin)");
  }));
}

// Hundreds of tiny collectives of changing sizes and kinds, back to back, each checked.
TEST(Robustness, ManySmallCollectivesBackToBack) {
  EXPECT_RUN_OK(runRanks(kTier, 4, [](RankCtx& ctx) {
    const int n = ctx.nranks;
    for (int i = 0; i < 400; ++i) {
      const size_t count = 1 + (static_cast<size_t>(i) * 37) % 300;
      std::vector<int32_t> in(count * n), out(count * n, -1);
      for (size_t j = 0; j < in.size(); ++j) in[j] = static_cast<int32_t>(i * 1000 + ctx.rank * 10 + j % 7);
      ncclResult_t r = ncclSuccess;
      size_t outCount = count;
      std::function<int32_t(size_t)> want;
      const int32_t base = i * 1000;
      switch (i % 4) {
        case 0:  // sum over ranks 0..3 of rank*10 is 60
          r = ncclAllReduce(in.data(), out.data(), count, ncclInt32, ncclSum, ctx.comm, nullptr);
          want = [&](size_t j) { return static_cast<int32_t>(4 * base + 60 + 4 * (j % 7)); };
          break;
        case 1:
          r = ncclBroadcast(in.data(), out.data(), count, ncclInt32, i % n, ctx.comm, nullptr);
          want = [&](size_t j) { return static_cast<int32_t>(base + (i % n) * 10 + j % 7); };
          break;
        case 2:
          r = ncclAllGather(in.data(), out.data(), count, ncclInt32, ctx.comm, nullptr);
          outCount = count * n;
          want = [&](size_t j) { return static_cast<int32_t>(base + (j / count) * 10 + (j % count) % 7); };
          break;
        default:
          r = ncclReduceScatter(in.data(), out.data(), count, ncclInt32, ncclMax, ctx.comm, nullptr);
          want = [&](size_t j) { return static_cast<int32_t>(base + 30 + (ctx.rank * count + j) % 7); };
          break;
      }
      if (!ctx.ok(r, ("back-to-back call " + std::to_string(i)).c_str(), ctx.comm)) return;
      for (size_t j = 0; j < outCount; ++j)
        if (out[j] != want(j))
          return ctx.failf("back-to-back call %d (kind %d, count %zu): element %zu is %d, expected %d", i, i % 4, count,
                           j, out[j], want(j));
    }
  }));
}

}  // namespace
}  // namespace weft_test
