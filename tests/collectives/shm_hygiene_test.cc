// Shared memory that leaves nothing behind and needs no /dev/shm (procs only): a job whose ranks
// are all SIGKILLed at once leaves no /dev/shm entry and no abstract socket; jobs run with no
// usable /dev/shm and with Docker's default 64 MiB one (a private mount namespace per run; skipped
// where one cannot be made).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

template <class T>
std::string newOnes(const std::set<T>& before, const std::set<T>& now, const char* prefix) {
  std::string text;
  for (const T& name : now)
    if (before.count(name) == 0) text += std::string(" ") + prefix + name;
  return text;
}

// Three ranks sit in an AlltoAll that rank 0 never joins (their FIFOs from rank 0 are made and
// offered, never fetched), then rank 0 SIGKILLs all four at once: nobody lives to clean up.
TEST(ShmHygiene, AllRanksKilledAtOnceLeaveNothing) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "20000");  // the kill must come before any timeout
  constexpr int kRanks = 4;
  const std::set<std::string> shmBefore = listShm("weft"), socketsBefore = listUnixSockets("@weft-shm");
  // pids[0..3], then how many /dev/shm entries rank 0 saw while every rank was alive.
  auto* shared = static_cast<int*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  shared[kRanks] = -1;
  RunOptions opts;
  opts.expectKilled = {0, 1, 2, 3};
  opts.deadlineMs = 30000;
  const RunReport rep = runRanks(
      Mode::kProcs, kRanks,
      [shared, shmBefore](RankCtx& ctx) {
        __atomic_store_n(&shared[ctx.rank], static_cast<int>(getpid()), __ATOMIC_RELEASE);
        std::vector<float> v(1 << 18, 1.0f), w(1 << 18, 0.0f);
        if (!ctx.ok(ncclAllReduce(v.data(), w.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr),
                    "warm-up AllReduce", ctx.comm))
          return;
        if (ctx.rank != 0) {
          ctx.step("AlltoAll that rank 0 never joins");
          const ncclResult_t r = ncclAlltoAll(v.data(), w.data(), v.size() / kRanks, ncclFloat32, ctx.comm, nullptr);
          ctx.failf("the AlltoAll without rank 0 returned %s before the kill", ncclGetErrorString(r));
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the others are inside by now
        int seen = 0;
        for (const std::string& name : listShm("weft")) seen += shmBefore.count(name) == 0;
        __atomic_store_n(&shared[kRanks], seen, __ATOMIC_RELEASE);
        for (int r = 1; r < kRanks; ++r) kill(__atomic_load_n(&shared[r], __ATOMIC_ACQUIRE), SIGKILL);
        kill(getpid(), SIGKILL);
      },
      opts);
  EXPECT_TRUE(rep.ok()) << rep.text();
  EXPECT_EQ(shared[kRanks], 0) << "/dev/shm held weft entries while the job ran";
  munmap(shared, 4096);
  // Socket names go with the last descriptor; the harness has reaped every rank by now.
  std::string leftovers = newOnes(shmBefore, listShm("weft"), "/dev/shm/");
  leftovers += newOnes(socketsBefore, listUnixSockets("@weft-shm"), "");
  for (const std::string& name : listShm("weft"))
    if (shmBefore.count(name) == 0) unlink(("/dev/shm/" + name).c_str());
  EXPECT_TRUE(leftovers.empty()) << "left behind by a job whose ranks were all SIGKILLed:" << leftovers;
}

// Runs `job` in a child with a private mount namespace whose /dev/shm is a fresh tmpfs mounted
// with `flags` and `data`. Returns the child's report, or sets *skip when the namespace or the
// mount cannot be made here.
std::string inPrivateDevShm(unsigned long flags, const char* data, const std::function<RunReport()>& job, bool* skip) {
  int out[2];
  if (pipe(out) != 0) return std::string("pipe: ") + strerror(errno);
  const pid_t child = fork();
  if (child == 0) {
    close(out[0]);
    auto say = [&](const std::string& text, int code) {
      (void)!write(out[1], text.data(), text.size());
      _exit(code);
    };
    // Mount changes made in this namespace stay in it (a shared "/" would pass them on).
    if (unshare(CLONE_NEWNS) != 0) say(std::string("unshare(CLONE_NEWNS): ") + strerror(errno), 77);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      say(std::string("making / private: ") + strerror(errno), 77);
    if (mount("tmpfs", "/dev/shm", "tmpfs", flags, data) != 0)
      say(std::string("mounting a tmpfs over /dev/shm: ") + strerror(errno), 77);
    const RunReport rep = job();
    say(rep.ok() ? std::string() : rep.text(), rep.ok() ? 0 : 1);
  }
  close(out[1]);
  if (child < 0) return std::string("fork: ") + strerror(errno);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    *skip = true;
    return text;
  }
  if (!WIFEXITED(status)) return "the child running the job died: " + text;
  return WEXITSTATUS(status) == 0 ? std::string() : text;
}

// 4 ranks, 64 MiB of float32 each, one AllReduce, checked element by element.
RunReport bigAllReduce() {
  return runRanks(Mode::kProcs, 4, [](RankCtx& ctx) {
    std::vector<float> v(size_t{16} << 20, static_cast<float>(ctx.rank + 1));
    ctx.step("AllReduce of 64 MiB per rank");
    if (!ctx.ok(ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, ctx.comm, nullptr), "AllReduce",
                ctx.comm))
      return;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] != 10.0f) return ctx.failf("element %zu is %g, expected 10", i, static_cast<double>(v[i]));
  });
}

// Some containers have no usable /dev/shm at all: an empty read-only one here.
TEST(NoDevShm, AllReduceWithAReadOnlyEmptyDevShm) {
  WEFT_REQUIRE_FRESH_PROCESS("the job runs in a fresh child");
  bool skip = false;
  const std::string failed = inPrivateDevShm(
      MS_RDONLY, "size=1m",
      [] {
        // The setup itself: nothing can be made in /dev/shm.
        const int fd = open("/dev/shm/weft-probe", O_CREAT | O_RDWR, 0600);
        RunReport rep = bigAllReduce();
        if (fd >= 0) rep.failures.push_back("test setup: /dev/shm is writable");
        return rep;
      },
      &skip);
  if (skip) GTEST_SKIP() << "no private mount namespace here: " << failed;
  EXPECT_TRUE(failed.empty()) << failed;
}

// Docker's default /dev/shm is 64 MiB; DDA staging areas of 32 MiB for 4 ranks need twice that.
TEST(NoDevShm, LargeDdaAllReduceWithA64MiBDevShm) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets Weft's environment");
  ScopedEnv algo("NCCL_ALGO", "DDAFlat");
  ScopedEnv staging("RCCL_DDA_SENDBUF_BYTES", "33554432");
  ScopedEnv flatMax("RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES", "1073741824");  // DDA for 64 MiB too
  bool skip = false;
  const std::string failed = inPrivateDevShm(0, "size=64m", bigAllReduce, &skip);
  if (skip) GTEST_SKIP() << "no private mount namespace here: " << failed;
  EXPECT_TRUE(failed.empty()) << failed;
}

}  // namespace
}  // namespace weft_test
