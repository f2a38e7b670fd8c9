// weft_soak: a long run of random collectives on 4 processes, with faults, as a job that runs for days
// would meet them. Each episode picks a transport (shared memory, or TCP with NCCL_SHM_DISABLE=1) and
// an algorithm setting (the tuner's choice, Ring, Tree, DDAFlat, DDATree), then starts one process per
// rank. A rank runs several communicator lifetimes in a row (init, random collectives checked
// exactly, destroy; the next id comes over the old communicator by Broadcast), so that its fds and
// memory can be compared between the first and the last lifetime. Some episodes end with a fault in
// the last lifetime: one rank SIGKILLs itself or calls ncclCommAbort at a random collective, and every
// other rank must then fail, within its timeout, with an error that names that rank.
//   weft_soak [--ops 100000] [--max-seconds 540] [--ranks 4] [--seed N]
// Rank mode (the driver starts it): WEFT_SOAK_* variables. Label soak: never in the default CI run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <malloc.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "soak_ops.h"
#include "unique_id_hex.h"

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int kRankTimeoutMs = 10000;   // WEFT_TIMEOUT_MS of every rank: how soon survivors must fail
constexpr int kEpisodeDeadlineS = 120;  // the driver kills what is left of an episode then
constexpr int kFaultLead = 4;           // how many operations before the fault a survivor may fail

int countFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n - 3;  // ".", ".." and the descriptor of the listing itself
}

// Resident memory after handing freed heap back to the system, so that what the allocator keeps
// for reuse (glibc raises its mmap threshold after large frees) does not read as growth.
long rssKiB() {
  malloc_trim(0);
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int countDevShm() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    if (e.path().filename().string().rfind("weft", 0) == 0) ++n;
  return n;
}

long envLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

// ---- one rank ----

struct RankPlan {
  int rank, nranks, cycles, opsPerCycle;
  uint64_t seed;
  std::string fault;  // none, kill, abort
  int victim, faultOp;
  std::string out;  // the result file
};

int runRank(const RankPlan& p) {
  FILE* out = std::fopen(p.out.c_str(), "w");
  if (!out) return 2;
  ncclUniqueId id;
  if (!weft_stress::decodeId(std::getenv("WEFT_SOAK_ID"), &id)) {
    std::fprintf(out, "FAIL bad id\n");
    return 1;
  }
  int fd0 = -1;
  long rss0 = 0;
  long done = 0;
  for (int cycle = 0; cycle < p.cycles; ++cycle) {
    const bool last = cycle == p.cycles - 1;
    ncclComm_t comm = nullptr;
    ncclResult_t r = ncclCommInitRank(&comm, p.nranks, id, p.rank);
    if (r != ncclSuccess) {
      std::fprintf(out, "FAIL init of cycle %d: %s: %s\n", cycle, ncclGetErrorString(r), ncclGetLastError(nullptr));
      return 1;
    }
    soak::OpStream ops(p.seed * 1000 + uint64_t(cycle), p.nranks);
    for (int i = 0; i < p.opsPerCycle; ++i) {
      const soak::Op op = ops.next();
      if (last && p.fault != "none" && i == p.faultOp && p.rank == p.victim) {
        std::fprintf(out, "VICTIM %s at op %d\n", p.fault.c_str(), i);
        std::fflush(out);
        if (p.fault == "kill") kill(getpid(), SIGKILL);
        ncclCommAbort(comm);
        std::fprintf(out, "DONE ops=%ld\n", done);
        return 0;
      }
      const Clock::time_point t0 = Clock::now();
      std::string why;
      r = soak::runAndCheck(op, comm, p.rank, p.nranks, &why);
      if (r != ncclSuccess || !why.empty()) {
        const char* last_error = ncclGetLastError(comm);
        // A rank returns from a collective once its own part is handed on, so the victim may be a
        // few operations ahead of a peer whose data from it was still on the way: the fault may
        // surface there a little before faultOp.
        if (last && p.fault != "none" && i >= p.faultOp - kFaultLead && r != ncclSuccess) {
          // A survivor: it must fail in bounded time and name the rank that failed.
          std::fprintf(out, "SURVIVOR op %d after %.2f s: %s\nMESSAGE %s\n", i, secondsSince(t0), ncclGetErrorString(r),
                       last_error);
          ncclCommAbort(comm);
          std::fprintf(out, "DONE ops=%ld\n", done);
          return 0;
        }
        std::fprintf(out, "FAIL cycle %d op %d (%s): %s %s %s\n", cycle, i, soak::describe(op).c_str(),
                     ncclGetErrorString(r), why.c_str(), last_error);
        ncclCommAbort(comm);
        return 1;
      }
      ++done;
    }
    if (last && p.fault != "none") {
      std::fprintf(out, "FAIL the fault at op %d (%s of rank %d) was never seen\n", p.faultOp, p.fault.c_str(),
                   p.victim);
      ncclCommAbort(comm);
      return 1;
    }
    // The next lifetime's id, made by rank 0 and carried by this communicator.
    if (!last) {
      if (p.rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) {
        std::fprintf(out, "FAIL ncclGetUniqueId\n");
        return 1;
      }
      r = ncclBroadcast(&id, &id, sizeof id, ncclChar, 0, comm, nullptr);
      if (r != ncclSuccess) {
        std::fprintf(out, "FAIL id broadcast: %s\n", ncclGetLastError(comm));
        return 1;
      }
    }
    if ((r = ncclCommDestroy(comm)) != ncclSuccess) {
      std::fprintf(out, "FAIL destroy: %s\n", ncclGetErrorString(r));
      return 1;
    }
    if (cycle == 0) {
      fd0 = countFds();
      rss0 = rssKiB();
    }
  }
  std::fprintf(out, "FLAT fds %d -> %d rss %ld -> %ld KiB\nDONE ops=%ld\n", fd0, countFds(), rss0, rssKiB(), done);
  return 0;
}

// ---- the driver ----

struct Episode {
  uint64_t seed;
  bool tcp;
  std::string algo;
  std::string fault;
  int victim, faultOp;
};

struct Totals {
  long ops = 0, episodes = 0, kills = 0, aborts = 0, survivorsChecked = 0;
  int worstFdGrowth = 0;
  long worstRssGrowthKiB = 0;
  double worstDetectS = 0;
};

bool namesRank(const std::string& msg, int rank) {
  const std::string needle = "rank " + std::to_string(rank);
  for (size_t at = msg.find(needle); at != std::string::npos; at = msg.find(needle, at + 1)) {
    const size_t end = at + needle.size();
    if (end >= msg.size() || !std::isdigit(static_cast<unsigned char>(msg[end]))) return true;
  }
  return false;
}

// Runs one episode; false (with the reason printed) when any rank broke a rule.
bool runEpisode(const char* self, const Episode& e, int nranks, int cycles, int opsPerCycle, Totals* t) {
  char dirTemplate[] = "/tmp/weft-soak.XXXXXX";
  const char* dir = mkdtemp(dirTemplate);
  if (!dir) return false;
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return false;
  const std::string idHex = weft_stress::encodeId(id);
  // Every rank's environment is built before fork: between fork and exec only exec itself runs, as
  // the bootstrap root's thread may hold the allocator's lock at the moment of the fork.
  std::vector<std::vector<std::string>> envs(nranks);
  for (int r = 0; r < nranks; ++r) {
    std::vector<std::string>& env = envs[r];
    for (char** v = environ; *v != nullptr; ++v) {
      const std::string var = *v;
      if (var.rfind("WEFT_SOAK_", 0) != 0 && var.rfind("NCCL_SHM_DISABLE=", 0) != 0 &&
          var.rfind("NCCL_ALGO=", 0) != 0 && var.rfind("WEFT_TIMEOUT_MS=", 0) != 0)
        env.push_back(var);
    }
    env.push_back("WEFT_SOAK_RANK=" + std::to_string(r));
    env.push_back("WEFT_SOAK_NRANKS=" + std::to_string(nranks));
    env.push_back("WEFT_SOAK_ID=" + idHex);
    env.push_back("WEFT_SOAK_SEED=" + std::to_string(e.seed));
    env.push_back("WEFT_SOAK_CYCLES=" + std::to_string(cycles));
    env.push_back("WEFT_SOAK_OPS=" + std::to_string(opsPerCycle));
    env.push_back("WEFT_SOAK_FAULT=" + e.fault);
    env.push_back("WEFT_SOAK_VICTIM=" + std::to_string(e.victim));
    env.push_back("WEFT_SOAK_FAULT_OP=" + std::to_string(e.faultOp));
    env.push_back("WEFT_SOAK_OUT=" + std::string(dir) + "/rank" + std::to_string(r));
    env.push_back("WEFT_TIMEOUT_MS=" + std::to_string(kRankTimeoutMs));
    if (e.tcp) env.push_back("NCCL_SHM_DISABLE=1");
    if (!e.algo.empty()) env.push_back("NCCL_ALGO=" + e.algo);
  }
  std::vector<std::vector<char*>> envps(nranks);
  for (int r = 0; r < nranks; ++r) {
    for (std::string& v : envs[r]) envps[r].push_back(v.data());
    envps[r].push_back(nullptr);
  }
  char* const args[] = {const_cast<char*>(self), nullptr};
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      execve(self, args, envps[r].data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  const Clock::time_point t0 = Clock::now();
  std::vector<int> status(nranks, -1);
  int left = nranks;
  while (left > 0) {
    for (int r = 0; r < nranks; ++r) {
      if (status[r] != -1) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = st;
        --left;
      }
    }
    if (left > 0 && secondsSince(t0) > kEpisodeDeadlineS) {
      for (int r = 0; r < nranks; ++r)
        if (status[r] == -1) kill(pids[r], SIGKILL);
      std::printf("episode %ld (seed %llu): ranks still running after %d s; killed\n", t->episodes,
                  static_cast<unsigned long long>(e.seed), kEpisodeDeadlineS);
      for (int r = 0; r < nranks; ++r) waitpid(pids[r], nullptr, 0);
      return false;
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  bool ok = true;
  for (int r = 0; r < nranks; ++r) {
    std::ifstream in(std::string(dir) + "/rank" + std::to_string(r));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool killedVictim = e.fault == "kill" && r == e.victim;
    auto bad = [&](const std::string& why) {
      std::printf("episode %ld (seed %llu, %s, NCCL_ALGO=%s, fault %s of rank %d at op %d): rank %d: %s\n%s\n",
                  t->episodes, static_cast<unsigned long long>(e.seed), e.tcp ? "tcp" : "shm",
                  e.algo.empty() ? "(tuner)" : e.algo.c_str(), e.fault.c_str(), e.victim, e.faultOp, r, why.c_str(),
                  text.c_str());
      ok = false;
    };
    if (killedVictim) {
      if (!WIFSIGNALED(status[r]) || WTERMSIG(status[r]) != SIGKILL) bad("the victim was not killed");
      continue;
    }
    if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) != 0) {
      bad("exited with status " + std::to_string(status[r]));
      continue;
    }
    if (text.find("FAIL") != std::string::npos) {
      bad("reported a failure");
      continue;
    }
    size_t at = text.find("DONE ops=");
    if (r == 0 && at != std::string::npos) t->ops += std::strtol(text.c_str() + at + 9, nullptr, 10);
    if (e.fault != "none" && r != e.victim) {
      at = text.find("SURVIVOR op ");
      size_t msgAt = text.find("MESSAGE ");
      if (at == std::string::npos || msgAt == std::string::npos) {
        bad("survived the fault without an error");
        continue;
      }
      const double took = std::strtod(text.c_str() + text.find(" after ", at) + 7, nullptr);
      t->worstDetectS = std::max(t->worstDetectS, took);
      const std::string msg = text.substr(msgAt + 8, text.find('\n', msgAt) - msgAt - 8);
      if (!namesRank(msg, e.victim)) bad("the error does not name rank " + std::to_string(e.victim));
      if (took > kRankTimeoutMs / 1000.0 + 5) bad("the error took longer than the timeout");
      ++t->survivorsChecked;
    }
    at = text.find("FLAT fds ");
    if (at != std::string::npos) {
      int f0 = 0, f1 = 0;
      long r0 = 0, r1 = 0;
      if (std::sscanf(text.c_str() + at, "FLAT fds %d -> %d rss %ld -> %ld", &f0, &f1, &r0, &r1) == 4) {
        t->worstFdGrowth = std::max(t->worstFdGrowth, f1 - f0);
        t->worstRssGrowthKiB = std::max(t->worstRssGrowthKiB, r1 - r0);
        // Fewer is fine: rank 0's first count may include the next rendezvous's root, still open.
        if (f1 > f0) bad("descriptors grew from " + std::to_string(f0) + " to " + std::to_string(f1));
        if (r1 - r0 > 16 * 1024) bad("resident memory grew by " + std::to_string(r1 - r0) + " KiB");
      }
    }
  }
  std::filesystem::remove_all(dir);
  return ok;
}

int drive(const char* self, int argc, char** argv) {
  long targetOps = 100000, maxSeconds = 540;
  int nranks = 4;
  uint64_t seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--ops")
      targetOps = std::atol(argv[i + 1]);
    else if (a == "--max-seconds")
      maxSeconds = std::atol(argv[i + 1]);
    else if (a == "--ranks")
      nranks = std::atoi(argv[i + 1]);
    else if (a == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: weft_soak [--ops N] [--max-seconds S] [--ranks N] [--seed N]\n");
      return 2;
    }
  }
  std::printf("weft_soak: %ld collectives on %d processes, seed %llu\n", targetOps, nranks,
              static_cast<unsigned long long>(seed));
  const int shm0 = countDevShm(), fd0 = countFds();
  const long rss0 = rssKiB();
  std::mt19937_64 rng(seed);
  Totals t;
  const Clock::time_point t0 = Clock::now();
  const int cycles = 4, opsPerCycle = 500;
  static const char* kAlgos[] = {"", "Ring", "Tree", "DDAFlat", "DDATree"};
  bool ok = true;
  while (t.ops < targetOps && secondsSince(t0) < maxSeconds) {
    Episode e;
    e.seed = rng();
    e.tcp = rng() % 3 == 0;
    e.algo = kAlgos[rng() % 5];
    const unsigned f = rng() % 10;
    e.fault = f < 6 ? "none" : f < 8 ? "kill" : "abort";
    e.victim = int(rng() % unsigned(nranks));
    e.faultOp = int(rng() % unsigned(opsPerCycle));
    t.kills += e.fault == "kill";
    t.aborts += e.fault == "abort";
    ok = runEpisode(self, e, nranks, cycles, opsPerCycle, &t) && ok;
    ++t.episodes;
    if (!ok) break;
  }
  const int shm1 = countDevShm(), fd1 = countFds();
  const long rss1 = rssKiB();
  std::printf(
      "weft_soak: %ld collectives checked in %.0f s over %ld episodes (%ld with a SIGKILLed rank, %ld with an "
      "aborting rank); %ld survivor errors checked, the slowest after %.2f s\n",
      t.ops, secondsSince(t0), t.episodes, t.kills, t.aborts, t.survivorsChecked, t.worstDetectS);
  std::printf("ranks: worst growth between first and last lifetime: %d fds, %ld KiB resident\n", t.worstFdGrowth,
              t.worstRssGrowthKiB);
  std::printf(
      "driver (hosts each episode's root): fds %d -> %d, resident %ld -> %ld KiB; /dev/shm weft entries %d -> %d\n",
      fd0, fd1, rss0, rss1, shm0, shm1);
  if (shm1 != shm0) {
    std::printf("FAIL: /dev/shm entries changed\n");
    ok = false;
  }
  if (fd1 != fd0) {
    std::printf("FAIL: the driver's descriptors grew\n");
    ok = false;
  }
  if (ok && t.ops < targetOps) {
    std::printf("FAIL: only %ld of %ld collectives within %ld s\n", t.ops, targetOps, maxSeconds);
    ok = false;
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("WEFT_SOAK_RANK")) {
    RankPlan p;
    p.rank = int(envLong("WEFT_SOAK_RANK", 0));
    p.nranks = int(envLong("WEFT_SOAK_NRANKS", 4));
    p.seed = std::strtoull(std::getenv("WEFT_SOAK_SEED"), nullptr, 10);
    p.cycles = int(envLong("WEFT_SOAK_CYCLES", 1));
    p.opsPerCycle = int(envLong("WEFT_SOAK_OPS", 100));
    p.fault = std::getenv("WEFT_SOAK_FAULT") ? std::getenv("WEFT_SOAK_FAULT") : "none";
    p.victim = int(envLong("WEFT_SOAK_VICTIM", -1));
    p.faultOp = int(envLong("WEFT_SOAK_FAULT_OP", -1));
    p.out = std::getenv("WEFT_SOAK_OUT") ? std::getenv("WEFT_SOAK_OUT") : "/dev/null";
    return runRank(p);
  }
  static char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 2;
  self[n] = 0;
  return drive(self, argc, argv);
}
