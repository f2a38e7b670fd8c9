// weft_calibration_stress: what a user sees when a job's processes all start at once on a machine
// whose calibration cache is empty. Each run gets a fresh cache directory; every rank is a process
// of its own (fork + exec) that inits one communicator on one shared id and runs AllReduce (float32,
// sum) at every power-of-two size from 8 B to 1 MiB, checked exactly. The ranks must all succeed,
// and at most one process of a run may have measured (the others load its result).
//   weft_calibration_stress [--procs 4,8] [--runs 3] [--keep-going]
// Rank mode (the driver starts it): WEFT_STRESS_RANK, WEFT_STRESS_NRANKS, WEFT_STRESS_ID (hex).
// Every rank runs with WEFT_TIMEOUT_MS=20000 and its own watchdog, and the driver kills a run that
// outlives its deadline: a disagreement between ranks is a failure, never a hang.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "unique_id_hex.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRankTimeoutMs = 20000;  // WEFT_TIMEOUT_MS of every rank
constexpr int kRankWatchdogS = 40;     // a rank still running then exits with code 3
constexpr int kRunDeadlineS = 50;      // the driver kills what is left of a run then
constexpr size_t kMaxBytes = size_t(1) << 20;

// ---- one rank ----

// Small integers, so every partial sum is exact in float32 whatever order the ranks add in.
float valueOf(int rank, size_t i) { return float((rank + 1) * int(i % 251 + 1)); }
float sumOf(int nranks, size_t i) {
  const int rankSum = nranks * (nranks + 1) / 2;  // 1 + 2 + ... + nranks: exact, n(n+1) is even
  return float(rankSum * int(i % 251 + 1));
}

using weft_stress::decodeId;
using weft_stress::encodeId;

int failCall(const char* what, ncclResult_t r, ncclComm_t comm, int rank) {
  const char* last = comm ? ncclGetLastError(comm) : ncclGetLastError(nullptr);
  std::printf("[rank %d] FAIL %s: %s (%s)\n", rank, what, ncclGetErrorString(r), last ? last : "");
  if (comm) ncclCommAbort(comm);
  return 1;
}

// AllReduce of every power-of-two size; 1 at the first wrong element or failed call.
int allReduceSizes(ncclComm_t comm, int rank, int nranks) {
  std::vector<float> in(kMaxBytes / sizeof(float)), out(in.size());
  for (size_t bytes = 8; bytes <= kMaxBytes; bytes *= 2) {
    size_t count = bytes / sizeof(float);
    for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, i);
    std::fill(out.begin(), out.begin() + long(count), -1.0f);
    char what[64];
    std::snprintf(what, sizeof(what), "ncclAllReduce of %zu bytes", bytes);
    ncclResult_t r = ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr);
    if (r != ncclSuccess) return failCall(what, r, comm, rank);
    for (size_t i = 0; i < count; ++i)
      if (out[i] != sumOf(nranks, i)) {
        std::printf("[rank %d] FAIL %s: element %zu is %g, expected %g\n", rank, what, i, double(out[i]),
                    double(sumOf(nranks, i)));
        ncclCommAbort(comm);
        return 1;
      }
  }
  return 0;
}

int runRank() {
  int rank = std::atoi(std::getenv("WEFT_STRESS_RANK"));
  int nranks = std::atoi(std::getenv("WEFT_STRESS_NRANKS"));
  ncclUniqueId id;
  if (!decodeId(std::getenv("WEFT_STRESS_ID"), &id) || nranks < 1 || rank < 0 || rank >= nranks) {
    std::printf("rank mode needs WEFT_STRESS_RANK < WEFT_STRESS_NRANKS and a WEFT_STRESS_ID of %zu hex digits\n",
                2 * sizeof(id.internal));
    return 2;
  }
  signal(SIGALRM, [](int) { _exit(3); });  // the rank's own watchdog
  alarm(kRankWatchdogS);
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, nranks, id, rank);
  if (r != ncclSuccess) return failCall("ncclCommInitRank", r, nullptr, rank);
  if (allReduceSizes(comm, rank, nranks) != 0) return 1;
  r = ncclCommDestroy(comm);
  if (r != ncclSuccess) return failCall("ncclCommDestroy", r, nullptr, rank);
  std::printf("[rank %d] ok\n", rank);
  return 0;
}

// ---- the driver ----

struct Options {
  std::vector<int> procs{4, 8};
  int runs = 3;
  bool keepGoing = false;
};

std::string makeTempDir(const char* tag) {
  std::string tmpl = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/" + tag + ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  return mkdtemp(buf.data()) ? std::string(buf.data()) : "";
}

// The environment of one rank: this process's, with the run's settings in place of any it had.
std::vector<std::string> rankEnv(int rank, int nranks, const std::string& id, const std::string& cacheDir) {
  const std::vector<std::pair<std::string, std::string>> set = {
      {"WEFT_STRESS_RANK", std::to_string(rank)},
      {"WEFT_STRESS_NRANKS", std::to_string(nranks)},
      {"WEFT_STRESS_ID", id},
      {"WEFT_CACHE_DIR", cacheDir},
      {"XDG_CACHE_HOME", cacheDir},
      {"WEFT_TIMEOUT_MS", std::to_string(kRankTimeoutMs)},
      {"WEFT_DEVICE", "host"},
      {"NCCL_DEBUG", "INFO"},  // the "tuner constants (source)" line tells who measured
      {"NCCL_DEBUG_SUBSYS", "TUNING"},
  };
  const std::vector<std::string> dropped = {"WEFT_TUNER_CALIBRATE=", "WEFT_TUNER_CONSTANTS="};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    bool replaced = false;
    for (const auto& [name, value] : set) replaced = replaced || kv.rfind(name + "=", 0) == 0;
    for (const std::string& d : dropped) replaced = replaced || kv.rfind(d, 0) == 0;
    if (!replaced) env.push_back(kv);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

// Starts one rank: this program again, its output in `log`. Everything is prepared before fork:
// the driver has threads (the id's root service), so the child only redirects and execs.
pid_t startRank(const std::string& self, const std::vector<std::string>& env, const std::string& log) {
  std::vector<char*> envp;
  for (const std::string& kv : env) envp.push_back(const_cast<char*>(kv.c_str()));
  envp.push_back(nullptr);
  char* argv[] = {const_cast<char*>(self.c_str()), nullptr};
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(2);
    execve(self.c_str(), argv, envp.data());
    _exit(2);
  }
  close(fd);
  return pid;
}

// Waits for every rank until the deadline, then kills the rest. Exit codes (-signal when killed).
std::vector<int> waitAll(const std::vector<pid_t>& pids, Clock::time_point deadline) {
  std::vector<int> codes(pids.size(), 0);
  std::vector<bool> done(pids.size(), false);
  for (size_t left = pids.size(); left > 0;) {
    bool late = Clock::now() > deadline;
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      if (pids[i] <= 0) {  // never started: nothing to wait for (and never kill(-1, ...))
        codes[i] = 2;
        done[i] = true;
        --left;
        continue;
      }
      if (late) kill(pids[i], SIGKILL);
      int status = 0;
      if (waitpid(pids[i], &status, late ? 0 : WNOHANG) != pids[i]) continue;
      codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      done[i] = true;
      --left;
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return codes;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string lastLines(const std::string& text, int n) {
  size_t pos = text.size();
  for (int k = 0; k <= n && pos != std::string::npos && pos > 0; ++k) pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos ? text : text.substr(pos + 1);
}

// How the ranks of a run got their constants, from their "tuner constants (<source>)" lines.
struct Sources {
  int measured = 0, cached = 0, defaults = 0, unknown = 0;
};

void countSource(const std::string& log, Sources* s) {
  size_t at = log.find("tuner constants (");
  if (at == std::string::npos) return void(++s->unknown);
  std::string src = log.substr(at + std::strlen("tuner constants ("));
  if (src.rfind("measured", 0) == 0)
    ++s->measured;
  else if (src.rfind("cache ", 0) == 0)
    ++s->cached;
  else if (src.rfind("defaults", 0) == 0)
    ++s->defaults;
  else
    ++s->unknown;
}

// One run of `n` processes on a fresh cache directory; true when it passed.
bool oneRun(const std::string& self, int n, int run) {
  std::string cacheDir = makeTempDir("weft-stress-cache"), logDir = makeTempDir("weft-stress-logs");
  ncclUniqueId id;
  if (cacheDir.empty() || logDir.empty() || ncclGetUniqueId(&id) != ncclSuccess) {
    std::printf("run %d x%d: cannot make its temporary directories or a unique id\n", run, n);
    return false;
  }
  auto t0 = Clock::now();
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r)
    pids.push_back(
        startRank(self, rankEnv(r, n, encodeId(id), cacheDir), logDir + "/rank" + std::to_string(r) + ".log"));
  std::vector<int> codes = waitAll(pids, t0 + std::chrono::seconds(kRunDeadlineS));
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  Sources src;
  bool ok = true;
  std::string failures;
  for (int r = 0; r < n; ++r) {
    std::string log = slurp(logDir + "/rank" + std::to_string(r) + ".log");
    countSource(log, &src);
    if (codes[r] != 0) {
      ok = false;
      failures += "  rank " + std::to_string(r) + " exit " + std::to_string(codes[r]) +
                  (codes[r] == 3  ? " (its watchdog: a hang)"
                   : codes[r] < 0 ? " (killed at the run's deadline)"
                                  : "") +
                  ", last lines:\n" + lastLines(log, 6);
    }
  }
  if (src.measured > 1) ok = false;
  std::printf(
      "run %d with %d processes: %s in %.2f s; constants measured by %d, loaded from the cache by %d, "
      "defaults in %d, unknown %d\n%s",
      run, n, ok ? "ok" : "FAILED", seconds, src.measured, src.cached, src.defaults, src.unknown, failures.c_str());
  if (src.measured > 1) std::printf("  more than one process measured: the calibration lock did not hold\n");
  std::fflush(stdout);
  std::error_code ec;
  std::filesystem::remove_all(cacheDir, ec);
  std::filesystem::remove_all(logDir, ec);
  return ok;
}

bool parseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--keep-going") {
      o->keepGoing = true;
    } else if ((a == "--procs" || a == "--runs") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--runs") {
        o->runs = std::atoi(v.c_str());
        continue;
      }
      o->procs.clear();
      std::stringstream ss(v);
      for (std::string tok; std::getline(ss, tok, ',');) o->procs.push_back(std::atoi(tok.c_str()));
    } else {
      return false;
    }
  }
  for (int n : o->procs)
    if (n < 1 || n > 64) return false;
  return o->runs >= 1 && !o->procs.empty();
}

int runDriver(int argc, char** argv) {
  Options o;
  if (!parseArgs(argc, argv, &o)) {
    std::fprintf(stderr, "usage: weft_calibration_stress [--procs N,M,...] [--runs R] [--keep-going]\n");
    return 2;
  }
  std::string self = std::filesystem::canonical("/proc/self/exe").string();
  int failed = 0;
  for (int n : o.procs)
    for (int run = 1; run <= o.runs; ++run) {
      if (oneRun(self, n, run)) continue;
      ++failed;
      if (!o.keepGoing) {
        std::printf("stopping at the first failed run (--keep-going runs them all)\n");
        return 1;
      }
    }
  std::printf("%s\n", failed ? "FAILED" : "all runs passed");
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) { return std::getenv("WEFT_STRESS_RANK") ? runRank() : runDriver(argc, argv); }
