// allgatherv_compare: weftAllGatherv against what users of NCCL do instead when the ranks' pieces
// differ in size: pad every piece to the largest, ncclAllGather the padded pieces, then compact
// them (PyLops-MPI does this). Both run in one session, interleaved (the order flips every
// repetition), each repetition timing `--iters` calls; a call's time is the slowest rank's. The
// table gives the medians over the repetitions and their ratio (padded / weftAllGatherv: above 1
// weftAllGatherv is faster). The padded variant's time includes its copies (the piece into the
// padded send buffer, the n pieces out of the padded result), as a user pays them.
//
//   allgatherv_compare -N 4 -b 64K -e 64M -f 4 --reps 5 --iters 20 --skew onebig,ramp,near
//
// -N n: n forked processes (default 2); -T n: n threads of this process instead. Sizes are the
// gathered vector's bytes (float32). Skews: onebig = rank 0's piece 32 times each other's;
// ramp = rank r's piece proportional to r + 1; near = as even as the size allows (pieces differ by
// at most one element, so padding costs nothing: the ratio shows weftAllGatherv's own overhead).
// Both results are checked against each other before timing.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/options.h"
#include "nccl.h"
#include "weft/weft.h"

namespace {

struct Config {
  int procs = 2, threads = 0;
  size_t minBytes = 1 << 16, maxBytes = 1 << 24;
  double factor = 4;
  int reps = 5, iters = 20;
  std::vector<std::string> skews = {"onebig", "ramp", "near"};
};

[[noreturn]] void die(const char* what, ncclResult_t r, ncclComm_t comm) {
  std::fprintf(stderr, "allgatherv_compare: %s failed: %s (%s)\n", what, ncclGetErrorString(r),
               ncclGetLastError(comm) ? ncclGetLastError(comm) : "");
  std::exit(2);
}
#define CHECK(call)                              \
  do {                                           \
    ncclResult_t r_ = (call);                    \
    if (r_ != ncclSuccess) die(#call, r_, comm); \
  } while (0)

// Element counts of the ranks' pieces for `total` elements, and their displacements (rank order).
void layout(const std::string& skew, size_t total, int n, std::vector<size_t>* counts, std::vector<size_t>* displs) {
  std::vector<double> w(n, 1.0);
  if (skew == "onebig") w[0] = 32;
  if (skew == "ramp")
    for (int r = 0; r < n; ++r) w[r] = r + 1;
  double sum = 0;
  for (double x : w) sum += x;
  counts->assign(n, 0);
  size_t given = 0;
  for (int r = 0; r < n; ++r) given += (*counts)[r] = size_t(double(total) * w[r] / sum);
  for (int r = 0; given < total; r = (r + 1) % n, ++given) ++(*counts)[r];  // the remainder, one each
  displs->assign(n, 0);
  for (int r = 1; r < n; ++r) (*displs)[r] = (*displs)[r - 1] + (*counts)[r - 1];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Bufs {
  std::vector<float> send, recv, padSend, padRecv, compact;
};

// One padded AllGather as a user writes it: pad, gather, compact.
void padded(Bufs& b, const std::vector<size_t>& counts, const std::vector<size_t>& displs, size_t maxCount, int rank,
            ncclComm_t comm) {
  std::memcpy(b.padSend.data(), b.send.data(), counts[rank] * sizeof(float));
  CHECK(ncclAllGather(b.padSend.data(), b.padRecv.data(), maxCount, ncclFloat32, comm, nullptr));
  for (size_t r = 0; r < counts.size(); ++r)
    std::memcpy(b.compact.data() + displs[r], b.padRecv.data() + r * maxCount, counts[r] * sizeof(float));
}

// Seconds per call of `iters` calls of f, the slowest rank's.
template <class F>
double timed(int iters, ncclComm_t comm, F&& f) {
  std::vector<double> t(1);
  CHECK(ncclAllReduce(t.data(), t.data(), 1, ncclFloat64, ncclSum, comm, nullptr));  // a barrier
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  t[0] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  CHECK(ncclAllReduce(t.data(), t.data(), 1, ncclFloat64, ncclMax, comm, nullptr));
  return t[0];
}

int runRank(const Config& cfg, const ncclUniqueId& id, int rank, int n) {
  ncclComm_t comm = nullptr;
  CHECK(ncclCommInitRank(&comm, n, id, rank));
  if (rank == 0) {
    std::printf(
        "# %s\n# allgatherv_compare: %d ranks (%s), float32, %d repetitions of %d calls, medians of the\n"
        "# slowest rank's time per call; ratio = padded / weftAllGatherv (above 1: weftAllGatherv faster)\n",
        weftGetVersionString(), n, cfg.threads ? "threads" : "processes", cfg.reps, cfg.iters);
    std::printf("#  skew         bytes    largest   smallest   allgatherv_us    padded_us   ratio\n");
  }
  // One set of buffers for the whole run, sized for the largest call and touched once, as
  // nccl-tests does: no size pays for allocating or faulting in memory.
  Bufs b;
  const size_t most = cfg.maxBytes / sizeof(float);
  b.send.assign(most, 0.0f);
  b.recv.assign(most, 0.0f);
  b.padSend.assign(most, 0.0f);
  b.padRecv.assign(size_t(n) * most, 0.0f);
  b.compact.assign(most, 0.0f);
  for (const std::string& skew : cfg.skews) {
    for (size_t bytes = cfg.minBytes; bytes <= cfg.maxBytes;
         bytes = std::max(bytes + 1, size_t(double(bytes) * cfg.factor))) {
      const size_t total = bytes / sizeof(float);
      std::vector<size_t> counts, displs;
      layout(skew, total, n, &counts, &displs);
      const size_t maxCount = *std::max_element(counts.begin(), counts.end());
      const size_t minCount = *std::min_element(counts.begin(), counts.end());
      for (size_t i = 0; i < counts[rank]; ++i) b.send[i] = float(rank * 1000003 + i % 65536);
      std::fill(b.recv.begin(), b.recv.begin() + total, -1.0f);
      std::fill(b.compact.begin(), b.compact.begin() + total, -2.0f);
      auto v = [&] {
        CHECK(weftAllGatherv(b.send.data(), b.recv.data(), counts.data(), displs.data(), ncclFloat32, comm, nullptr));
      };
      auto p = [&] { padded(b, counts, displs, maxCount, rank, comm); };
      v();
      p();
      if (std::memcmp(b.recv.data(), b.compact.data(), total * sizeof(float)) != 0) {
        std::fprintf(stderr, "allgatherv_compare: rank %d: %s %zu B: the two results differ\n", rank, skew.c_str(),
                     bytes);
        return 1;
      }
      std::vector<double> tv, tp;
      for (int rep = 0; rep < cfg.reps; ++rep) {
        if (rep % 2 == 0) {
          tv.push_back(timed(cfg.iters, comm, v));
          tp.push_back(timed(cfg.iters, comm, p));
        } else {
          tp.push_back(timed(cfg.iters, comm, p));
          tv.push_back(timed(cfg.iters, comm, v));
        }
      }
      const double mv = median(tv) * 1e6, mp = median(tp) * 1e6;
      if (rank == 0)
        std::printf("%8s %13zu %10zu %10zu %15.1f %12.1f %7.2f\n", skew.c_str(), bytes, maxCount * sizeof(float),
                    minCount * sizeof(float), mv, mp, mp / mv);
      std::fflush(stdout);
    }
  }
  CHECK(ncclCommDestroy(comm));
  return 0;
}

bool parseArgs(int argc, char** argv, Config* c) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) return false;
    ++i;
    if (a == "-N") {
      c->procs = std::atoi(v);
    } else if (a == "-T") {
      c->threads = std::atoi(v);
    } else if (a == "-b") {
      if (!weftbench::parseSize(v, &c->minBytes)) return false;
    } else if (a == "-e") {
      if (!weftbench::parseSize(v, &c->maxBytes)) return false;
    } else if (a == "-f") {
      c->factor = std::atof(v);
    } else if (a == "--reps") {
      c->reps = std::atoi(v);
    } else if (a == "--iters") {
      c->iters = std::atoi(v);
    } else if (a == "--skew") {
      c->skews.clear();
      for (std::string s = v; !s.empty();) {
        const size_t comma = s.find(',');
        c->skews.push_back(s.substr(0, comma));
        s = comma == std::string::npos ? "" : s.substr(comma + 1);
      }
    } else {
      return false;
    }
  }
  for (const std::string& s : c->skews)
    if (s != "onebig" && s != "ramp" && s != "near") return false;
  return c->procs >= 1 && c->threads >= 0 && c->reps >= 1 && c->iters >= 1 && c->factor > 1 &&
         c->minBytes <= c->maxBytes;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (!parseArgs(argc, argv, &cfg)) {
    std::fprintf(stderr,
                 "usage: allgatherv_compare [-N procs | -T threads] [-b bytes] [-e bytes] [-f factor] [--reps r] "
                 "[--iters i] [--skew onebig,ramp,near]\n");
    return 1;
  }
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  CHECK(ncclGetUniqueId(&id));
  if (cfg.threads > 0) {
    std::vector<int> status(cfg.threads, 0);
    std::vector<std::thread> ts;
    for (int r = 0; r < cfg.threads; ++r) ts.emplace_back([&, r] { status[r] = runRank(cfg, id, r, cfg.threads); });
    for (std::thread& t : ts) t.join();
    return *std::max_element(status.begin(), status.end());
  }
  std::fflush(stdout);
  std::vector<pid_t> kids;
  for (int r = 0; r < cfg.procs; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int st = runRank(cfg, id, r, cfg.procs);
      std::fflush(stdout);
      std::_Exit(st);
    }
    kids.push_back(pid);
  }
  int worst = 0;
  for (pid_t pid : kids) {
    int st = 0;
    waitpid(pid, &st, 0);
    worst = std::max(worst, WIFEXITED(st) ? WEXITSTATUS(st) : 3);
  }
  return worst;
}
