// Weft perf tools: starting the ranks.
//   -N n        the program forks n processes, one rank each. The parent creates the unique id
//               before forking (the children inherit it), takes no part itself, waits for the
//               children and fails if any of them fails.
//   -T n        n ranks as threads of each process, each thread with its own communicator.
//   mpirun / torchrun (OMPI_COMM_WORLD_RANK/SIZE, RANK/WORLD_SIZE, PMI_RANK/PMI_SIZE): this process
//               is one rank (or -T ranks); the rendezvous address goes to NCCL_COMM_ID and every
//               rank passes a zeroed unique id, so rank 0 hosts the rendezvous.
//   otherwise   a single rank.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "options.h"
#include "rank_bench.h"

namespace weftbench {

namespace {

constexpr int kDefaultPort = 29511;

struct ExternalLaunch {
  bool active = false;
  int rank = 0;
  int size = 1;
  const char* launcher = "";
};

bool envInt(const char* name, int* out) {
  const char* v = std::getenv(name);
  if (!v || !*v) return false;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end || x < 0 || x > (1 << 24)) return false;
  *out = static_cast<int>(x);
  return true;
}

ExternalLaunch detectLaunch() {
  ExternalLaunch e;
  if (envInt("OMPI_COMM_WORLD_RANK", &e.rank) && envInt("OMPI_COMM_WORLD_SIZE", &e.size)) {
    e.active = true;
    e.launcher = "mpirun";
  } else if (envInt("RANK", &e.rank) && envInt("WORLD_SIZE", &e.size)) {
    e.active = true;
    e.launcher = "torchrun";
  } else if (envInt("PMI_RANK", &e.rank) && envInt("PMI_SIZE", &e.size)) {
    e.active = true;
    e.launcher = "PMI";
  }
  return e;
}

// The rendezvous address for an external launch, unless the user set NCCL_COMM_ID already:
// MASTER_ADDR:(MASTER_PORT+1) when MASTER_ADDR is set (torchrun's own store uses MASTER_PORT),
// otherwise 127.0.0.1:(WEFT_BENCH_PORT or 29511).
void setRendezvousAddress() {
  if (const char* id = std::getenv("NCCL_COMM_ID"); id && *id) return;
  int port = kDefaultPort;
  envInt("WEFT_BENCH_PORT", &port);
  std::string host = "127.0.0.1";
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) {
    host = addr;
    int mport = 0;
    if (envInt("MASTER_PORT", &mport)) port = mport + 1;
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";  // IPv6
  }
  const std::string value = host + ":" + std::to_string(port);
  setenv("NCCL_COMM_ID", value.c_str(), 1);
}

// Ends the process when the run takes longer than --timeout, after saying where each rank stands.
class Watchdog {
 public:
  Watchdog(const char* tool, int seconds) : tool_(tool) {
    if (seconds <= 0) return;
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lk(mu_);
      if (cv_.wait_for(lk, std::chrono::seconds(seconds), [this] { return done_; })) return;
      std::fflush(stdout);
      std::fprintf(stderr, "%s: Test timeout (%ds) in pid %d\n%s", tool_, seconds, static_cast<int>(getpid()),
                   dumpCommStates().c_str());
      std::fflush(stderr);
      _exit(124);
    });
  }
  ~Watchdog() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  const char* tool_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

int rankThread(const CollDesc& coll, const Options& o, const ncclUniqueId& id, int rank, int nranks,
               int threadsPerProcess) {
  RankSetup s;
  s.rank = rank;
  s.nranks = nranks;
  s.threadsPerProcess = threadsPerProcess;
  ncclResult_t r = ncclCommInitRank(&s.comm, nranks, id, rank);
  if (r != ncclSuccess) failCall(coll.name, rank, "ncclCommInitRank", r, nullptr);
  registerComm(s.comm, rank);
  const int rc = runRank(coll, o, s);
  unregisterComm(s.comm);
  r = ncclCommFinalize(s.comm);
  if (r != ncclSuccess) failCall(coll.name, rank, "ncclCommFinalize", r, s.comm);
  r = ncclCommDestroy(s.comm);
  if (r != ncclSuccess) failCall(coll.name, rank, "ncclCommDestroy", r, nullptr);
  return rc;
}

// One process's ranks: proc * threads .. proc * threads + threads - 1.
int runProcess(const CollDesc& coll, const Options& o, const ncclUniqueId& id, int proc, int nprocs) {
  const int threads = std::max(o.threads, 1);
  const int nranks = nprocs * threads;
  Watchdog dog(coll.name, o.timeoutSec);
  if (threads == 1) return rankThread(coll, o, id, proc, nranks, 1);
  std::vector<int> rcs(threads, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++)
    ts.emplace_back([&, t] { rcs[t] = rankThread(coll, o, id, proc * threads + t, nranks, threads); });
  for (auto& t : ts) t.join();
  return *std::max_element(rcs.begin(), rcs.end());
}

// -N: fork the ranks and wait. When one child fails, the others get a grace period to notice
// and report on their own, then they are killed.
int runForked(const CollDesc& coll, const Options& o, const ncclUniqueId& id) {
  const int n = o.forkRanks;
  std::vector<pid_t> pids(n, -1);
  std::fflush(stdout);
  std::fflush(stderr);
  for (int p = 0; p < n; p++) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      for (int q = 0; q < p; q++) kill(pids[q], SIGKILL);
      for (int q = 0; q < p; q++) waitpid(pids[q], nullptr, 0);
      return 1;
    }
    if (pid == 0) {
      const int rc = runProcess(coll, o, id, p, n);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(rc);
    }
    pids[p] = pid;
  }
  int failed = 0;
  int alive = n;
  bool killed = false;
  const auto grace = std::chrono::seconds(10);
  std::chrono::steady_clock::time_point firstFailure{};
  while (alive > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, failed && !killed ? WNOHANG : 0);
    if (pid < 0) break;
    if (pid == 0) {
      if (std::chrono::steady_clock::now() - firstFailure > grace) {
        for (int p = 0; p < n; p++) {
          if (pids[p] <= 0) continue;
          std::fprintf(stderr, "%s: killing process %d (pid %d): another rank failed\n", coll.name, p,
                       static_cast<int>(pids[p]));
          kill(pids[p], SIGKILL);
        }
        killed = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      continue;
    }
    const auto it = std::find(pids.begin(), pids.end(), pid);
    if (it == pids.end()) continue;
    const int proc = static_cast<int>(it - pids.begin());
    *it = -1;
    alive--;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
      if (WIFSIGNALED(status)) {
        if (!killed)
          std::fprintf(stderr, "%s: process %d (pid %d) killed by signal %d\n", coll.name, proc, static_cast<int>(pid),
                       WTERMSIG(status));
      } else if (WEXITSTATUS(status) != 1) {  // 1: failed validation, already shown in the table
        std::fprintf(stderr, "%s: process %d (pid %d) exited with status %d\n", coll.name, proc, static_cast<int>(pid),
                     WEXITSTATUS(status));
      }
      if (!failed) firstFailure = std::chrono::steady_clock::now();
      failed++;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace

size_t alignedPerRank(size_t count, size_t eltSize, int nranks) {
  const size_t per = count / static_cast<size_t>(std::max(nranks, 1));
  const size_t unit = std::max<size_t>(16 / eltSize, 1);
  return per & ~(unit - 1);
}

int benchMain(int argc, char** argv, const CollDesc& coll) {
  Options o;
  int exitCode = 0;
  if (!parseOptions(argc, argv, coll.name, &o, &exitCode)) return exitCode;

  const ExternalLaunch ext = detectLaunch();
  if (ext.active) {
    if (o.forkRanks > 0) {
      std::fprintf(stderr, "%s: -N cannot be combined with an external launch (%s rank %d of %d)\n", coll.name,
                   ext.launcher, ext.rank, ext.size);
      return 1;
    }
    if (ext.rank >= ext.size) {
      std::fprintf(stderr, "%s: %s rank %d out of range (size %d)\n", coll.name, ext.launcher, ext.rank, ext.size);
      return 1;
    }
    setRendezvousAddress();  // before the first NCCL call: Weft reads its environment once
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    return runProcess(coll, o, id, ext.rank, ext.size);
  }

  ncclUniqueId id;
  const ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) failCall(coll.name, 0, "ncclGetUniqueId", r, nullptr);
  if (o.forkRanks > 0) return runForked(coll, o, id);
  return runProcess(coll, o, id, 0, 1);
}

}  // namespace weftbench
