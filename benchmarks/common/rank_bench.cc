// Weft perf tools: one rank's sweep over types, operators, roots and sizes, with nccl-tests'
// timing, validation and output (see benchmarks/README.md for what each column means).
#include "rank_bench.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weftbench {

namespace {

using Clock = std::chrono::steady_clock;

// Formats value in exactly width characters with as many decimals (2, 1, 0) as fit.
std::string fixedWidth(double value, int width) {
  char buf[64];
  for (int decimals = 2; decimals >= 0; decimals--) {
    const int n = std::snprintf(buf, sizeof buf, "%*.*f", width, decimals, value);
    if (n <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return buf;
}

struct RankInfo {
  int32_t rank;
  int32_t pid;
  char host[120];
};
static_assert(sizeof(RankInfo) == 128, "RankInfo is gathered as 128 bytes");

// Frees with std::free (buffers from std::aligned_alloc) or, for -R 2, ncclMemFree.
struct FreeDeleter {
  bool ncclMemory = false;
  void operator()(void* p) const {
    if (ncclMemory)
      (void)ncclMemFree(p);
    else
      std::free(p);
  }
};

class RankBench {
 public:
  RankBench(const CollDesc& coll, const Options& o, const RankSetup& s)
      : coll_(coll), o_(o), rank_(s.rank), nranks_(s.nranks), threads_(s.threadsPerProcess), comm_(s.comm),
        printer_(s.rank == 0) {}

  int run();

 private:
  void print(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void flush() {
    if (printer_) std::fflush(stdout);
  }
  void call(const char* what, ncclResult_t r) {
    if (r != ncclSuccess) failCall(coll_.name, rank_, what, r, comm_);
  }
  void barrier();
  double reduceTime(double sec);
  int64_t sumAcrossRanks(int64_t v);
  void printHeader();
  void timeTest(ncclDataType_t type, OpKind op, int root);
  void setupSize(size_t size);
  void startColl(bool inPlace, size_t iter);
  void benchTime(bool inPlace);
  void initData(bool inPlace);
  int64_t verify(bool inPlace);
  // -R 1: ncclCommRegister both buffers; -R 2: register them (from ncclMemAlloc) as symmetric
  // windows (collective). Weft reads a registered input in place where it can (DDA AllReduce:
  // between threads with either, between processes with windows), as nccl-tests' -R lets NCCL use
  // its zero-copy paths.
  void registerBuffers() {
    void* bufs[2] = {send_.get(), recv_.get()};
    for (int i = 0; i < 2; ++i) {
      if (o_.localRegister == 1) call("ncclCommRegister", ncclCommRegister(comm_, bufs[i], allocBytes_, &handles_[i]));
      if (o_.localRegister == 2)
        call("ncclCommWindowRegister",
             ncclCommWindowRegister(comm_, bufs[i], allocBytes_, &windows_[i], NCCL_WIN_COLL_SYMMETRIC));
    }
  }
  void deregisterBuffers() {
    for (int i = 0; i < 2; ++i) {
      if (handles_[i] != nullptr) call("ncclCommDeregister", ncclCommDeregister(comm_, handles_[i]));
      if (windows_[i] != nullptr) call("ncclCommWindowDeregister", ncclCommWindowDeregister(comm_, windows_[i]));
      handles_[i] = nullptr;
      windows_[i] = nullptr;
    }
  }
  char* sendBase() const { return static_cast<char*>(send_.get()) + o_.unalign * ts_; }
  char* recvBase() const { return static_cast<char*>(recv_.get()) + o_.unalign * ts_; }

  const CollDesc& coll_;
  const Options& o_;
  const int rank_, nranks_, threads_;
  ncclComm_t comm_;
  const bool printer_;

  std::unique_ptr<void, FreeDeleter> send_, recv_;
  size_t allocBytes_ = 0;                         // of each
  void* handles_[2] = {nullptr, nullptr};         // -R 1
  ncclWindow_t windows_[2] = {nullptr, nullptr};  // -R 2
  size_t bufBytes_ = 0;

  // The test in progress.
  ncclDataType_t type_ = ncclFloat32;
  size_t ts_ = 4;
  OpKind opKind_ = OpKind::kNone;
  ncclRedOp_t op_ = ncclSum;
  int root_ = -1;
  Counts counts_;
  std::optional<Generator> gen_;
  uint64_t rep_ = 0;

  int64_t errors_ = 0;  // tests (on this rank) with at least one wrong element
  double bwSum_ = 0;
  int64_t bwCount_ = 0;
};

void RankBench::print(const char* fmt, ...) {
  if (!printer_) return;
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
}

void RankBench::barrier() {
  int32_t v = 0;
  call("ncclAllReduce (barrier)", ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, comm_, nullptr));
}

double RankBench::reduceTime(double sec) {
  double v = sec;
  ncclRedOp_t op = ncclSum;
  switch (o_.average) {
    case 0: v = rank_ == 0 ? sec : 0; break;  // rank 0's time, shared with everyone
    case 2: op = ncclMin; break;
    case 3: op = ncclMax; break;
    default: break;
  }
  call("ncclAllReduce (time)", ncclAllReduce(&v, &v, 1, ncclFloat64, op, comm_, nullptr));
  if (o_.average == 1) v /= nranks_;
  return v;
}

int64_t RankBench::sumAcrossRanks(int64_t v) {
  int64_t x = v;
  call("ncclAllReduce (count)", ncclAllReduce(&x, &x, 1, ncclInt64, ncclSum, comm_, nullptr));
  return x;
}

void RankBench::printHeader() {
  RankInfo mine{};
  mine.rank = rank_;
  mine.pid = static_cast<int32_t>(getpid());
  if (gethostname(mine.host, sizeof mine.host - 1) != 0) std::strcpy(mine.host, "unknown");
  std::vector<RankInfo> all(nranks_);
  call("ncclAllGather (rank info)", ncclAllGather(&mine, all.data(), sizeof(RankInfo), ncclUint8, comm_, nullptr));
  if (!printer_) return;

  // The library's own name when it is Weft (it exports weftGetVersionString), else NCCL's version.
  using VersionFn = const char* (*)();
  auto weftVersion = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "weftGetVersionString"));
  int version = 0;
  ncclGetVersion(&version);
  if (weftVersion)
    print("# Library: %s\n", weftVersion());
  else
    print("# Library: NCCL %d\n", version);
  for (const auto& n : o_.notes) print("%s\n", n.c_str());
  print("# Collective test starting: %s\n", coll_.name);
  char step[64];
  if (o_.stepFactor > 1) {
    if (o_.stepFactor == static_cast<double>(static_cast<long>(o_.stepFactor)))
      std::snprintf(step, sizeof step, "%ld(factor)", static_cast<long>(o_.stepFactor));
    else
      std::snprintf(step, sizeof step, "%g(factor)", o_.stepFactor);
  } else {
    std::snprintf(step, sizeof step, "%zu(bytes)", o_.stepBytes);
  }
  print(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %s warmup iters: %d iters: %d agg iters: %d "
      "validation: %d graph: %d\n",
      threads_, 1, o_.minBytes, o_.maxBytes, step, o_.warmupIters, o_.iters, o_.aggIters, o_.check, 0);
  print("#\n");
  print("# Using devices\n");
  for (const RankInfo& ri : all) {
    char host[sizeof ri.host];
    std::memcpy(host, ri.host, sizeof host);
    host[sizeof host - 1] = 0;
    // "device": the rank's index among the ranks on its host.
    int local = 0;
    for (const RankInfo& other : all)
      if (other.rank < ri.rank && std::strncmp(other.host, ri.host, sizeof host) == 0) local++;
    print("#  Rank %2d Group %2d Pid %6d on %10s device %2d [host]\n", ri.rank, 0, ri.pid, host, local);
  }
  print("#\n");
  print("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "",
        "");
  print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop",
        "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
        "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  flush();
}

void RankBench::setupSize(size_t size) { counts_ = coll_.counts(size / ts_, ts_, nranks_); }

void RankBench::startColl(bool inPlace, size_t iter) {
  const size_t total = std::max(counts_.send, counts_.recv) * ts_;
  size_t shift = 0;
  if (o_.rotate && total > 0) {
    const size_t steps = std::max<size_t>(o_.maxBytes / total, 1);
    shift = total * (iter % steps);
  }
  char* recv = recvBase() + shift;
  char* send = sendBase() + shift;
  RunArgs a{};
  a.sendbuff = inPlace ? recv + counts_.sendInplace * ts_ * rank_ : send;
  a.recvbuff = inPlace ? recv + counts_.recvInplace * ts_ * rank_ : recv;
  a.count = counts_.param;
  a.type = type_;
  a.op = op_;
  a.root = root_;
  a.comm = comm_;
  a.rank = rank_;
  a.nranks = nranks_;
  a.recvAlloc = recv_.get();
  a.recvAllocBytes = allocBytes_;
  const ncclResult_t r = coll_.run(a);
  if (r != ncclSuccess) failCall(coll_.name, rank_, coll_.call, r, comm_);
}

void RankBench::initData(bool inPlace) {
  DataSpec spec;
  spec.type = type_;
  spec.op = coll_.opUse == OpUse::kReduce ? opKind_ : OpKind::kNone;
  spec.nranks = nranks_;
  // The same on every rank: every rank runs the same sequence of checks.
  spec.seed = ++rep_ * 1000003ull + static_cast<uint64_t>(type_) * 131ull + static_cast<uint64_t>(opKind_);
  gen_.emplace(spec);
  const size_t total = std::max(counts_.send, counts_.recv) * ts_;
  if (!inPlace) {
    fillSentinel(recvBase(), counts_.recv * ts_);
    gen_->fill(rank_, 0, counts_.send, sendBase());
  } else {
    fillSentinel(recvBase(), total);
    gen_->fill(rank_, 0, counts_.send, recvBase() + counts_.sendInplace * ts_ * rank_);
  }
}

int64_t RankBench::verify(bool inPlace) {
  const char* out = recvBase() + (inPlace ? counts_.recvInplace * ts_ * rank_ : 0);
  std::vector<Segment> segs;
  coll_.expect(rank_, nranks_, root_, counts_, &segs);
  std::string first;
  const int64_t wrong = gen_->check(segs, out, &first);
  if (wrong && std::getenv("WEFT_BENCH_VERBOSE")) {
    std::fprintf(stderr, "%s: rank %d: %s %s count %zu %s: %lld wrong, first: %s\n", coll_.name, rank_,
                 typeDesc(type_).name, opName(opKind_), counts_.param, inPlace ? "in-place" : "out-of-place",
                 static_cast<long long>(wrong), first.c_str());
  }
  return wrong;
}

void RankBench::benchTime(bool inPlace) {
  if (inPlace && coll_.inPlace == InPlace::kNotRun) {
    print("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  // One untimed call, then every rank starts the timed batch together.
  startColl(inPlace, 0);
  barrier();
  const auto t0 = Clock::now();
  for (int it = 0; it < o_.iters; it++) {
    if (o_.aggIters > 1) call("ncclGroupStart", ncclGroupStart());
    for (int a = 0; a < o_.aggIters; a++) startColl(inPlace, static_cast<size_t>(it) * o_.aggIters + a);
    if (o_.aggIters > 1) call("ncclGroupEnd", ncclGroupEnd());
  }
  const double local = std::chrono::duration<double>(Clock::now() - t0).count() /
                       (static_cast<double>(o_.iters) * o_.aggIters);
  const double sec = reduceTime(local);
  double algBw = 0, busBw = 0;
  coll_.bandwidth(counts_.param, ts_, sec, nranks_, &algBw, &busBw);
  barrier();

  const bool report = o_.check > 0 && (!inPlace || coll_.inPlace == InPlace::kChecked);
  int64_t wrong = 0;
  if (report) {
    for (int c = 0; c < o_.check; c++) {
      initData(inPlace);
      startColl(inPlace, 0);
      const int64_t local = verify(inPlace);
      if (local) errors_++;
      wrong = sumAcrossRanks(local);
      if (wrong) break;
    }
  }
  const std::string t = fixedWidth(sec * 1e6, 7), alg = fixedWidth(algBw, 6), bus = fixedWidth(busBw, 6);
  if (report)
    print("  %7s  %6s  %6s  %6g", t.c_str(), alg.c_str(), bus.c_str(), static_cast<double>(wrong));
  else
    print("  %7s  %6s  %6s    N/A", t.c_str(), alg.c_str(), bus.c_str());
  bwSum_ += busBw;
  bwCount_++;
}

void RankBench::timeTest(ncclDataType_t type, OpKind op, int root) {
  type_ = type;
  ts_ = typeDesc(type).size;
  opKind_ = op;
  root_ = root;
  op_ = builtinOp(op);
  bool customOp = false;
  if (coll_.opUse == OpUse::kReduce && op == OpKind::kMulSum) {
    uint64_t scalar = mulSumScalarBits(type);
    call("ncclRedOpCreatePreMulSum", ncclRedOpCreatePreMulSum(&op_, &scalar, type, ncclScalarHostImmediate, comm_));
    customOp = true;
  }
  const char* opCol = "none";
  if (coll_.opUse == OpUse::kReduce || coll_.opUse == OpUse::kIgnored) opCol = opName(op);
  if (coll_.opUse == OpUse::kBlank) opCol = "";

  barrier();
  // Warm-up: every size from minBytes to maxBytes, doubling.
  if (o_.warmupIters > 0) {
    for (size_t size = o_.minBytes; size <= o_.maxBytes; size = size ? size * 2 : 1) {
      setupSize(size);
      for (int w = 0; w < o_.warmupIters; w++) startColl(false, static_cast<size_t>(w));
    }
  }

  auto next = [&](size_t size) {
    if (o_.stepFactor > 1) return std::max(size + 1, static_cast<size_t>(static_cast<double>(size) * o_.stepFactor));
    return size + o_.stepBytes;
  };
  int cycle = 0;
  do {
    for (size_t size = o_.minBytes; size <= o_.maxBytes; size = next(size)) {
      setupSize(size);
      print("%12zu  %12zu  %8s  %6s  %6i", std::max(counts_.send, counts_.recv) * ts_, counts_.param,
            typeDesc(type).name, opCol, root);
      benchTime(false);
      benchTime(true);
      print("\n");
      flush();
      if (next(size) == size) break;
    }
    cycle++;
  } while (o_.runCycles == 0 || cycle < o_.runCycles);

  if (customOp) call("ncclRedOpDestroy", ncclRedOpDestroy(op_, comm_));
}

int RankBench::run() {
  if (coll_.needsPowerOfTwo && (nranks_ & (nranks_ - 1)) != 0) {
    if (printer_) std::fprintf(stderr, "%s: needs a power-of-two number of ranks (got %d)\n", coll_.name, nranks_);
    return 1;
  }
  if (coll_.rooted && o_.root >= nranks_) {
    if (printer_) std::fprintf(stderr, "%s: root %d out of range (%d ranks)\n", coll_.name, o_.root, nranks_);
    return 1;
  }
  // Buffers: maxBytes plus the misalignment, page aligned, touched now so that first-use page
  // faults stay out of the timings.
  bufBytes_ = o_.maxBytes + o_.unalign * 8 + 64;
  const size_t alloc = (bufBytes_ + 4095) / 4096 * 4096;
  allocBytes_ = alloc;
  if (o_.localRegister == 2) {
    // Windows over ncclMemAlloc memory, as NCCL's symmetric kernels require; in host mode the
    // other processes of the host can then map them and read inputs in place.
    void* s = nullptr;
    void* r = nullptr;
    call("ncclMemAlloc", ncclMemAlloc(&s, alloc));
    call("ncclMemAlloc", ncclMemAlloc(&r, alloc));
    send_ = std::unique_ptr<void, FreeDeleter>(s, FreeDeleter{true});
    recv_ = std::unique_ptr<void, FreeDeleter>(r, FreeDeleter{true});
  } else {
    send_.reset(std::aligned_alloc(4096, alloc));
    recv_.reset(std::aligned_alloc(4096, alloc));
  }
  if (!send_ || !recv_) {
    std::fprintf(stderr, "%s: rank %d: cannot allocate 2 x %zu bytes\n", coll_.name, rank_, alloc);
    return 1;
  }
  std::memset(send_.get(), 0, alloc);
  std::memset(recv_.get(), 0, alloc);
  registerBuffers();

  printHeader();

  std::vector<int> roots;
  if (!coll_.rooted)
    roots.push_back(-1);
  else if (o_.root < 0)
    for (int r = 0; r < nranks_; r++) roots.push_back(r);
  else
    roots.push_back(o_.root);
  std::vector<OpKind> ops = o_.ops;
  if (coll_.opUse == OpUse::kNone || coll_.opUse == OpUse::kBlank) ops = {OpKind::kNone};

  for (ncclDataType_t t : o_.types)
    for (OpKind op : ops)
      for (int r : roots) timeTest(t, op, r);

  deregisterBuffers();
  const int64_t errors = sumAcrossRanks(errors_);
  const double avgBw = bwCount_ ? bwSum_ / static_cast<double>(bwCount_) : 0;
  print("# %-20s : %lld %s\n", "Out of bounds values", static_cast<long long>(errors), errors ? "FAILED" : "OK");
  print("# %-20s : %g \n", "Avg bus bandwidth", avgBw);
  print("#\n");
  print("# Collective test concluded: %s\n", coll_.name);
  print("\n");
  flush();
  return errors ? 1 : 0;
}

std::mutex gCommsMu;
std::vector<std::pair<ncclComm_t, int>> gComms;

}  // namespace

int runRank(const CollDesc& coll, const Options& opts, const RankSetup& setup) {
  RankBench b(coll, opts, setup);
  return b.run();
}

void failCall(const char* tool, int rank, const char* call, ncclResult_t res, ncclComm_t comm) {
  const char* last = ncclGetLastError(comm);
  std::fflush(stdout);
  std::fprintf(stderr, "%s: rank %d: %s failed: %s (%d)%s%s\n", tool, rank, call, ncclGetErrorString(res),
               static_cast<int>(res), last && *last ? ": " : "", last ? last : "");
  std::fflush(stderr);
  _exit(2);
}

void registerComm(ncclComm_t comm, int rank) {
  std::lock_guard<std::mutex> lk(gCommsMu);
  gComms.emplace_back(comm, rank);
}

void unregisterComm(ncclComm_t comm) {
  std::lock_guard<std::mutex> lk(gCommsMu);
  gComms.erase(std::remove_if(gComms.begin(), gComms.end(), [&](const auto& p) { return p.first == comm; }),
               gComms.end());
}

std::string dumpCommStates() {
  using DumpFn = ncclResult_t (*)(ncclComm_t, char*, size_t);
  auto dump = reinterpret_cast<DumpFn>(dlsym(RTLD_DEFAULT, "weftCommDumpState"));
  if (!dump) return "";
  std::string out;
  std::lock_guard<std::mutex> lk(gCommsMu);
  for (const auto& [comm, rank] : gComms) {
    char buf[2048];
    buf[0] = 0;
    if (dump(comm, buf, sizeof buf) == ncclSuccess) out += "  rank " + std::to_string(rank) + ": " + buf + "\n";
  }
  return out;
}

}  // namespace weftbench
