// Shared by the GPU benchmarks: checked calls, the no-GPU skip (exit 77), which NCCL library this
// process actually loaded (Weft's or NVIDIA's: run_gpu_compare.sh swaps them under one binary),
// and a host barrier for rank threads. Public NCCL API plus the vendor runtime only; Weft's own
// entry points are looked up with dlsym so the same binary also runs on NVIDIA's libnccl.so.2.
#pragma once
#include <dlfcn.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "gpu_test_api.h"
#include "nccl.h"

#define BENCH_GPU(call)                                                                               \
  do {                                                                                                \
    const gpuError_t e_ = (call);                                                                     \
    if (e_ != gpuSuccess) {                                                                           \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, gpuErrorText(e_).c_str()); \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)

#define BENCH_NCCL(call, comm)                                                                          \
  do {                                                                                                  \
    const ncclResult_t r_ = (call);                                                                     \
    if (r_ != ncclSuccess) {                                                                            \
      const char* last_ = ncclGetLastError(comm);                                                       \
      fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
              last_ ? last_ : "");                                                                      \
      exit(1);                                                                                          \
    }                                                                                                   \
  } while (0)

namespace weft_bench {

// Exits 77 (the "skipped" status of ctest and automake) when no GPU can be used here.
inline void requireGpuOrSkip(const char* tool) {
  int n = 0;
  const gpuError_t e = gpuGetDeviceCount(&n);
  if (e != gpuSuccess || n <= 0) {
    printf("%s: skipped: no usable GPU (" WEFT_GPU_VENDOR " gpuGetDeviceCount: %s, %d devices)\n", tool,
           e == gpuSuccess ? "ok" : gpuErrorText(e).c_str(), e == gpuSuccess ? n : 0);
    exit(77);
  }
}

// The NCCL library mapped into this process, as /proc/self/maps names it.
inline std::string loadedNcclPath() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string base = path.substr(path.rfind('/') + 1);
    if (base.rfind("libnccl", 0) == 0 || base.rfind("librccl", 0) == 0) return path;
  }
  return "(no libnccl/librccl mapped)";
}

// "Weft 0.1.0 (...)" when the library is Weft, else "NCCL 2.30.7".
inline std::string libraryVersion() {
  using VersionFn = const char* (*)();
  if (auto weft = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "weftGetVersionString"))) return weft();
  int v = 0;
  ncclGetVersion(&v);
  char buf[64];
  snprintf(buf, sizeof(buf), "NCCL %d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
  return buf;
}

// With Weft, a communicator that fell back to host mode would measure the CPU: refuse it.
inline void requireGpuComm(ncclComm_t comm, const char* tool) {
  using BackendFn = ncclResult_t (*)(ncclComm_t, const char**);
  auto backend = reinterpret_cast<BackendFn>(dlsym(RTLD_DEFAULT, "weftCommGetBackend"));
  const char* name = nullptr;
  if (backend != nullptr && backend(comm, &name) == ncclSuccess && strcmp(name, "host") == 0) {
    fprintf(stderr, "%s: Weft runs this communicator in host mode (backend 'host'), not on the GPU\n", tool);
    exit(1);
  }
}

inline double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A reusable barrier for the rank threads (std::barrier is C++20; hipcc builds use C++17).
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const long gen = gen_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return gen_ != gen; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_, arrived_ = 0;
  long gen_ = 0;
};

// "8", "4K", "256M": a byte count with an optional power-of-1024 suffix.
inline size_t parseBytes(const char* s) {
  char* end = nullptr;
  double v = strtod(s, &end);
  switch (end && *end ? *end : ' ') {
    case 'K':
    case 'k': v *= 1024.0; break;
    case 'M':
    case 'm': v *= 1024.0 * 1024; break;
    case 'G':
    case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<size_t>(v);
}

}  // namespace weft_bench
