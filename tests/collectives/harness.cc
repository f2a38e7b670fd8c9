#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <thread>

namespace weft_test {

const char* modeName(Mode mode) {
  switch (mode) {
    case Mode::kThreads: return "threads";
    case Mode::kProcs: return "procs";
    case Mode::kClique: return "clique";
  }
  return "?";
}

// Procs mode: a child writes records to its pipe: 'S' (a step, sent as it happens), 'E' (a
// failure), 'D' (a digest), then 'Z' (the end); a pipe that closes without 'Z' belongs to a child
// that died on the way.
static void putRecord(std::string* out, char tag, const std::string& text, uint64_t value) {
  out->push_back(tag);
  const uint32_t len = static_cast<uint32_t>(text.size());
  out->append(reinterpret_cast<const char*>(&len), sizeof(len));
  out->append(text);
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

static void writeAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

static void writeRecord(int fd, char tag, const std::string& text) {
  std::string out;
  putRecord(&out, tag, text.substr(0, 400), 0);
  writeAll(fd, out);
}

// ---------------------------------------------------------------------------------------------
// Reporter

void Reporter::fail(std::string msg) { errors_.push_back(std::move(msg)); }

void Reporter::failf(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  errors_.emplace_back(buf);
}

bool Reporter::expect(ncclResult_t got, ncclResult_t want, const char* what, ncclComm_t comm) {
  if (got == want) return true;
  failf("%s returned %d (%s), expected %d (%s); ncclGetLastError: \"%s\"", what, static_cast<int>(got),
        ncclGetErrorString(got), static_cast<int>(want), ncclGetErrorString(want), lastError(comm).c_str());
  return false;
}

void Reporter::step(const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(stepMu_);
    step_ = what;
  }
  if (stepFd_ >= 0) writeRecord(stepFd_, 'S', what);
}

std::string Reporter::lastStep() const {
  std::lock_guard<std::mutex> lock(stepMu_);
  return step_;
}

std::string RunReport::text() const {
  std::string out;
  for (const std::string& f : failures) out += f + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Helpers

double nowSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string lastError(ncclComm_t comm) {
  const char* msg = ncclGetLastError(comm);
  return msg ? std::string(msg) : std::string();
}

void checkSum(RankCtx& ctx, ncclComm_t comm, int64_t value, int64_t want, const char* what) {
  std::vector<int64_t> in(1001, value), out(1001, -1);
  if (!ctx.ok(ncclAllReduce(in.data(), out.data(), in.size(), ncclInt64, ncclSum, comm, nullptr), what, comm)) return;
  for (int64_t v : out)
    if (v != want)
      return ctx.failf("%s: AllReduce gave %lld, expected %lld", what, static_cast<long long>(v),
                       static_cast<long long>(want));
}

void expectShape(RankCtx& ctx, ncclComm_t comm, int wantCount, int wantRank, const char* what) {
  int count = -1, rank = -1;
  ctx.ok(ncclCommCount(comm, &count), "ncclCommCount", comm);
  ctx.ok(ncclCommUserRank(comm, &rank), "ncclCommUserRank", comm);
  if (count != wantCount || rank != wantRank)
    ctx.failf("%s: rank %d of %d, expected rank %d of %d", what, rank, count, wantRank, wantCount);
}

bool mentionsAny(const std::string& msg, std::initializer_list<const char*> words) {
  std::string lower(msg);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* w : words) {
    std::string lw(w);
    std::transform(lw.begin(), lw.end(), lw.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find(lw) != std::string::npos) return true;
  }
  return false;
}

bool namesRank(const std::string& msg, int r) {
  // "rank 2", "ranks 0, 2", "peer 2", "missing rank(s): [2]": a rank/peer word, then at most 40
  // characters without digits... or a list whose members are separated by commas.
  const std::string n = std::to_string(r);
  const std::regex direct("(rank|peer)s?[^0-9]{0,40}\\b" + n + "\\b", std::regex::icase);
  const std::regex listed("(rank|peer)s?[^0-9]{0,40}[0-9, ]*\\b" + n + "\\b", std::regex::icase);
  return std::regex_search(msg, direct) || std::regex_search(msg, listed);
}

ncclResult_t waitNotInProgress(ncclComm_t comm, int timeoutMs) {
  const double end = nowSeconds() + timeoutMs / 1000.0;
  for (;;) {
    ncclResult_t state = ncclInProgress;
    const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (nowSeconds() > end) return ncclInProgress;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::set<std::string> listShm(const std::string& needle) {
  std::set<std::string> names;
  DIR* dir = opendir("/dev/shm");
  if (!dir) return names;
  while (dirent* e = readdir(dir)) {
    const std::string name(e->d_name);
    if (name.find(needle) != std::string::npos) names.insert(name);
  }
  closedir(dir);
  return names;
}

std::set<std::string> listUnixSockets(const std::string& needle) {
  std::set<std::string> names;
  std::ifstream f("/proc/net/unix");
  for (std::string line; std::getline(f, line);) {
    const size_t at = line.rfind(' ');
    if (at == std::string::npos) continue;
    const std::string path = line.substr(at + 1);
    if (path.find(needle) != std::string::npos) names.insert(path);
  }
  return names;
}

namespace {
std::atomic<int> testsStarted{0};
}  // namespace

void noteTestStarted() { testsStarted.fetch_add(1); }
bool processIsFresh() { return testsStarted.load() <= 1; }

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = getenv(name)) {
    hadOld_ = true;
    old_ = old;
  }
  setenv(name, value, 1);
}

ScopedEnv::~ScopedEnv() {
  if (hadOld_) {
    setenv(name_.c_str(), old_.c_str(), 1);
  } else {
    unsetenv(name_.c_str());
  }
}

namespace {

// ---------------------------------------------------------------------------------------------
// The body of one rank, the same in threads and procs modes.

void runOneRank(RankCtx& ctx, const std::function<void(RankCtx&)>& body, const RunOptions& opts) {
  if (opts.initComm) {
    ctx.step("ncclCommInitRank (harness)");
    const ncclResult_t r = ncclCommInitRank(&ctx.comm, ctx.nranks, ctx.id, ctx.rank);
    if (r != ncclSuccess) {
      ctx.failf("ncclCommInitRank(nranks=%d, rank=%d) returned %d (%s): \"%s\"", ctx.nranks, ctx.rank,
                static_cast<int>(r), ncclGetErrorString(r), lastError(nullptr).c_str());
      ctx.comm = nullptr;
      return;
    }
  }
  ctx.step("the test body");
  try {
    body(ctx);
  } catch (const std::exception& e) {
    ctx.failf("exception: %s", e.what());
  } catch (...) {
    ctx.fail("unknown exception");
  }
  if (ctx.comm != nullptr) {
    ctx.step("ncclCommDestroy (harness)");
    const ncclResult_t r = ncclCommDestroy(ctx.comm);
    ctx.comm = nullptr;
    ctx.ok(r, "ncclCommDestroy (harness)");
  }
}

struct DigestEntry {
  std::string who;
  std::string key;
  uint64_t value;
};

// Adds a failure for every digest key on which the reporters (ranks) disagree.
void compareDigests(const std::vector<DigestEntry>& entries, std::vector<std::string>* failures) {
  std::map<std::string, std::vector<const DigestEntry*>> byKey;
  for (const DigestEntry& e : entries) byKey[e.key].push_back(&e);
  int reported = 0;
  for (const auto& [key, values] : byKey) {
    bool same = true;
    for (const DigestEntry* v : values) same = same && v->value == values[0]->value;
    if (same) continue;
    if (++reported > 20) {
      failures->push_back("(more results differ between ranks; first 20 listed)");
      break;
    }
    std::string line = "results differ between ranks (not bit-identical) for " + key + ":";
    for (const DigestEntry* v : values) {
      char buf[64];
      snprintf(buf, sizeof(buf), "=%016llx", static_cast<unsigned long long>(v->value));
      line += " " + v->who + buf;
    }
    failures->push_back(line);
  }
}

void addDigests(const std::string& who, const std::vector<std::pair<std::string, uint64_t>>& digests,
                std::vector<DigestEntry>* out) {
  for (const auto& [key, value] : digests) out->push_back({who, key, value});
}

void appendFailures(const std::string& who, const std::vector<std::string>& errors, std::vector<std::string>* out) {
  const size_t kMax = 40;
  for (size_t i = 0; i < errors.size() && i < kMax; ++i) out->push_back(who + ": " + errors[i]);
  if (errors.size() > kMax) out->push_back(who + ": ... and " + std::to_string(errors.size() - kMax) + " more");
}

std::string rankLabel(int rank) { return "rank " + std::to_string(rank); }

// Threads-mode completion: the test thread waits for every rank thread up to the deadline.
struct Completion {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> finished;
  int remaining = 0;

  void done(int slot) {
    std::lock_guard<std::mutex> lock(mu);
    finished[slot] = true;
    --remaining;
    cv.notify_all();
  }
  // False when the deadline passed with jobs still running.
  bool wait(int deadlineMs) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::milliseconds(deadlineMs), [&] { return remaining == 0; });
  }
};

[[noreturn]] void dieHung(const char* what, const std::vector<int>& hung, int deadlineMs,
                          const std::vector<std::string>& soFar) {
  std::string who = "the driving thread";
  if (!hung.empty()) {
    who = "rank(s)";
    for (size_t i = 0; i < hung.size(); ++i) who += (i ? ", " : " ") + std::to_string(hung[i]);
  }
  fprintf(stderr,
          "\n[weft harness] FAILURE: %s: %s still running after the %d ms deadline (hung). "
          "Ending the process: a hung thread cannot be stopped.\n",
          what, who.c_str(), deadlineMs);
  for (const std::string& f : soFar) fprintf(stderr, "[weft harness]   %s\n", f.c_str());
  fflush(stderr);
  fflush(stdout);
  std::_Exit(3);
}

RunReport runThreads(int nranks, const std::function<void(RankCtx&)>& body, const RunOptions& opts) {
  RunReport report;
  const double t0 = nowSeconds();
  ncclUniqueId id{};
  const ncclResult_t idr = ncclGetUniqueId(&id);
  if (idr != ncclSuccess) {
    report.failures.push_back(std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(idr) + ": " +
                              lastError(nullptr));
    return report;
  }
  auto ctxs = std::make_shared<std::vector<RankCtx>>(nranks);
  auto completion = std::make_shared<Completion>();
  completion->finished.assign(nranks, true);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    RankCtx& ctx = (*ctxs)[r];
    ctx.rank = r;
    ctx.nranks = nranks;
    ctx.id = id;
    if (opts.absent.count(r)) continue;
    completion->finished[r] = false;
    completion->remaining++;
  }
  for (int r = 0; r < nranks; ++r) {
    if (opts.absent.count(r)) continue;
    threads.emplace_back([ctxs, completion, r, &body, &opts] {
      runOneRank((*ctxs)[r], body, opts);
      completion->done(r);
    });
  }
  if (!completion->wait(opts.deadlineMs)) {
    std::vector<int> hung;
    std::vector<std::string> soFar;
    {
      std::lock_guard<std::mutex> lock(completion->mu);
      for (int r = 0; r < nranks; ++r) {
        if (!completion->finished[r]) {
          hung.push_back(r);
          const std::string last = (*ctxs)[r].lastStep();
          if (!last.empty()) soFar.push_back(rankLabel(r) + ": hung; last step: " + last);
        } else {
          appendFailures(rankLabel(r), (*ctxs)[r].errors(), &soFar);
        }
      }
    }
    dieHung("threads run", hung, opts.deadlineMs, soFar);
  }
  for (std::thread& t : threads) t.join();
  std::vector<DigestEntry> digests;
  for (int r = 0; r < nranks; ++r) {
    appendFailures(rankLabel(r), (*ctxs)[r].errors(), &report.failures);
    addDigests(rankLabel(r), (*ctxs)[r].digests(), &digests);
  }
  compareDigests(digests, &report.failures);
  report.seconds = nowSeconds() - t0;
  return report;
}

// ---------------------------------------------------------------------------------------------
// Procs mode (the record format is at the top of this file).

struct Decoded {
  std::vector<std::string> errors;
  std::vector<std::pair<std::string, uint64_t>> digests;
  std::string lastStep;
  std::string id;  // 'I': the unique id, from the id keeper (below)
  bool complete = false;
};

Decoded decodeRecords(const std::string& in) {
  Decoded d;
  size_t pos = 0;
  while (pos + 1 + sizeof(uint32_t) <= in.size()) {
    const char tag = in[pos];
    uint32_t len = 0;
    memcpy(&len, in.data() + pos + 1, sizeof(len));
    const size_t need = 1 + sizeof(len) + len + sizeof(uint64_t);
    if (pos + need > in.size()) break;
    std::string text = in.substr(pos + 1 + sizeof(len), len);
    uint64_t value = 0;
    memcpy(&value, in.data() + pos + 1 + sizeof(len) + len, sizeof(value));
    pos += need;
    switch (tag) {  // one record, one tag: text is moved out at most once
      case 'E': d.errors.push_back(std::move(text)); break;
      case 'D': d.digests.emplace_back(std::move(text), value); break;
      case 'S': d.lastStep = std::move(text); break;
      case 'I': d.id = std::move(text); break;
      case 'Z': d.complete = true; break;
      default: break;  // a tag this version does not know
    }
  }
  return d;
}

[[noreturn]] void childMain(RankCtx& ctx, const std::function<void(RankCtx&)>& body, const RunOptions& opts, int fd) {
  // Dies with the test process, so a killed test leaves no orphan ranks behind.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  ctx.setStepSink(fd);
  runOneRank(ctx, body, opts);
  ctx.setStepSink(-1);
#if defined(__SANITIZE_ADDRESS__)
  // A rank ends with _exit, which skips LeakSanitizer's check at exit: without this, what a rank
  // process leaks (its communicator's memory) would go unseen in an ASan build.
  if (__lsan_do_recoverable_leak_check() != 0) ctx.fail("LeakSanitizer found leaks in this rank (report above)");
#endif
  std::string out;
  const size_t kMax = 200;
  for (size_t i = 0; i < ctx.errors().size() && i < kMax; ++i) putRecord(&out, 'E', ctx.errors()[i], 0);
  if (ctx.errors().size() > kMax)
    putRecord(&out, 'E', "... and " + std::to_string(ctx.errors().size() - kMax) + " more", 0);
  for (const auto& [key, value] : ctx.digests()) putRecord(&out, 'D', key, value);
  putRecord(&out, 'Z', "", 0);
  writeAll(fd, out);
  close(fd);
  fflush(stdout);
  fflush(stderr);
  _exit(0);
}

struct Child {
  int rank = -1;
  pid_t pid = -1;
  int fd = -1;
  std::string data;
  bool reaped = false;
  int status = 0;
  bool killedByUs = false;
  std::string stacks;  // where a hung rank's threads were, when gdb could tell
};

// The call stacks of every thread of a hung rank, read with gdb when it is installed (it is on the
// development and CI machines; elsewhere the report just lacks them). A hang that shows up once
// in thousands of runs is only fixable with this.
std::string threadStacks(pid_t pid) {
  if (access("/usr/bin/gdb", X_OK) != 0) return "";
  const std::string cmd = "timeout 30 /usr/bin/gdb -nx -batch -p " + std::to_string(pid) +
                          " -ex 'thread apply all bt 25' 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return "";
  std::string out;
  char line[1024];
  while (fgets(line, sizeof line, f) != nullptr) {
    // Only the frames and thread headers: gdb's banner and symbol-loading chatter say nothing.
    if (line[0] == '#' || strncmp(line, "Thread ", 7) == 0) out += std::string("    ") + line;
  }
  pclose(f);
  return out;
}

// The unique id comes from a process of its own, which keeps the bootstrap root's thread alive
// until the ranks are reaped (stopIdKeeper). The test process stays free of Weft's threads, so its
// forks never copy a lock that another thread holds: under ASan, a rank forked while the root's
// thread held the sanitizer's allocator lock hung in its first allocation.
struct IdKeeper {
  pid_t pid = -1;
  int release = -1;  // closing it lets the keeper exit
};

[[noreturn]] void idKeeperMain(int idFd, int releaseFd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  ncclUniqueId id{};
  const ncclResult_t r = ncclGetUniqueId(&id);
  std::string out;
  if (r == ncclSuccess) {
    putRecord(&out, 'I', std::string(id.internal, sizeof(id.internal)), 0);
  } else {
    putRecord(&out, 'E', std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(r) + ": " + lastError(nullptr),
              0);
  }
  writeAll(idFd, out);
  close(idFd);
  char byte;
  for (;;) {  // until the test process closes the pipe, or dies
    const ssize_t n = read(releaseFd, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  _exit(0);
}

bool startIdKeeper(ncclUniqueId* id, IdKeeper* keeper, std::string* error) {
  int idPipe[2];
  int releasePipe[2];
  if (pipe2(idPipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe2: ") + strerror(errno);
    return false;
  }
  if (pipe2(releasePipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe2: ") + strerror(errno);
    close(idPipe[0]);
    close(idPipe[1]);
    return false;
  }
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(idPipe[0]);
    close(releasePipe[1]);
    idKeeperMain(idPipe[1], releasePipe[0]);
  }
  close(idPipe[1]);
  close(releasePipe[0]);
  if (pid < 0) {
    *error = std::string("fork: ") + strerror(errno);
    close(idPipe[0]);
    close(releasePipe[1]);
    return false;
  }
  keeper->pid = pid;
  keeper->release = releasePipe[1];
  std::string data;
  char buf[512];
  pollfd pfd{idPipe[0], POLLIN, 0};
  // ncclGetUniqueId binds a socket and starts a thread: seconds under a sanitizer, never 60.
  const double deadline = nowSeconds() + 60;
  while (nowSeconds() < deadline) {
    const int n = poll(&pfd, 1, 100);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = read(idPipe[0], buf, sizeof(buf));
    if (got > 0) {
      data.append(buf, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  close(idPipe[0]);
  const Decoded d = decodeRecords(data);
  if (!d.errors.empty()) {
    *error = d.errors.front();
    return false;
  }
  if (d.id.size() != sizeof(id->internal)) {
    *error = "the process that calls ncclGetUniqueId sent no id within 60 s";
    return false;
  }
  memcpy(id->internal, d.id.data(), sizeof(id->internal));
  return true;
}

void stopIdKeeper(IdKeeper* keeper) {
  if (keeper->release >= 0) close(keeper->release);
  keeper->release = -1;
  if (keeper->pid > 0) {
    int status = 0;
    // The keeper exits at once when its pipe closes; a stuck one is killed rather than waited for.
    for (int i = 0; i < 500 && waitpid(keeper->pid, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (kill(keeper->pid, SIGKILL) == 0) waitpid(keeper->pid, &status, 0);
  }
  keeper->pid = -1;
}

RunReport runProcs(int nranks, const std::function<void(RankCtx&)>& body, const RunOptions& opts) {
  RunReport report;
  const double t0 = nowSeconds();
  ncclUniqueId id{};
  IdKeeper keeper;
  std::string keeperError;
  if (!startIdKeeper(&id, &keeper, &keeperError)) {
    stopIdKeeper(&keeper);
    report.failures.push_back(keeperError);
    return report;
  }
  fflush(stdout);
  fflush(stderr);
  std::vector<Child> children;
  for (int r = 0; r < nranks; ++r) {
    if (opts.absent.count(r)) continue;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      report.failures.push_back(std::string("pipe2: ") + strerror(errno));
      break;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      close(keeper.release);
      for (const Child& c : children) close(c.fd);
      RankCtx ctx;
      ctx.rank = r;
      ctx.nranks = nranks;
      ctx.id = id;
      childMain(ctx, body, opts, fds[1]);
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      report.failures.push_back(std::string("fork: ") + strerror(errno));
      break;
    }
    Child c;
    c.rank = r;
    c.pid = pid;
    c.fd = fds[0];
    children.push_back(std::move(c));
  }

  // Read every pipe until it closes or the deadline passes.
  const double deadline = t0 + opts.deadlineMs / 1000.0;
  for (;;) {
    std::vector<pollfd> pfds;
    std::vector<Child*> owners;
    for (Child& c : children) {
      if (c.fd < 0) continue;
      pfds.push_back({c.fd, POLLIN, 0});
      owners.push_back(&c);
    }
    if (pfds.empty()) break;
    const double left = deadline - nowSeconds();
    if (left <= 0) break;
    const int n = poll(pfds.data(), pfds.size(), static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t got = read(pfds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        owners[i]->data.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close(owners[i]->fd);
        owners[i]->fd = -1;
      }
    }
  }
  // Reap; whoever is still alive at the deadline has hung and is killed.
  for (;;) {
    bool pending = false;
    for (Child& c : children) {
      if (c.reaped) continue;
      const pid_t w = waitpid(c.pid, &c.status, WNOHANG);
      if (w == c.pid) {
        c.reaped = true;
      } else {
        pending = true;
      }
    }
    if (!pending) break;
    if (nowSeconds() > deadline) {
      for (Child& c : children) {
        if (c.reaped) continue;
        c.stacks = threadStacks(c.pid);
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &c.status, 0);
        c.reaped = true;
        c.killedByUs = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  stopIdKeeper(&keeper);
  std::vector<DigestEntry> digests;
  for (Child& c : children) {
    if (c.fd >= 0) close(c.fd);
    Decoded d = decodeRecords(c.data);
    const std::string who = "rank " + std::to_string(c.rank) + " (pid " + std::to_string(c.pid) + ")";
    const bool expectKill = opts.expectKilled.count(c.rank) != 0;
    const std::string where = d.lastStep.empty() ? "" : " (last step: " + d.lastStep + ")";
    if (c.killedByUs) {
      report.failures.push_back(who + ": hung: still running after the " + std::to_string(opts.deadlineMs) +
                                " ms deadline; killed by the harness" + where +
                                (c.stacks.empty() ? "" : "; its threads were at:\n" + c.stacks));
    } else if (WIFSIGNALED(c.status)) {
      const int sig = WTERMSIG(c.status);
      if (!(expectKill && sig == SIGKILL))
        report.failures.push_back(who + ": died with signal " + std::to_string(sig) + " (" + strsignal(sig) + ")" +
                                  where);
    } else if (WIFEXITED(c.status) && WEXITSTATUS(c.status) != 0) {
      report.failures.push_back(who + ": exited with status " + std::to_string(WEXITSTATUS(c.status)));
    } else if (expectKill) {
      report.failures.push_back(who + ": was expected to be killed by SIGKILL but exited normally");
    } else if (!d.complete) {
      report.failures.push_back(who + ": ended without reporting its results");
    }
    appendFailures(rankLabel(c.rank), d.errors, &report.failures);
    addDigests(rankLabel(c.rank), d.digests, &digests);
  }
  compareDigests(digests, &report.failures);
  report.seconds = nowSeconds() - t0;
  return report;
}

}  // namespace

RunReport runRanks(Mode mode, int nranks, const std::function<void(RankCtx&)>& body, const RunOptions& opts) {
  switch (mode) {
    case Mode::kThreads: return runThreads(nranks, body, opts);
    case Mode::kProcs: return runProcs(nranks, body, opts);
    case Mode::kClique: break;
  }
  RunReport report;
  report.failures.push_back("runRanks: the clique mode runs through runClique");
  return report;
}

RunReport runClique(int nranks, const std::function<void(CliqueCtx&)>& body, const RunOptions& opts) {
  RunReport report;
  const double t0 = nowSeconds();
  auto ctx = std::make_shared<CliqueCtx>();
  ctx->nranks = nranks;
  auto completion = std::make_shared<Completion>();
  completion->finished.assign(1, false);
  completion->remaining = 1;
  std::thread driver([ctx, completion, &body, &opts] {
    bool ready = true;
    if (opts.initComm) {
      ctx->comms.assign(ctx->nranks, nullptr);
      const ncclResult_t r = ncclCommInitAll(ctx->comms.data(), ctx->nranks, nullptr);
      if (r != ncclSuccess) {
        ctx->failf("ncclCommInitAll(%d, NULL) returned %d (%s): \"%s\"", ctx->nranks, static_cast<int>(r),
                   ncclGetErrorString(r), lastError(nullptr).c_str());
        ctx->comms.clear();
        ready = false;
      }
    }
    if (ready) {
      try {
        body(*ctx);
      } catch (const std::exception& e) {
        ctx->failf("exception: %s", e.what());
      } catch (...) {
        ctx->fail("unknown exception");
      }
    }
    for (ncclComm_t& c : ctx->comms) {
      if (c == nullptr) continue;
      ctx->ok(ncclCommDestroy(c), "ncclCommDestroy (harness)");
      c = nullptr;
    }
    completion->done(0);
  });
  if (!completion->wait(opts.deadlineMs)) {
    dieHung("clique run (one thread drives every rank)", {}, opts.deadlineMs, {"last step: " + ctx->lastStep()});
  }
  driver.join();
  appendFailures("clique", ctx->errors(), &report.failures);
  std::vector<DigestEntry> digests;
  addDigests("comm", ctx->digests(), &digests);  // one entry per rank, in rank order
  compareDigests(digests, &report.failures);
  report.seconds = nowSeconds() - t0;
  return report;
}

SharedCounter::SharedCounter() {
  void* p = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  value_ = new (p) std::atomic<int>(0);
}

SharedCounter::~SharedCounter() { munmap(value_, sizeof(std::atomic<int>)); }

void SharedCounter::add() { value_->fetch_add(1); }

bool SharedCounter::waitFor(int n, double timeoutSec) const {
  const double end = nowSeconds() + timeoutSec;
  while (value_->load() < n) {
    if (nowSeconds() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace weft_test
