// Collective mismatch detection (docs/architecture.md, "Mismatch detection"): two ranks call
// different things as the same operation of a communicator. Every rank must fail at once with
// ncclInvalidUsage (well before any timeout: the suite runs with WEFT_TIMEOUT_MS far above the
// bound checked here), the message must name both calls, the communicator must report the
// failure, destroy and abort must work, and nothing of it may stay in /dev/shm.
//
// The same cases run under every lane and transport: the mismatch.* variants (variants.cc) run them
// with NCCL_ALGO=Ring/Tree/DDAFlat/DDATree, with low precision, and over the network transport
// (NCCL_SHM_DISABLE=1). A case whose ranks end up on different lanes (e.g. Tree for AllReduce,
// Ring for AllGather), or whose ranks only send, or wait on each other in different sequence
// spaces (a Send against a collective), is caught by the slow-path stamp exchange.
// Matched calls whose histories differ must not trip the check (MismatchMatched).
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

constexpr size_t kSmall = 1000;           // elements: one message, both ranks receive
constexpr size_t kBig = size_t(1) << 21;  // 8 MiB of float32: more than any FIFO and socket
                                          // buffer hold, so a sender blocks until its peer reads
constexpr double kBoundSeconds = 1.0;     // every rank's error must come within this

struct Buffers {
  std::vector<float> send, recv;
  Buffers() : send(2 * kBig, 1.0f), recv(2 * kBig, 0.0f) {}
};

using CallFn = ncclResult_t (*)(int rank, Buffers& b, ncclComm_t comm);

struct MismatchCase {
  const char* name;
  CallFn call;                     // what rank 0 and rank 1 call
  std::vector<std::string> names;  // what every rank's message must contain (both calls)
};

ncclResult_t differentCollective(int rank, Buffers& b, ncclComm_t comm) {
  if (rank == 0) return ncclAllReduce(b.send.data(), b.recv.data(), kSmall, ncclFloat32, ncclSum, comm, nullptr);
  return ncclAllGather(b.send.data(), b.recv.data(), kSmall, ncclFloat32, comm, nullptr);
}
ncclResult_t differentCount(int rank, Buffers& b, ncclComm_t comm) {
  return ncclAllReduce(b.send.data(), b.recv.data(), rank == 0 ? kSmall : 2 * kSmall, ncclFloat32, ncclSum, comm,
                       nullptr);
}
ncclResult_t differentType(int rank, Buffers& b, ncclComm_t comm) {
  return ncclAllReduce(b.send.data(), b.recv.data(), kSmall, rank == 0 ? ncclFloat32 : ncclInt32, ncclSum, comm,
                       nullptr);
}
ncclResult_t differentOp(int rank, Buffers& b, ncclComm_t comm) {
  return ncclAllReduce(b.send.data(), b.recv.data(), kSmall, ncclFloat32, rank == 0 ? ncclSum : ncclMax, comm, nullptr);
}
// Each rank believes it is the root: both only send, so no message is ever read (the slow path's
// case, or the in-band check where a lane makes a rank receive).
ncclResult_t differentRoot(int rank, Buffers& b, ncclComm_t comm) {
  return ncclBroadcast(b.send.data(), b.recv.data(), kBig, ncclFloat32, rank, comm, nullptr);
}
ncclResult_t recvLarger(int rank, Buffers& b, ncclComm_t comm) {
  if (rank == 0) return ncclSend(b.send.data(), kBig, ncclFloat32, 1, comm, nullptr);
  return ncclRecv(b.recv.data(), 2 * kBig, ncclFloat32, 0, comm, nullptr);
}
ncclResult_t recvSmaller(int rank, Buffers& b, ncclComm_t comm) {
  if (rank == 0) return ncclSend(b.send.data(), kBig, ncclFloat32, 1, comm, nullptr);
  return ncclRecv(b.recv.data(), kBig / 2, ncclFloat32, 0, comm, nullptr);
}

// Calls of different sequence spaces: each rank waits on the other, in a call the other never
// makes (a fresh communicator: the receiving side never creates the FIFO the sender waits for).
ncclResult_t collectiveAgainstSend(int rank, Buffers& b, ncclComm_t comm) {
  if (rank == 0) return ncclAllReduce(b.send.data(), b.recv.data(), kSmall, ncclFloat32, ncclSum, comm, nullptr);
  return ncclSend(b.send.data(), kSmall, ncclFloat32, 0, comm, nullptr);
}
ncclResult_t bothSend(int rank, Buffers& b, ncclComm_t comm) {
  return ncclSend(b.send.data(), kSmall, ncclFloat32, 1 - rank, comm, nullptr);
}

const std::string kBigText = std::to_string(kBig);

const MismatchCase kCases[] = {
    {"Collective", differentCollective, {"ncclAllReduce(1000 x float32, sum", "ncclAllGather(1000 x float32"}},
    {"Count", differentCount, {"ncclAllReduce(1000 x float32, sum", "ncclAllReduce(2000 x float32, sum"}},
    {"Datatype", differentType, {"ncclAllReduce(1000 x float32, sum", "ncclAllReduce(1000 x int32, sum"}},
    {"ReductionOp", differentOp, {"ncclAllReduce(1000 x float32, sum", "ncclAllReduce(1000 x float32, max"}},
    {"Root",
     differentRoot,
     {"ncclBroadcast(" + kBigText + " x float32, root 0", "ncclBroadcast(" + kBigText + " x float32, root 1"}},
    {"RecvLarger",
     recvLarger,
     {"ncclSend(" + kBigText + " x float32 to rank 1)",
      "ncclRecv(" + std::to_string(2 * kBig) + " x float32 from rank 0)"}},
    {"CollectiveAgainstSend",
     collectiveAgainstSend,
     {"ncclAllReduce(1000 x float32, sum", "ncclSend(1000 x float32 to rank 0)"}},
    {"BothSend", bothSend, {"ncclSend(1000 x float32 to rank 1)", "ncclSend(1000 x float32 to rank 0)"}},
    {"RecvSmaller",
     recvSmaller,
     {"ncclSend(" + kBigText + " x float32 to rank 1)",
      "ncclRecv(" + std::to_string(kBig / 2) + " x float32 from rank 0)"}},
};

// The communicator's hash as the message gives it ("of communicator 0123456789abcdef"): its
// shared-memory names all start with "weft-<hash>".
std::string commHashIn(const std::string& msg) {
  std::smatch m;
  static const std::regex re("communicator ([0-9a-f]{16})");
  return std::regex_search(msg, m, re) ? m[1].str() : std::string();
}

// The checks every mismatch case shares, for one rank that has just made its call.
void expectMismatchError(RankCtx& ctx, ncclResult_t r, double took, const std::vector<std::string>& names,
                         std::string* hash) {
  const std::string msg = lastError(ctx.comm);
  if (r != ncclInvalidUsage)
    ctx.failf("rank %d: the mismatched call returned %s, expected ncclInvalidUsage (\"%s\")", ctx.rank,
              ncclGetErrorString(r), msg.c_str());
  if (took >= kBoundSeconds)
    ctx.failf("rank %d: the mismatch took %.3f s to fail (bound %.1f s)", ctx.rank, took, kBoundSeconds);
  for (const std::string& n : names)
    if (msg.find(n) == std::string::npos)
      ctx.failf("rank %d: the error does not name \"%s\": \"%s\"", ctx.rank, n.c_str(), msg.c_str());
  if (msg.find(" but rank ") == std::string::npos)
    ctx.failf("rank %d: the error does not say what the other rank called: \"%s\"", ctx.rank, msg.c_str());
  ncclResult_t async = ncclSuccess;
  ctx.ok(ncclCommGetAsyncError(ctx.comm, &async), "ncclCommGetAsyncError");
  if (async != ncclInvalidUsage)
    ctx.failf("rank %d: ncclCommGetAsyncError reports %s after the mismatch, expected ncclInvalidUsage", ctx.rank,
              ncclGetErrorString(async));
  *hash = commHashIn(msg);
  if (hash->empty()) ctx.failf("rank %d: the error does not name the communicator: \"%s\"", ctx.rank, msg.c_str());
}

// Test names and gtest's parameter printout show the case's name, not its bytes.
void PrintTo(const MismatchCase& c, std::ostream* os) { *os << c.name; }

class Mismatch : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(Mismatch, EveryRankFailsAtOnceNamingBothCalls) {
  const MismatchCase& mc = GetParam();
  SharedCounter gone;
  RunOptions opts;
  opts.deadlineMs = 30000;
  EXPECT_RUN_OK(runRanks(
      kTier, 2,
      [&](RankCtx& ctx) {
        Buffers b;
        ctx.step(std::string("calling the mismatched ") + mc.name);
        const double t0 = nowSeconds();
        const ncclResult_t r = mc.call(ctx.rank, b, ctx.comm);
        const double took = nowSeconds() - t0;
        std::string hash;
        expectMismatchError(ctx, r, took, mc.names, &hash);
        // A failed communicator still goes away cleanly, by destroy or by abort.
        ctx.ok(ctx.rank == 0 ? ncclCommDestroy(ctx.comm) : ncclCommAbort(ctx.comm), "destroy/abort after the mismatch");
        ctx.comm = nullptr;
        gone.add();
        if (!gone.waitFor(ctx.nranks, 20)) return ctx.fail("the other rank never finished its destroy");
        if (!hash.empty()) {
          std::set<std::string> left = listShm("weft-" + hash);
          if (!left.empty())
            ctx.failf("rank %d: /dev/shm still holds %s after every rank left", ctx.rank, left.begin()->c_str());
          left = listUnixSockets("@weft-shm/weft-" + hash);
          if (!left.empty())
            ctx.failf("rank %d: socket %s is still bound after every rank left", ctx.rank, left.begin()->c_str());
        }
      },
      opts));
}

INSTANTIATE_TEST_SUITE_P(Cases, Mismatch, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<MismatchCase>& info) {
                           return std::string(info.param.name);
                         });

// More ranks: the last one calls a larger count than the others. Only its ring neighbours meet
// its messages in-band; every other rank must still fail at once, through the announcement or
// the report of a rank that found it, with the same two-sided text.
TEST(MismatchManyRanks, OneRankWithAnotherCountFailsEveryRank) {
  SharedCounter gone;
  RunOptions opts;
  opts.deadlineMs = 30000;
  EXPECT_RUN_OK(runRanks(
      kTier, 5,
      [&](RankCtx& ctx) {
        const size_t count = ctx.rank == ctx.nranks - 1 ? 2 * kSmall : kSmall;
        std::vector<float> v(count, 1.0f);
        const double t0 = nowSeconds();
        const ncclResult_t r = ncclAllReduce(v.data(), v.data(), count, ncclFloat32, ncclSum, ctx.comm, nullptr);
        std::string hash;
        expectMismatchError(ctx, r, nowSeconds() - t0,
                            {"ncclAllReduce(1000 x float32, sum", "ncclAllReduce(2000 x float32, sum"}, &hash);
        ctx.ok(ncclCommDestroy(ctx.comm), "ncclCommDestroy after the mismatch");
        ctx.comm = nullptr;
        gone.add();
        if (!gone.waitFor(ctx.nranks, 20)) return ctx.fail("another rank never finished its destroy");
        std::set<std::string> left = hash.empty() ? std::set<std::string>() : listShm("weft-" + hash);
        if (!left.empty())
          ctx.failf("rank %d: /dev/shm still holds %s after every rank left", ctx.rank, left.begin()->c_str());
        left = hash.empty() ? std::set<std::string>() : listUnixSockets("@weft-shm/weft-" + hash);
        if (!left.empty())
          ctx.failf("rank %d: socket %s is still bound after every rank left", ctx.rank, left.begin()->c_str());
      },
      opts));
}

// Matched calls never trip the check, even where ranks' histories differ: rank 0 and 1 exchange
// point-to-point messages that rank 2 takes no part in, and rank 0 alone simulates a group
// (ncclGroupSimulateEnd runs nothing); the AllReduce after them is still the same collective
// everywhere (collectives and each (peer, direction) are numbered apart) and exact.
TEST(MismatchMatched, DifferentHistoriesStillMatch) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    std::vector<float> msg(3000, 1.0f), v(5000, static_cast<float>(ctx.rank + 1));
    if (ctx.rank == 0) {
      for (int i = 0; i < 2; ++i)
        ctx.ok(ncclSend(msg.data(), msg.size(), ncclFloat32, 1, ctx.comm, nullptr), "ncclSend");
      ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
      ctx.ok(ncclGroupStart(), "ncclGroupStart");
      ctx.ok(ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr),
             "simulated AllReduce");
      ctx.ok(ncclGroupSimulateEnd(&sim), "ncclGroupSimulateEnd");
    } else if (ctx.rank == 1) {
      for (int i = 0; i < 2; ++i)
        ctx.ok(ncclRecv(msg.data(), msg.size(), ncclFloat32, 0, ctx.comm, nullptr), "ncclRecv");
    }
    if (!ctx.ok(ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr), "AllReduce",
                ctx.comm))
      return;
    for (float x : v)
      if (x != 6.0f) return ctx.failf("rank %d: AllReduce gave %g, expected 6", ctx.rank, static_cast<double>(x));
  }));
}

// A rank may group a Send with a collective that its peer runs before the matching Recv (legal,
// as in NCCL: the group's operations progress side by side). Rank 2 comes late, so rank 1 idles
// in the AllReduce waiting on rank 0 (for rank 2's block) while rank 0's Send waits on rank 1: the two wait on each
// other in different sequence spaces for a while (long enough for the slow-path exchange), yet
// rank 0 has issued the AllReduce, so it is no mismatch, and everything must complete exactly.
TEST(MismatchMatched, GroupedSendBeforeCollectiveIsNoMismatch) {
  // Rings connected at init: rank 1 forwards into rank 2's FIFO before rank 2 arrives and then
  // waits on rank 0 (with lazy connections it would wait on rank 2 instead).
  // The ring (a DDA barrier would wait on rank 2 alone).
  WEFT_REQUIRE_FRESH_PROCESS("this test sets NCCL_RUNTIME_CONNECT and NCCL_ALGO");
  ScopedEnv connect("NCCL_RUNTIME_CONNECT", "0");
  ScopedEnv ring("NCCL_ALGO", "Ring");
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    std::vector<float> msg(kSmall, 3.0f), got(kSmall, 0.0f), v(kSmall, static_cast<float>(ctx.rank + 1));
    if (ctx.rank == 0) {
      ctx.ok(ncclGroupStart(), "ncclGroupStart");
      ctx.ok(ncclSend(msg.data(), msg.size(), ncclFloat32, 1, ctx.comm, nullptr), "ncclSend");
      ctx.ok(ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr), "ncclAllReduce");
      ctx.ok(ncclGroupEnd(), "ncclGroupEnd", ctx.comm);
    } else {
      if (ctx.rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ctx.ok(ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr), "ncclAllReduce",
             ctx.comm);
    }
    if (ctx.rank == 1) {
      ctx.ok(ncclRecv(got.data(), got.size(), ncclFloat32, 0, ctx.comm, nullptr), "ncclRecv", ctx.comm);
      if (got[kSmall - 1] != 3.0f) ctx.failf("rank 1 received %g, expected 3", static_cast<double>(got[kSmall - 1]));
    }
    if (v[0] != 6.0f) ctx.failf("rank %d: AllReduce gave %g, expected 6", ctx.rank, static_cast<double>(v[0]));
  }));
}

// Connections waiting in the accept queues of this process's listening TCP sockets (for a
// listening socket, /proc/net/tcp's rx_queue is its accept backlog).
int pendingConnectionsOfThisProcess() {
  std::set<std::string> mine;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char target[128] = {};
      std::string link = std::string("/proc/self/fd/") + e->d_name;
      ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      if (n > 0 && std::strncmp(target, "socket:[", 8) == 0) mine.insert(std::string(target + 8, target + n - 1));
    }
    closedir(d);
  }
  int pending = 0;
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state != "0A" || mine.count(inode) == 0) continue;  // 0A: LISTEN
      pending += static_cast<int>(std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16));
    }
  }
  return pending;
}

// A rank that never waits never polls for stamps, yet a peer that waits on it for longer than the
// slow-path delay sends it one per operation. Over a long run those would fill the rank's
// bootstrap backlog (and every later note would cost its sender a connect timeout), so the rank
// drains them as it goes (the executor looks every 16 runs): after 40 such operations at most 16
// may still be queued. Not a lane matter, so it runs once, outside the mismatch variants.
TEST(StampNotes, ABusyRankDrainsTheNotesItIsSent) {
  if (kTier != Mode::kProcs) GTEST_SKIP() << "counts one process's own sockets: procs tier only";
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    std::vector<float> v(kSmall, 1.0f);
    constexpr int kOps = 40;
    constexpr int kMostQueued = 16;  // host_executor.cc: kDrainCheckRuns
    for (int i = 0; i < kOps; ++i) {
      // Rank 1 works "outside" Weft for longer than the slow-path delay, so rank 0 waits in every
      // AllReduce and sends a note; rank 1 arrives last and never waits.
      if (ctx.rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(70));
      if (!ctx.ok(ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr), "AllReduce",
                  ctx.comm))
        return;
    }
    if (ctx.rank == 1) {
      const int pending = pendingConnectionsOfThisProcess();
      if (pending > kMostQueued)
        ctx.failf("rank 1 has %d connections queued on its listeners after %d operations", pending, kOps);
    }
  }));
}

#ifdef WEFT_SPLIT_TUNER_PATH
// Ranks cannot disagree on NCCL_ALGO (it is agreed at init), but a tuner plugin decides per rank:
// this one picks Ring on even ranks and Tree on odd ones, and the error must name both.
TEST(MismatchTuner, DifferentAlgorithmsAreNamed) {
  WEFT_REQUIRE_FRESH_PROCESS("this test loads a tuner plugin through NCCL_TUNER_PLUGIN");
  ScopedEnv plugin("NCCL_TUNER_PLUGIN", WEFT_SPLIT_TUNER_PATH);
  RunOptions opts;
  opts.deadlineMs = 30000;
  opts.initComm = false;
  EXPECT_RUN_OK(runRanks(
      kTier, 2,
      [](RankCtx& ctx) {
        // Forked ranks each load the plugin once: tell each its parity (threads alternate by order).
        if (kTier == Mode::kProcs) setenv("WEFT_SPLIT_TUNER_PARITY", ctx.rank % 2 ? "1" : "0", 1);
        if (!ctx.ok(ncclCommInitRank(&ctx.comm, ctx.nranks, ctx.id, ctx.rank), "ncclCommInitRank")) return;
        Buffers b;
        const double t0 = nowSeconds();
        const ncclResult_t r = ncclAllReduce(b.send.data(), b.recv.data(), kSmall, ncclFloat32, ncclSum, ctx.comm,
                                             nullptr);
        std::string hash;
        expectMismatchError(ctx, r, nowSeconds() - t0, {", Ring", ", Tree", "ncclAllReduce(1000 x float32, sum"},
                            &hash);
        ctx.ok(ncclCommDestroy(ctx.comm), "ncclCommDestroy");
        ctx.comm = nullptr;
      },
      opts));
}
#endif

}  // namespace
}  // namespace weft_test
