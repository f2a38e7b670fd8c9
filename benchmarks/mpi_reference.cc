// The MPI side of benchmarks/run_compare.sh for every collective Weft's perf tools measure:
// allreduce, allgather, reducescatter, broadcast, reduce and alltoall, float32 (sum where the
// collective reduces), out-of-place or in-place (MPI_IN_PLACE), built with Open MPI's or MPICH's
// compiler wrapper. Not part of the CMake build: run_compare.sh compiles it with mpic++.
//
// Sizes and bus bandwidth follow Weft's perf tools (and nccl-tests), so the two line up:
//   allreduce, broadcast, reduce   size = the buffer's bytes
//   allgather                      size = the gathered total (each rank gives size / n)
//   reducescatter                  size = the input total (each rank keeps size / n)
//   alltoall                       size = each rank's whole send buffer
//   busbw = algbw x 2(n-1)/n (allreduce), (n-1)/n (allgather, reducescatter, alltoall), 1 (others)
// Timing as ../shared/baselines/mpi_allreduce_bench: 5 warm-up calls, a calibration that grows a
// trial until it takes target/8, then N calls so that N x t is about --target seconds (N agreed
// by broadcast); the time per call is the maximum over ranks. Every size is checked. With
// --min-seconds S the timed calls go on in further batches until they have taken S in all
// (run_load_compare.sh: under load a short run is a matter of luck).
//
// usage: mpirun -n P mpi_reference [--ops allreduce,...] [--min B] [--max B] [--target S] [--min-seconds S]
//                                        [--inplace]
// Output, one line per size: op ranks bytes iters time_us algbw_GBs busbw_GBs check
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string ops = "allreduce,allgather,reducescatter,broadcast,reduce,alltoall";
  size_t minBytes = 8, maxBytes = size_t(64) << 20;
  double target = 0.3;
  double minSeconds = 0;  // the timed calls last at least this long in all
  bool inPlace = false;
};

// 8 B, then 16 B x 4 up to the maximum (64 KiB, 1 MiB and 64 MiB are on the grid).
std::vector<size_t> sizeGrid(const Options& o) {
  std::vector<size_t> v;
  if (o.minBytes <= 8) v.push_back(8);
  for (size_t s = 16; s <= o.maxBytes; s *= 4)
    if (s >= o.minBytes) v.push_back(s);
  return v;
}

// `count` calls, barrier first; the time they took on the slowest rank.
double timedBatch(const std::function<void()>& call, long count) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < count; ++i) call();
  const double el = MPI_Wtime() - t0;
  double elMax = 0;
  MPI_Allreduce(&el, &elMax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return elMax;
}

// Calls that take about `seconds` at `perCall` each, 3 to a million.
long callsFor(double seconds, double perCall) {
  const long n = static_cast<long>(std::ceil(seconds / std::max(perCall, 1e-9)));
  return std::max(3L, std::min(n, 1000000L));
}

double timeCalls(const Options& o, const std::function<void()>& call, long* itersOut) {
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < 5; ++i) call();
  long trial = 1;
  double per = 0;
  for (;;) {
    const double elMax = timedBatch(call, trial);
    per = elMax / static_cast<double>(trial);
    if (elMax >= o.target / 8 || trial >= 100000) break;
    trial *= 4;
  }
  long iters = callsFor(o.target, per);
  MPI_Bcast(&iters, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  // Batches of timed calls, each one's time the maximum over ranks, until they add up to
  // --min-seconds (by default one batch, as the baseline times). Beside busy loops a calibration
  // trial that lost its core asks for a few hundred calls, a run shorter than one time slice whose
  // figure is luck (0.28 to 3.6 us for the same 8 B call); the next batch's count comes from the
  // time per call the last batch measured, the same on every rank.
  long total = 0;
  double spent = 0;
  do {
    const double elMax = timedBatch(call, iters);
    spent += elMax;
    total += iters;
    iters = callsFor(o.minSeconds - spent, elMax / static_cast<double>(iters));
  } while (spent < o.minSeconds);
  *itersOut = total;
  return spent / static_cast<double>(total);
}

// One collective at one size: buffers filled so that every result element is known, the calls
// (in place or not), and the check of what this rank holds afterwards.
struct Case {
  double busFactor = 1;
  std::function<void()> fill, call;
  std::function<bool()> check;
};

// Rank r's element i of its input: small integers, so sums are exact in float32.
float inputOf(int r, size_t i) { return static_cast<float>((r + 1) * 3 + static_cast<int>(i % 7)); }

Case makeCase(const std::string& op, size_t bytes, int rank, int n, bool inPlace, std::vector<float>& a,
              std::vector<float>& b) {
  Case c;
  const size_t count = bytes / sizeof(float);
  const size_t per = count / static_cast<size_t>(n);  // the per-rank part of split collectives
  float* send = a.data();
  float* recv = b.data();
  auto sumAt = [n](size_t i) {
    float s = 0;
    for (int r = 0; r < n; ++r) s += inputOf(r, i);
    return s;
  };
  if (op == "allreduce") {
    c.busFactor = 2.0 * (n - 1) / n;
    float* in = inPlace ? recv : send;
    c.fill = [=] {
      for (size_t i = 0; i < count; ++i) in[i] = inputOf(rank, i);
    };
    c.call = [=] {
      MPI_Allreduce(inPlace ? MPI_IN_PLACE : send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
    // In place, the warm-up and timed calls keep summing into the buffer: refill, call once, check.
    c.check = [=] {
      for (size_t i = 0; i < count; ++i)
        if (recv[i] != sumAt(i)) return false;
      return true;
    };
  } else if (op == "allgather") {
    c.busFactor = (n - 1.0) / n;
    float* mine = inPlace ? recv + per * static_cast<size_t>(rank) : send;
    c.fill = [=] {
      for (size_t i = 0; i < per; ++i) mine[i] = inputOf(rank, i);
    };
    c.call = [=] {
      MPI_Allgather(inPlace ? MPI_IN_PLACE : send, static_cast<int>(per), MPI_FLOAT, recv, static_cast<int>(per),
                    MPI_FLOAT, MPI_COMM_WORLD);
    };
    c.check = [=] {
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < per; ++i)
          if (recv[per * static_cast<size_t>(r) + i] != inputOf(r, i)) return false;
      return true;
    };
  } else if (op == "reducescatter") {
    c.busFactor = (n - 1.0) / n;
    float* in = inPlace ? recv : send;
    c.fill = [=] {
      for (size_t i = 0; i < per * static_cast<size_t>(n); ++i) in[i] = inputOf(rank, i);
    };
    c.call = [=] {
      MPI_Reduce_scatter_block(inPlace ? MPI_IN_PLACE : send, recv, static_cast<int>(per), MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
    };
    c.check = [=] {
      for (size_t i = 0; i < per; ++i)
        if (recv[i] != sumAt(per * static_cast<size_t>(rank) + i)) return false;
      return true;
    };
  } else if (op == "broadcast") {
    // Always in place in MPI: the root's buffer is everyone's result.
    c.fill = [=] {
      for (size_t i = 0; i < count; ++i) recv[i] = rank == 0 ? inputOf(0, i) : -1.0f;
    };
    c.call = [=] { MPI_Bcast(recv, static_cast<int>(count), MPI_FLOAT, 0, MPI_COMM_WORLD); };
    c.check = [=] {
      for (size_t i = 0; i < count; ++i)
        if (recv[i] != inputOf(0, i)) return false;
      return true;
    };
  } else if (op == "reduce") {
    float* in = inPlace && rank == 0 ? recv : send;
    c.fill = [=] {
      for (size_t i = 0; i < count; ++i) in[i] = inputOf(rank, i);
    };
    c.call = [=] {
      MPI_Reduce(inPlace && rank == 0 ? MPI_IN_PLACE : send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, 0,
                 MPI_COMM_WORLD);
    };
    c.check = [=] {
      if (rank != 0) return true;
      for (size_t i = 0; i < count; ++i)
        if (recv[i] != sumAt(i)) return false;
      return true;
    };
  } else {  // alltoall
    c.busFactor = (n - 1.0) / n;
    float* in = inPlace ? recv : send;
    c.fill = [=] {  // block j goes to rank j: it carries (sender, destination)
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < per; ++i) in[per * static_cast<size_t>(j) + i] = inputOf(rank, i) + 1000.0f * j;
    };
    c.call = [=] {
      MPI_Alltoall(inPlace ? MPI_IN_PLACE : send, static_cast<int>(per), MPI_FLOAT, recv, static_cast<int>(per),
                   MPI_FLOAT, MPI_COMM_WORLD);
    };
    c.check = [=] {
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < per; ++i)
          if (recv[per * static_cast<size_t>(r) + i] != inputOf(r, i) + 1000.0f * rank) return false;
      return true;
    };
  }
  return c;
}

// The collectives that modify their own input in place get a fresh fill before the checked call.
bool refillsBeforeCheck(const std::string& op, bool inPlace) {
  return inPlace && (op == "allreduce" || op == "reducescatter" || op == "reduce" || op == "alltoall");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ops" && i + 1 < argc) {
      o.ops = argv[++i];
    } else if (a == "--min" && i + 1 < argc) {
      o.minBytes = std::strtoull(argv[++i], nullptr, 0);
    } else if (a == "--max" && i + 1 < argc) {
      o.maxBytes = std::strtoull(argv[++i], nullptr, 0);
    } else if (a == "--target" && i + 1 < argc) {
      o.target = std::atof(argv[++i]);
    } else if (a == "--min-seconds" && i + 1 < argc) {
      o.minSeconds = std::atof(argv[++i]);
    } else if (a == "--inplace") {
      o.inPlace = true;
    } else {
      if (rank == 0) std::fprintf(stderr, "mpi_reference: unknown argument %s\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    if (char* nl = std::strchr(version, '\n')) *nl = 0;
    std::printf("# lib: %s\n# ranks: %d  target: %.2fs/size  %s\n", version, n, o.target,
                o.inPlace ? "in-place" : "out-of-place");
    std::printf("%-14s %-6s %12s %10s %12s %10s %10s %8s\n", "op", "ranks", "bytes", "iters", "time_us", "algbw_GBs",
                "busbw_GBs", "check");
    std::fflush(stdout);
  }
  // Room for the largest buffer of any collective (alltoall and allgather use size / n per rank).
  std::vector<float> a(o.maxBytes / sizeof(float) + 16), b(o.maxBytes / sizeof(float) + 16);
  std::string ops = o.ops + ",";
  for (size_t at = 0, comma; (comma = ops.find(',', at)) != std::string::npos; at = comma + 1) {
    const std::string op = ops.substr(at, comma - at);
    if (op.empty()) continue;
    for (size_t bytes : sizeGrid(o)) {
      const size_t count = bytes / sizeof(float);
      const bool split = op == "allgather" || op == "reducescatter" || op == "alltoall";
      if (count == 0 || (split && count / static_cast<size_t>(n) == 0)) continue;
      // Split collectives move whole per-rank parts: the size is rounded down to them.
      const size_t used = split ? count / static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(float) : bytes;
      Case c = makeCase(op, used, rank, n, o.inPlace, a, b);
      c.fill();
      long iters = 0;
      const double t = timeCalls(o, c.call, &iters);
      if (refillsBeforeCheck(op, o.inPlace) || op == "broadcast") c.fill();
      c.call();
      int ok = c.check() ? 1 : 0, all = 0;
      MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      const double alg = static_cast<double>(used) / t / 1e9;
      if (rank == 0) {
        std::printf("%-14s %-6d %12zu %10ld %12.2f %10.4f %10.4f %8s\n", op.c_str(), n, used, iters, t * 1e6, alg,
                    alg * c.busFactor, all ? "ok" : "FAIL");
        std::fflush(stdout);
      }
    }
  }
  MPI_Finalize();
  return 0;
}
