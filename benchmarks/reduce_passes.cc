// reduce_passes: what one float32 sum pass over S bytes costs on this host, in place against out of
// place, with Weft's own host reduction kernel (math/reduce_host.h). A ring AllReduce step is such a
// pass: a rank's input plus a partial that just arrived through a FIFO slot (hot in the cache),
// into the rank's output. In place the output lines are the input lines, already read; out of place
// they are a second stream through memory, written with plain stores or, as Weft does past the
// caches (Task::streamOutput), with non-temporal ones. Their ratio is what memory charges for out
// of place on this host, whatever the algorithm; an AllReduce, whose FIFO work is the same either
// way, loses less. benchmarks/guard.sh holds Weft's 2-rank out-of-place/in-place figure to it.
//
// Every thread (one per rank of the comparison it stands beside, default 2) works on its own
// buffers at the same time as the others, as ranks do. Cases are interleaved within each
// repetition; the figures are medians, in GB/s of output written by all threads together. Each
// pass is checked at sampled places. Links the library's objects (not libnccl.so.2), because the
// kernel is not part of the API. `reduce_passes --help` for the options.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "math/reduce_host.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kKiB = 1024, kMiB = 1024 * kKiB;

struct Options {
  size_t bytes = 64 * kMiB, partialBytes = 128 * kKiB, reps = 5;
  int threads = 2;
};

enum class Case { kInPlace, kOutOfPlace, kOutOfPlaceStream, kMemcpy };
constexpr Case kCases[] = {Case::kInPlace, Case::kOutOfPlace, Case::kOutOfPlaceStream, Case::kMemcpy};
const char* caseName(Case c) {
  switch (c) {
    case Case::kInPlace: return "in-place";
    case Case::kOutOfPlace: return "out-of-place";
    case Case::kOutOfPlaceStream: return "out-of-place-stream";
    case Case::kMemcpy: return "memcpy";
  }
  return "?";
}

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "reduce_passes: %s\n", message.c_str());
  std::exit(1);
}

bool parseSize(const char* text, size_t* out) {  // a number, then an optional K or M (powers of 1024)
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  size_t shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10, ++end;
  else if (*end == 'M' || *end == 'm')
    shift = 20, ++end;
  *out = static_cast<size_t>(value) << shift;
  return end != text && *end == '\0' && value != 0;
}

Options parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: reduce_passes [--bytes S] [--partial P] [--threads T] [--reps R]\n"
          "  --bytes S    input and output of each thread (default 64M)\n"
          "  --partial P  the hot partial each piece adds, a FIFO slot's size (default 128K)\n"
          "  --threads T  threads passing over their own buffers at once (default 2)\n"
          "  --reps R     repetitions of every case, interleaved; medians are printed (default 5)\n");
      std::exit(0);
    }
    if (i + 1 >= argc) fail("missing value after " + a);
    const char* v = argv[++i];
    size_t n = 0;
    if (!parseSize(v, &n)) fail("bad value " + std::string(v) + " for " + a);
    if (a == "--bytes")
      o.bytes = n;
    else if (a == "--partial")
      o.partialBytes = n;
    else if (a == "--threads")
      o.threads = static_cast<int>(n);
    else if (a == "--reps")
      o.reps = n;
    else
      fail("unknown option " + a + " (see --help)");
  }
  if (o.partialBytes % sizeof(float) != 0 || o.bytes % o.partialBytes != 0)
    fail("--bytes must be a multiple of --partial, and --partial of 4");
  if (o.threads < 1 || o.threads > 256) fail("--threads must be 1..256");
  return o;
}

// One thread's buffers. `in` starts at 0 and in place gains `partial`'s 1.0 on every pass; `out` is
// overwritten by every out-of-place pass.
struct Buffers {
  std::vector<float> in, out, partial;
  size_t inPlacePasses = 0;
};

void pass(const weft::ReduceSpec& spec, Case c, Buffers& b, size_t pieceElems) {
  const size_t n = b.in.size();
  for (size_t at = 0; at < n; at += pieceElems) {
    float* in = b.in.data() + at;
    float* out = b.out.data() + at;
    switch (c) {
      case Case::kInPlace: weft::reduceCopy(spec, in, nullptr, b.partial.data(), in, pieceElems, 0); break;
      case Case::kOutOfPlace: weft::reduceCopy(spec, out, nullptr, b.partial.data(), in, pieceElems, 0); break;
      case Case::kOutOfPlaceStream:
        weft::reduceCopy(spec, out, nullptr, b.partial.data(), in, pieceElems, weft::kStreamDst0);
        break;
      case Case::kMemcpy: std::memcpy(out, in, pieceElems * sizeof(float)); break;
    }
  }
}

// The pass wrote what it should: out = in + 1 out of place (in is unchanged by those), out = in for
// memcpy; in place, every element has gained 1.0 once per in-place pass so far (exact in float up
// to 2^24 passes).
bool check(Case c, const Buffers& b) {
  const size_t n = b.in.size(), step = std::max<size_t>(1, n / 1024);
  for (size_t i = 0; i < n; i += step) {
    const float want = c == Case::kInPlace  ? static_cast<float>(b.inPlacePasses)
                       : c == Case::kMemcpy ? b.in[i]
                                            : b.in[i] + 1.0f;
    if ((c == Case::kInPlace ? b.in[i] : b.out[i]) != want) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parseOptions(argc, argv);
  weft::ReduceSpec spec;
  if (!weft::makeReduceSpec(ncclFloat32, ncclSum, 1, &spec)) fail("no float32 sum in this build");
  const size_t elems = o.bytes / sizeof(float), pieceElems = o.partialBytes / sizeof(float);

  // Persistent workers: each allocates and first touches its own buffers, then runs a case each
  // time `generation` moves on. The clock runs from the common start to the last thread's end, as
  // a collective waits for its slowest rank; each thread then checks its pass, untimed, and the
  // next case starts only when every check is done, so all threads start it together.
  std::vector<Buffers> buffers(static_cast<size_t>(o.threads));
  std::atomic<int> ready{0}, finished{0}, checked{0};
  std::atomic<uint64_t> generation{0};
  std::atomic<int> current{0};
  std::atomic<bool> wrong{false}, stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < o.threads; ++t) {
    workers.emplace_back([&, t] {
      Buffers& b = buffers[static_cast<size_t>(t)];
      b.in.assign(elems, 0.0f);
      b.out.assign(elems, 0.0f);
      b.partial.assign(pieceElems, 1.0f);
      ready.fetch_add(1);
      for (uint64_t seen = 0;;) {
        while (generation.load(std::memory_order_acquire) == seen && !stop.load()) sched_yield();
        if (stop.load()) return;
        seen = generation.load(std::memory_order_acquire);
        const Case c = kCases[current.load()];
        pass(spec, c, b, pieceElems);
        finished.fetch_add(1, std::memory_order_acq_rel);
        if (c == Case::kInPlace) ++b.inPlacePasses;
        if (!check(c, b)) wrong.store(true);
        checked.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  while (ready.load() < o.threads) sched_yield();

  auto timed = [&](size_t index) {
    current.store(static_cast<int>(index));
    finished.store(0);
    checked.store(0);
    const auto start = Clock::now();
    generation.fetch_add(1, std::memory_order_acq_rel);
    while (finished.load(std::memory_order_acquire) < o.threads) sched_yield();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    while (checked.load(std::memory_order_acquire) < o.threads) sched_yield();
    return seconds;
  };
  constexpr size_t kNumCases = sizeof kCases / sizeof kCases[0];
  for (size_t c = 0; c < kNumCases; ++c) timed(c);  // warm-up: pages, caches, the CPU's clock
  std::vector<std::vector<double>> gbps(kNumCases);
  for (size_t r = 0; r < o.reps; ++r)
    for (size_t k = 0; k < kNumCases; ++k) {
      const size_t c = (k + r) % kNumCases;  // rotate the order so no case always follows the same one
      gbps[c].push_back(double(o.bytes) * o.threads / timed(c) / 1e9);
    }
  stop.store(true);
  for (auto& w : workers) w.join();
  if (wrong.load()) fail("a pass wrote wrong values");

  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::printf(
      "# reduce_passes: float32 sum, %zu MiB per thread, partial %zu KiB, %d thread(s), %zu reps;"
      " medians, GB/s of output (all threads)\n",
      o.bytes / kMiB, o.partialBytes / kKiB, o.threads, o.reps);
  std::vector<double> m(kNumCases);
  for (size_t c = 0; c < kNumCases; ++c) {
    m[c] = median(gbps[c]);
    std::printf("%-20s %8.2f\n", caseName(kCases[c]), m[c]);
  }
  const double oop = std::max(m[1], m[2]);
  std::printf("sum_pass bytes=%zu threads=%d in_place_gbps=%.2f out_of_place_gbps=%.2f ratio=%.3f\n", o.bytes,
              o.threads, m[0], oop, oop / m[0]);
  return 0;
}
