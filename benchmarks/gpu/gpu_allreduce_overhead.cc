// Per-call overhead of the smallest GPU collective: one rank, an 8-byte float sum AllReduce on
// device 0, measured two ways:
//   enqueue: host time of ncclAllReduce alone, calls issued back to back in batches of 64 with a
//            synchronize between batches (not timed), so the queue never fills;
//   latency: ncclAllReduce + gpuStreamSynchronize, one call at a time (median, mean, p99).
// Public NCCL API only, so run_gpu_compare.sh runs this same binary on Weft's libnccl.so.2 and
// on NVIDIA's. Prints a last line "RESULT ..." for that script. Exits 77 without a GPU.
// NOT YET RUN ON A GPU.
//
// usage: gpu_allreduce_overhead [-n iters] [-w warmup]
#include <algorithm>
#include <vector>

#include "gpu_bench_util.h"

using namespace weft_bench;

int main(int argc, char** argv) {
  int iters = 5000, warmup = 500;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-n") == 0)
      iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-w") == 0)
      warmup = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "gpu_allreduce_overhead: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (iters < 64) iters = 64;
  requireGpuOrSkip("gpu_allreduce_overhead");
  BENCH_GPU(gpuSetDevice(0));
  gpuStream_t s;
  BENCH_GPU(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  ncclUniqueId id;
  BENCH_NCCL(ncclGetUniqueId(&id), nullptr);
  ncclComm_t comm = nullptr;
  BENCH_NCCL(ncclCommInitRank(&comm, 1, id, 0), nullptr);
  requireGpuComm(comm, "gpu_allreduce_overhead");
  float* buf = nullptr;
  BENCH_GPU(gpuMalloc(reinterpret_cast<void**>(&buf), 2 * sizeof(float)));
  const float ones[2] = {1.0f, 1.0f};
  BENCH_GPU(gpuMemcpy(buf, ones, sizeof(ones), gpuMemcpyHostToDevice));
  const std::string lib = loadedNcclPath(), version = libraryVersion();
  printf("# gpu_allreduce_overhead: 1 rank, 8-byte float sum AllReduce (in place), %d iterations\n", iters);
  printf("# library: %s (%s)\n", lib.c_str(), version.c_str());

  for (int i = 0; i < warmup; ++i) BENCH_NCCL(ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s), comm);
  BENCH_GPU(gpuStreamSynchronize(s));

  const int batch = 64;
  double enqueue = 0;
  for (int done = 0; done < iters; done += batch) {
    const double t0 = nowSeconds();
    for (int i = 0; i < batch; ++i) BENCH_NCCL(ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s), comm);
    enqueue += nowSeconds() - t0;
    BENCH_GPU(gpuStreamSynchronize(s));
  }
  const int enqueued = (iters + batch - 1) / batch * batch;

  std::vector<double> lat(iters);
  for (int i = 0; i < iters; ++i) {
    const double t0 = nowSeconds();
    BENCH_NCCL(ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s), comm);
    BENCH_GPU(gpuStreamSynchronize(s));
    lat[i] = nowSeconds() - t0;
  }
  std::sort(lat.begin(), lat.end());
  double mean = 0;
  for (double v : lat) mean += v;
  mean /= iters;
  const double us = 1e6, enqueueUs = enqueue / enqueued * us;
  printf("  enqueue only        %9.2f us/call (%d calls)\n", enqueueUs, enqueued);
  printf("  enqueue + sync      %9.2f us median, %.2f us mean, %.2f us p99\n", lat[iters / 2] * us, mean * us,
         lat[iters * 99 / 100] * us);

  // 1 rank: the sum of one input is the input itself, whatever the number of calls.
  float out[2] = {0, 0};
  BENCH_GPU(gpuMemcpy(out, buf, sizeof(out), gpuMemcpyDeviceToHost));
  const bool ok = out[0] == 1.0f && out[1] == 1.0f;
  if (!ok) printf("  WRONG RESULT: %g %g (expected 1 1)\n", out[0], out[1]);
  printf("RESULT lib=%s enqueue_us=%.3f latency_median_us=%.3f latency_mean_us=%.3f latency_p99_us=%.3f check=%s\n",
         lib.c_str(), enqueueUs, lat[iters / 2] * us, mean * us, lat[iters * 99 / 100] * us, ok ? "ok" : "wrong");
  BENCH_GPU(gpuFree(buf));
  BENCH_NCCL(ncclCommDestroy(comm), nullptr);
  BENCH_GPU(gpuStreamDestroy(s));
  return ok ? 0 : 1;
}
