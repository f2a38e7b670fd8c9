// Process-level API: versions, error strings, Weft's extensions, memory allocation, and the
// buffers NCCL documents as unused (and so allowed to be NULL) on non-root ranks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// Runs work on this thread while another thread calls poll in a tight loop, until work is done or
// a poll returns a problem (non-empty). Says what the first problem was and how many polls ran.
// The work starts once the first poll has returned: on a loaded machine (ctest -j2 on two cores) a
// new thread can wait milliseconds for a core, longer than the work takes, and the poller would
// otherwise never run beside it.
struct PollReport {
  std::string problem;
  int polls = 0;
};
PollReport pollWhile(const std::function<std::string()>& poll, const std::function<void()>& work) {
  std::atomic<bool> done{false}, started{false};
  PollReport rep;
  std::thread poller([&] {
    while (!done.load() && rep.problem.empty()) {
      rep.problem = poll();
      ++rep.polls;
      started.store(true);
      std::this_thread::yield();
    }
    started.store(true);
  });
  while (!started.load()) std::this_thread::yield();
  work();
  done.store(true);
  poller.join();
  return rep;
}

TEST(Api, Version) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  EXPECT_EQ(version, 23007);
  EXPECT_GE(version, NCCL_VERSION(2, 28, 9));
  EXPECT_EQ(NCCL_VERSION_CODE, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  const char* weft = weftGetVersionString();
  ASSERT_NE(weft, nullptr);
  EXPECT_GT(strlen(weft), 0u);
  EXPECT_NE(strstr(weft, "backends: host"), nullptr) << weft;  // host mode is in every build
}

TEST(Api, ErrorStringForEveryCode) {
  std::set<std::string> seen;
  for (int code = ncclSuccess; code < ncclNumResults; ++code) {
    const char* s = ncclGetErrorString(static_cast<ncclResult_t>(code));
    ASSERT_NE(s, nullptr) << "code " << code;
    EXPECT_GT(strlen(s), 0u) << "code " << code;
    EXPECT_TRUE(seen.insert(s).second) << "code " << code << " shares its string \"" << s << "\" with another code";
  }
  for (int code : {static_cast<int>(ncclNumResults), 99, -1}) {
    const char* s = ncclGetErrorString(static_cast<ncclResult_t>(code));
    ASSERT_NE(s, nullptr) << "an unknown code must still give a string (code " << code << ")";
    EXPECT_GT(strlen(s), 0u);
  }
  EXPECT_NE(ncclGetLastError(nullptr), nullptr) << "ncclGetLastError never returns NULL";
}

TEST(Api, MemAllocAndFree) {
  for (size_t bytes : {size_t{1}, size_t{4096}, size_t{3} << 20}) {
    void* p = nullptr;
    ASSERT_EQ(ncclMemAlloc(&p, bytes), ncclSuccess) << lastError(nullptr);
    ASSERT_NE(p, nullptr);
    memset(p, 0x3c, bytes);  // host mode: ordinary host memory
    EXPECT_EQ(static_cast<unsigned char*>(p)[bytes - 1], 0x3c);
    EXPECT_EQ(ncclMemFree(p), ncclSuccess) << lastError(nullptr);
  }
}

// Reduce's recvbuff on non-roots, Gather's recvbuff on non-roots and Scatter's sendbuff on
// non-roots are not used, so NULL is fine there.
TEST(Api, UnusedBuffersMayBeNullOnNonRoots) {
  EXPECT_RUN_OK(runRanks(Mode::kThreads, 3, [](RankCtx& ctx) {
    const int root = 1;
    const bool isRoot = ctx.rank == root;
    const size_t count = 100;
    std::vector<int32_t> mine(count, ctx.rank + 1), all(3 * count, -1), one(count, -1);
    if (ctx.ok(ncclReduce(mine.data(), isRoot ? one.data() : nullptr, count, ncclInt32, ncclSum, root, ctx.comm,
                          nullptr),
               "ncclReduce (recvbuff NULL on non-roots)", ctx.comm) &&
        isRoot && one[0] != 6)
      ctx.failf("Reduce gave %d, expected 6", one[0]);
    if (ctx.ok(ncclGather(mine.data(), isRoot ? all.data() : nullptr, count, ncclInt32, root, ctx.comm, nullptr),
               "ncclGather (recvbuff NULL on non-roots)", ctx.comm) &&
        isRoot) {
      for (int p = 0; p < 3; ++p)
        if (all[p * count] != p + 1) ctx.failf("Gather block %d holds %d, expected %d", p, all[p * count], p + 1);
    }
    for (int p = 0; p < 3; ++p) std::fill(all.begin() + p * count, all.begin() + (p + 1) * count, 10 * (p + 1));
    if (ctx.ok(ncclScatter(isRoot ? all.data() : nullptr, one.data(), count, ncclInt32, root, ctx.comm, nullptr),
               "ncclScatter (sendbuff NULL on non-roots)", ctx.comm) &&
        one[count - 1] != 10 * (ctx.rank + 1))
      ctx.failf("Scatter gave %d, expected %d", one[count - 1], 10 * (ctx.rank + 1));
  }));
}

// weftCommDumpState tells who is stuck where: rank 1 holds back its AllReduce while rank 0 waits
// in its own, and a dump of rank 0's communicator taken from another thread then names the
// operation's number, the step and rank 1. Once both have called, the dump says it waits no more.
TEST(Api, DumpStateNamesTheOperationStepAndPeerARankWaitsFor) {
  SharedCounter dumped;
  EXPECT_RUN_OK(runRanks(Mode::kThreads, 2, [&dumped](RankCtx& ctx) {
    std::vector<float> in(1000, 1.0f), out(1000, 0.0f);
    if (ctx.rank == 1) {
      ctx.step("holding back the AllReduce until rank 0's dump shows its wait");
      if (!dumped.waitFor(1, 20)) ctx.fail("rank 0 never reported its dump");
      ctx.ok(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, ctx.comm, nullptr), "ncclAllReduce",
             ctx.comm);
      return;
    }
    std::string seen;
    std::thread watcher([&] {
      char buf[2048];
      // A wait shows once the executor stops spinning (microseconds); give a busy machine seconds.
      for (int i = 0; i < 10000 && seen.empty(); ++i) {
        if (weftCommDumpState(ctx.comm, buf, sizeof buf) == ncclSuccess && strstr(buf, "; waiting for") != nullptr)
          seen = buf;
        else
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      dumped.add();  // rank 1 goes on either way, so the AllReduce completes
    });
    ctx.step("AllReduce that waits for rank 1");
    ctx.ok(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, ctx.comm, nullptr), "ncclAllReduce",
           ctx.comm);
    watcher.join();
    if (seen.empty()) {
      ctx.fail("weftCommDumpState never said where rank 0 waits");
      return;
    }
    const std::string wait = seen.substr(seen.find("; waiting for"));
    if (wait.find("AllReduce #1 ") == std::string::npos)
      ctx.failf("the dump does not name AllReduce #1: %s", seen.c_str());
    if (!std::regex_search(wait, std::regex("step [0-9]+ of [0-9]+")))
      ctx.failf("the dump does not name the step: %s", seen.c_str());
    if (!std::regex_search(wait, std::regex("ranks? 1[ ,)]")))
      ctx.failf("the dump does not name rank 1, the peer waited for: %s", seen.c_str());
    char after[2048];
    if (ctx.ok(weftCommDumpState(ctx.comm, after, sizeof after), "weftCommDumpState", ctx.comm) &&
        strstr(after, "not waiting") == nullptr)
      ctx.failf("after the AllReduce the dump still shows a wait: %s", after);
  }));
}

// A dump may come from any thread at any time, also while the communicator's first operations
// still create their links. Each rank's watcher dumps in a tight loop through the whole life of the
// links; the shared memory a rank owns only grows while they connect, and the last figure seen is
// the one a dump gives afterwards. Under ThreadSanitizer (tools/test_sanitizers.sh) this is where a
// figure read before its link published it shows up as a race.
TEST(Api, DumpStateFromAnotherThreadWhileLinksConnect) {
  EXPECT_RUN_OK(runRanks(Mode::kThreads, 3, [](RankCtx& ctx) {
    auto fifoBytes = [](const char* text, size_t* bytes) {
      const char* at = strstr(text, "shm owned ");
      return at != nullptr && sscanf(at, "shm owned %zu bytes", bytes) == 1;
    };
    // Fresh communicators (splits of the whole) each connect anew: a few rounds make a race that
    // ThreadSanitizer sees in one round now and then show up in nearly every run.
    for (int round = 0; round < 4; ++round) {
      ncclComm_t comm = nullptr;
      if (!ctx.ok(ncclCommSplit(ctx.comm, 0, ctx.rank, &comm, nullptr), "ncclCommSplit", ctx.comm)) return;
      size_t lastSeen = 0;
      char buf[2048];
      const PollReport rep = pollWhile(
          [&]() -> std::string {
            size_t bytes = 0;
            if (weftCommDumpState(comm, buf, sizeof buf) != ncclSuccess || !fifoBytes(buf, &bytes))
              return std::string("a dump while links connect failed or has no figure: ") + buf;
            if (bytes < lastSeen)
              return "the shared memory owned went down from " + std::to_string(lastSeen) + " to " +
                     std::to_string(bytes) + " bytes while links connected";
            lastSeen = bytes;
            return {};
          },
          [&] {
            // A megabyte. Broadcast and Reduce run only on FIFOs (chains or trees), and between the
            // Broadcast from rank 2 and the Reduce to it every rank receives, so every rank owns
            // FIFO memory (the AllReduce may take the direct lane's staging areas, which the FIFO
            // figure does not count).
            std::vector<float> in(1 << 18, 1.0f), out(1 << 18, 0.0f);
            ctx.step("the first operations of split communicator " + std::to_string(round) +
                     ", which create its links");
            ctx.ok(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, comm, nullptr),
                   "ncclAllReduce", comm);
            ctx.ok(ncclBroadcast(in.data(), out.data(), in.size(), ncclFloat32, 2, comm, nullptr), "ncclBroadcast",
                   comm);
            ctx.ok(ncclReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, 2, comm, nullptr), "ncclReduce",
                   comm);
          });
      char after[2048];
      size_t final = 0;
      if (!rep.problem.empty())
        ctx.fail(rep.problem);
      else if (ctx.ok(weftCommDumpState(comm, after, sizeof after), "weftCommDumpState", comm)) {
        if (!fifoBytes(after, &final)) ctx.failf("the dump has no shared-memory figure: %s", after);
        if (final == 0) ctx.failf("after three collectives the rank owns no FIFO memory: %s", after);
        if (lastSeen > final) ctx.failf("a dump showed %zu bytes, more than the %zu afterwards", lastSeen, final);
      }
      ctx.ok(ncclCommDestroy(comm), "ncclCommDestroy", comm);
    }
  }));
}

// One-shot, ring and tree AllReduces, a Broadcast, and a group of AllGather with Send/Recv, each
// result checked.
void collectivesOfEveryKind(RankCtx& ctx, ncclComm_t comm, int round) {
  ctx.step("round " + std::to_string(round) + ": collectives beside a polling watchdog");
  for (size_t count : {size_t{2}, size_t{1024}, size_t{1} << 16}) {
    std::vector<float> in(count, 1.0f), out(count, 0.0f);
    if (ctx.ok(ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr), "ncclAllReduce",
               comm) &&
        (out[0] != float(ctx.nranks) || out[count - 1] != float(ctx.nranks)))
      ctx.failf("AllReduce of %zu floats gave %g, expected %d", count, out[count - 1], ctx.nranks);
  }
  std::vector<int32_t> mine(4096, ctx.rank), all(4096 * ctx.nranks, -1), got(4096, -1);
  ctx.ok(ncclBroadcast(mine.data(), got.data(), mine.size(), ncclInt32, 1, comm, nullptr), "ncclBroadcast", comm);
  if (got[4095] != 1) ctx.failf("Broadcast from rank 1 gave %d", got[4095]);
  ctx.ok(ncclGroupStart(), "ncclGroupStart");
  ctx.ok(ncclAllGather(mine.data(), all.data(), mine.size(), ncclInt32, comm, nullptr), "ncclAllGather", comm);
  ctx.ok(ncclSend(mine.data(), mine.size(), ncclInt32, (ctx.rank + 1) % ctx.nranks, comm, nullptr), "ncclSend", comm);
  ctx.ok(ncclRecv(got.data(), got.size(), ncclInt32, (ctx.rank + ctx.nranks - 1) % ctx.nranks, comm, nullptr),
         "ncclRecv", comm);
  ctx.ok(ncclGroupEnd(), "ncclGroupEnd");
  for (int p = 0; p < ctx.nranks; ++p)
    if (all[size_t(p) * 4096 + 4095] != p) ctx.failf("AllGather block %d holds %d", p, all[size_t(p) * 4096]);
  if (got[0] != (ctx.rank + ctx.nranks - 1) % ctx.nranks) ctx.failf("Recv gave %d", got[0]);
}

// PyTorch's watchdog asks ncclCommGetAsyncError over and over from its own thread while the
// training thread runs collectives; monitoring asks for memory figures and dumps the same way. A
// thread polls every query a communicator answers while its ranks run their first operations of
// each kind (small one-shot AllReduce with its scratch, ring and tree sizes, a rooted collective,
// a group, point-to-point). Every answer must be right, and under ThreadSanitizer
// (tools/test_sanitizers.sh) no query may read what the running operation writes unguarded.
TEST(Api, QueriesFromAWatchdogThreadWhileCollectivesRun) {
  EXPECT_RUN_OK(runRanks(Mode::kThreads, 3, [](RankCtx& ctx) {
    for (int round = 0; round < 2; ++round) {
      ncclComm_t comm = nullptr;
      if (!ctx.ok(ncclCommSplit(ctx.comm, 0, ctx.rank, &comm, nullptr), "ncclCommSplit", ctx.comm)) return;
      char dump[2048];
      const PollReport rep = pollWhile(
          [&]() -> std::string {
            ncclResult_t async = ncclInternalError;
            int count = -1, rank = -1;
            uint64_t stat = 0;
            if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || async != ncclSuccess)
              return "ncclCommGetAsyncError failed or reported " + std::to_string(async);
            if (ncclCommCount(comm, &count) != ncclSuccess || count != ctx.nranks ||
                ncclCommUserRank(comm, &rank) != ncclSuccess || rank != ctx.rank)
              return "ncclCommCount/ncclCommUserRank gave " + std::to_string(count) + "/" + std::to_string(rank);
            if (weftCommDumpState(comm, dump, sizeof dump) != ncclSuccess) return "weftCommDumpState failed";
            for (int k = ncclStatGpuMemSuspend; k <= ncclStatGpuMemTotal; ++k)
              if (ncclCommMemStats(comm, static_cast<ncclCommMemStat_t>(k), &stat) != ncclSuccess)
                return "ncclCommMemStats(" + std::to_string(k) + ") failed: " + lastError(comm);
            return {};
          },
          [&] { collectivesOfEveryKind(ctx, comm, round); });
      if (!rep.problem.empty()) ctx.failf("round %d: %s", round, rep.problem.c_str());
      ctx.ok(ncclCommDestroy(comm), "ncclCommDestroy", comm);
    }
  }));
}

}  // namespace
}  // namespace weft_test
