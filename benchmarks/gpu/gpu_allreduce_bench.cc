// GPU AllReduce bandwidth next to the GPU's own copy bandwidth, in one run: N ranks as threads of
// this process, all on device 0 (several ranks per GPU is a Weft feature), float sum from 8 B to
// 256 MiB, time per call and nccl-tests' algbw/busbw; before the sweep, a 256 MiB device-to-device
// gpuMemcpyAsync gives the copy bandwidth the busbw is compared with (the target is a
// ratio of the two). Exits 77 without a GPU. NOT YET RUN ON A GPU.
//
// usage: gpu_allreduce_bench [-t ranks] [-b minbytes] [-e maxbytes] [-f factor] [-n iters]
//                            [-w warmup] [-c 0|1] [--copy-bytes B]
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "gpu_bench_util.h"

using namespace weft_bench;

namespace {

struct Options {
  int ranks = 4;
  size_t minBytes = 8, maxBytes = size_t{256} << 20, copyBytes = size_t{256} << 20;
  int factor = 2, iters = 0 /* 0: by size */, warmup = 5;
  bool check = true;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {  // every option takes a value
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v == nullptr) {
      fprintf(stderr, "gpu_allreduce_bench: %s needs a value\n", a.c_str());
      exit(2);
    }
    if (a == "-t")
      o.ranks = atoi(v);
    else if (a == "-b")
      o.minBytes = parseBytes(v);
    else if (a == "-e")
      o.maxBytes = parseBytes(v);
    else if (a == "-f")
      o.factor = atoi(v);
    else if (a == "-n")
      o.iters = atoi(v);
    else if (a == "-w")
      o.warmup = atoi(v);
    else if (a == "-c")
      o.check = atoi(v) != 0;
    else if (a == "--copy-bytes")
      o.copyBytes = parseBytes(v);
    else {
      fprintf(stderr, "gpu_allreduce_bench: unknown option %s (see the header of the source)\n", a.c_str());
      exit(2);
    }
  }
  if (o.ranks < 1 || o.factor < 2 || o.minBytes < 4 || o.maxBytes < o.minBytes) {
    fprintf(stderr, "gpu_allreduce_bench: bad options\n");
    exit(2);
  }
  return o;
}

// Device-to-device copy bandwidth in bytes copied per second (memory traffic is twice that:
// every byte is read once and written once).
double copyBytesPerSecond(size_t bytes) {
  BENCH_GPU(gpuSetDevice(0));
  void *src = nullptr, *dst = nullptr;
  BENCH_GPU(gpuMalloc(&src, bytes));
  BENCH_GPU(gpuMalloc(&dst, bytes));
  BENCH_GPU(gpuMemset(src, 1, bytes));
  gpuStream_t s;
  gpuEvent_t start, stop;
  BENCH_GPU(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  BENCH_GPU(gpuEventCreateWithFlags(&start, gpuEventDefault));
  BENCH_GPU(gpuEventCreateWithFlags(&stop, gpuEventDefault));
  for (int i = 0; i < 3; ++i) BENCH_GPU(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, s));
  const int reps = 20;
  BENCH_GPU(gpuEventRecord(start, s));
  for (int i = 0; i < reps; ++i) BENCH_GPU(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, s));
  BENCH_GPU(gpuEventRecord(stop, s));
  BENCH_GPU(gpuEventSynchronize(stop));
  float ms = 0;
  BENCH_GPU(gpuEventElapsedTime(&ms, start, stop));
  BENCH_GPU(gpuEventDestroy(start));
  BENCH_GPU(gpuEventDestroy(stop));
  BENCH_GPU(gpuStreamDestroy(s));
  BENCH_GPU(gpuFree(src));
  BENCH_GPU(gpuFree(dst));
  return static_cast<double>(bytes) * reps / (ms / 1e3);
}

int itersFor(const Options& o, size_t bytes) {
  if (o.iters > 0) return o.iters;
  return static_cast<int>(std::clamp<size_t>((size_t{1} << 30) / bytes, 20, 1000));  // ~1 GiB a size
}

struct Shared {
  explicit Shared(int n) : barrier(n) {}
  ncclUniqueId id;
  Barrier barrier;
  std::atomic<long> wrong{0};
  double seconds = 0;  // written by rank 0 between barriers
};

// Several ranks of this process share the GPU, so while a peer's AllReduce may be waiting for
// this rank, this rank must not call what waits for the whole device (gpuFree) or uses the legacy
// default stream: memory is allocated before the communicator exists and freed after a final
// barrier, and copies go on the rank's own non-blocking stream.
void rankMain(const Options& o, Shared* sh, int rank, double copyRate) {
  BENCH_GPU(gpuSetDevice(0));
  gpuStream_t s;
  BENCH_GPU(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  const size_t maxCount = o.maxBytes / sizeof(float);
  float *send = nullptr, *recv = nullptr;
  BENCH_GPU(gpuMalloc(reinterpret_cast<void**>(&send), maxCount * sizeof(float)));
  BENCH_GPU(gpuMalloc(reinterpret_cast<void**>(&recv), maxCount * sizeof(float)));
  {
    const std::vector<float> in(maxCount, static_cast<float>(rank + 1));  // sums are exact
    BENCH_GPU(gpuMemcpyAsync(send, in.data(), maxCount * sizeof(float), gpuMemcpyHostToDevice, s));
    BENCH_GPU(gpuStreamSynchronize(s));
  }
  ncclComm_t comm = nullptr;
  BENCH_NCCL(ncclCommInitRank(&comm, o.ranks, sh->id, rank), nullptr);
  requireGpuComm(comm, "gpu_allreduce_bench");
  const float want = static_cast<float>(o.ranks) * (o.ranks + 1) / 2;
  const int n = o.ranks;
  if (rank == 0)
    printf("#\n# %10s %12s %8s %12s %11s %11s %10s %8s\n", "size(B)", "count", "iters", "time(us)", "algbw(GB/s)",
           "busbw(GB/s)", "busbw/copy", "#wrong");
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    const size_t count = bytes / sizeof(float);
    const int iters = itersFor(o, bytes);
    for (int i = 0; i < o.warmup; ++i) BENCH_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s), comm);
    BENCH_GPU(gpuStreamSynchronize(s));
    sh->barrier.wait();
    const double t0 = nowSeconds();
    for (int i = 0; i < iters; ++i) BENCH_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s), comm);
    BENCH_GPU(gpuStreamSynchronize(s));
    sh->barrier.wait();  // the time is until the last rank is done
    if (rank == 0) sh->seconds = (nowSeconds() - t0) / iters;
    if (o.check) {
      std::vector<float> out(count);
      BENCH_GPU(gpuMemcpyAsync(out.data(), recv, count * sizeof(float), gpuMemcpyDeviceToHost, s));
      BENCH_GPU(gpuStreamSynchronize(s));
      sh->wrong += std::count_if(out.begin(), out.end(), [&](float v) { return v != want; });
    }
    sh->barrier.wait();
    if (rank == 0) {
      const double alg = static_cast<double>(count * sizeof(float)) / sh->seconds / 1e9;
      const double bus = alg * 2.0 * (n - 1) / n;  // nccl-tests' AllReduce bus bandwidth
      const std::string wrong = o.check ? std::to_string(sh->wrong.exchange(0)) : "N/A";
      printf("  %10zu %12zu %8d %12.2f %11.2f %11.2f %10.3f %8s\n", count * sizeof(float), count, iters,
             sh->seconds * 1e6, alg, bus, bus * 1e9 / copyRate, wrong.c_str());
      fflush(stdout);
    }
  }
  sh->barrier.wait();  // every rank is done with every AllReduce
  BENCH_NCCL(ncclCommDestroy(comm), nullptr);
  BENCH_GPU(gpuFree(send));
  BENCH_GPU(gpuFree(recv));
  BENCH_GPU(gpuStreamDestroy(s));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  requireGpuOrSkip("gpu_allreduce_bench");
  gpuDeviceProp_t prop;
  BENCH_GPU(gpuGetDeviceProperties(&prop, 0));
  printf("# gpu_allreduce_bench: %d ranks (threads) on device 0 (%s), float sum, out of place\n", o.ranks, prop.name);
  printf("# library: %s (%s)\n", loadedNcclPath().c_str(), libraryVersion().c_str());
  const double copyRate = copyBytesPerSecond(o.copyBytes);
  printf(
      "# D2D copy (gpuMemcpyAsync, %zu bytes): %.2f GB/s copied (bytes/time); %.2f GB/s memory traffic "
      "(read + write = 2 x bytes/time)\n",
      o.copyBytes, copyRate / 1e9, 2 * copyRate / 1e9);
  printf("# busbw = algbw x 2(n-1)/n; busbw/copy divides it by the copied-bytes rate above\n");
  Shared sh(o.ranks);
  BENCH_NCCL(ncclGetUniqueId(&sh.id), nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < o.ranks; ++r) threads.emplace_back(rankMain, std::cref(o), &sh, r, copyRate);
  for (std::thread& t : threads) t.join();
  return 0;
}
