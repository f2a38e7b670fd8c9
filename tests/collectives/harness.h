// Multi-rank harness for Weft's collective suites: runs one function as N ranks, in the spirit of
// gloo's tests, in one of three ways:
//   - threads: N threads of this process, each calling ncclCommInitRank with one shared id;
//   - procs:   N forked processes (the id is made before fork); a child cannot use gtest's
//              assertions, so every rank records its failures as strings that come back over a
//              pipe, and a child that outlives its deadline is killed and named;
//   - clique:  one thread drives every rank through ncclCommInitAll and ncclGroupStart/End, as a
//              single-process multi-GPU program does.
// No run may hang: every rank has a deadline. A hung thread cannot be killed, so in the threads
// modes the harness prints what it knows (which ranks hung, every failure so far) and ends the
// process with a failure code.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api.h"

namespace weft_test {

enum class Mode { kThreads, kProcs, kClique };
const char* modeName(Mode mode);

// The tier a test binary was built for: weft_coll_threads_tests or weft_coll_procs_tests.
#if defined(WEFT_COLL_TIER_PROCS) && WEFT_COLL_TIER_PROCS
inline constexpr Mode kTier = Mode::kProcs;
#else
inline constexpr Mode kTier = Mode::kThreads;
#endif

// Collects failures as text. Used from threads and from forked children alike.
class Reporter {
 public:
  void fail(std::string msg);
  void failf(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  // Records a failure naming `what`, both codes and ncclGetLastError(comm) unless got == want.
  bool expect(ncclResult_t got, ncclResult_t want, const char* what, ncclComm_t comm = nullptr);
  bool ok(ncclResult_t got, const char* what, ncclComm_t comm = nullptr) {
    return expect(got, ncclSuccess, what, comm);
  }
  // A value every rank must report identically (e.g. a hash of an AllReduce result); the harness
  // compares them across ranks after the run.
  void digest(const std::string& key, uint64_t value) { digests_.emplace_back(key, value); }
  bool failed() const { return !errors_.empty(); }
  // Names what the rank is doing now (e.g. the call it is about to make). When a rank hangs, the
  // harness reports its last step; a forked child sends each step to the parent as it happens.
  void step(const std::string& what);
  std::string lastStep() const;
  void setStepSink(int fd) { stepFd_ = fd; }

  std::vector<std::string>& errors() { return errors_; }
  std::vector<std::pair<std::string, uint64_t>>& digests() { return digests_; }

 private:
  std::vector<std::string> errors_;
  std::vector<std::pair<std::string, uint64_t>> digests_;
  mutable std::mutex stepMu_;  // the watchdog reads the step while the rank runs
  std::string step_;
  int stepFd_ = -1;
};

// One rank of a threads or procs run.
struct RankCtx : Reporter {
  int rank = 0;
  int nranks = 0;
  ncclUniqueId id{};          // made once per run, before any rank starts
  ncclComm_t comm = nullptr;  // set by the harness when RunOptions::initComm; set it to nullptr
                              // after destroying or aborting it yourself
};

// Every rank of a clique run, driven by one thread.
struct CliqueCtx : Reporter {
  int nranks = 0;
  std::vector<ncclComm_t> comms;  // from ncclCommInitAll when RunOptions::initComm
};

struct RunOptions {
  int deadlineMs = 60000;      // per rank, from its start; a rank still running then has hung
  bool initComm = true;        // the harness inits ctx.comm before and destroys it after the body
  std::set<int> absent;        // ranks that never start (peers that never arrive)
  std::set<int> expectKilled;  // procs: ranks expected to die by SIGKILL (not a failure then)
};

struct RunReport {
  std::vector<std::string> failures;  // each prefixed with the rank it came from
  double seconds = 0;
  bool ok() const { return failures.empty(); }
  std::string text() const;
};

RunReport runRanks(Mode mode, int nranks, const std::function<void(RankCtx&)>& body, const RunOptions& opts = {});
RunReport runClique(int nranks, const std::function<void(CliqueCtx&)>& body, const RunOptions& opts = {});

#define EXPECT_RUN_OK(expr)                     \
  do {                                          \
    const ::weft_test::RunReport _rep = (expr); \
    EXPECT_TRUE(_rep.ok()) << _rep.text();      \
  } while (0)

// --- small helpers shared by the suites ---

double nowSeconds();
// ncclGetLastError(comm), "" when it returns NULL.
std::string lastError(ncclComm_t comm);
// AllReduce (int64 sum) of `value` over comm, on a thousand elements; records a failure unless every
// element is `want`.
void checkSum(RankCtx& ctx, ncclComm_t comm, int64_t value, int64_t want, const char* what);
// Records a failure unless comm has wantCount ranks and this rank is wantRank in it.
void expectShape(RankCtx& ctx, ncclComm_t comm, int wantCount, int wantRank, const char* what);
// Case-insensitive: does msg contain any of the words?
bool mentionsAny(const std::string& msg, std::initializer_list<const char*> words);
// Does msg name rank r ("rank 2", "ranks 1, 2", "peer 2", "missing: [2]" ...)?
bool namesRank(const std::string& msg, int r);
// Polls ncclCommGetAsyncError until it leaves ncclInProgress or timeoutMs passes; returns the last
// state (ncclInProgress on timeout, or the call's own error).
ncclResult_t waitNotInProgress(ncclComm_t comm, int timeoutMs);
// Names of /dev/shm entries that contain `needle`.
std::set<std::string> listShm(const std::string& needle);
// Addresses of this network namespace's Unix sockets (abstract ones start with '@', as in
// /proc/net/unix) that contain `needle`.
std::set<std::string> listUnixSockets(const std::string& needle);

// Weft reads its environment once per process, so a test that sets WEFT_TIMEOUT_MS (or any other
// parameter) only means it when it is the first test of its process, as under ctest. main()
// counts the tests of the process; other runs skip such tests with a note.
void noteTestStarted();
bool processIsFresh();
#define WEFT_REQUIRE_FRESH_PROCESS(why)                                                              \
  do {                                                                                               \
    if (!::weft_test::processIsFresh())                                                              \
      GTEST_SKIP() << (why) << ": Weft reads its environment once per process; run this test alone " \
                   << "(ctest runs every test in a process of its own)";                             \
  } while (0)

// A counter that every rank of a run sees, threads and forked processes alike (the mapping is made
// before the ranks start and is inherited across fork).
class SharedCounter {
 public:
  SharedCounter();
  ~SharedCounter();
  SharedCounter(const SharedCounter&) = delete;
  SharedCounter& operator=(const SharedCounter&) = delete;
  void add();
  // True once the count reached n; false after timeoutSec.
  bool waitFor(int n, double timeoutSec) const;

 private:
  std::atomic<int>* value_;
};

// Sets an environment variable for the lifetime of the object (Weft reads its parameters once
// per process, so set these before the first Weft call of the test's process).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::string old_;
  bool hadOld_ = false;
};

}  // namespace weft_test
