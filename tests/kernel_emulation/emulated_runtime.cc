#include "emulated_runtime.h"

#include <unistd.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/errors.h"
#include "gpu_executor/kernel_entry.h"
#include "kernel_emulation.h"

namespace weft::gpu::emulation {

thread_local Dim blockIdx{0};
thread_local Dim threadIdx{0};
thread_local Dim blockDim{1};

namespace {
// One block's barrier and shared memory.
struct Block {
  explicit Block(int threads) : barrier(threads) {}
  std::barrier<> barrier;
  alignas(64) unsigned char shared[4096] = {};
};
thread_local Block* tBlock = nullptr;

int threadsPerBlock() {
  const char* v = getenv("WEFT_KERNEL_EMULATION_THREADS");
  const int n = v != nullptr ? atoi(v) : 4;
  return n >= 1 && n <= 64 ? n : 4;
}
}  // namespace

int64_t clockNs() { return nowNs(); }

void syncThreads() { tBlock->barrier.arrive_and_wait(); }

void* blockSharedBytes(size_t bytes) {
  if (bytes > sizeof tBlock->shared) abort();  // the kernel's shared state outgrew the emulation
  return tBlock->shared;
}

int runBlocks(int blocks, const std::function<void()>& fn) {
  const int threads = threadsPerBlock();
  std::vector<std::unique_ptr<Block>> state;
  for (int b = 0; b < blocks; ++b) state.push_back(std::make_unique<Block>(threads));
  std::vector<std::thread> all;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t)
      all.emplace_back([&, b, t] {
        blockIdx.x = static_cast<unsigned>(b);
        threadIdx.x = static_cast<unsigned>(t);
        blockDim.x = static_cast<unsigned>(threads);
        tBlock = state[b].get();
        fn();
      });
  for (std::thread& t : all) t.join();
  return 0;
}

}  // namespace weft::gpu::emulation

namespace weft::testing {
namespace {

thread_local bool tCapturing = false;
thread_local int tLastBlocks = 0;

void* zeroed(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes == 0 ? 1 : bytes) != 0) return nullptr;
  memset(p, 0, bytes);
  return p;
}

class EmulatedRuntime final : public dev::Runtime {
 public:
  const char* name() const override { return "emulated"; }
  int deviceCount() override { return 1; }
  std::string whyNone() override { return {}; }
  int runtimeVersion() override { return 0; }

  ncclResult_t getDevice(int* dev) override {
    *dev = 0;
    return ncclSuccess;
  }
  ncclResult_t setDevice(int dev) override {
    return dev == 0 ? ncclSuccess : reportError(nullptr, ncclInvalidArgument, "emulation has device 0 only");
  }
  ncclResult_t deviceInfo(int, dev::DeviceInfo* out) override {
    *out = dev::DeviceInfo{};
    snprintf(out->name, sizeof out->name, "kernel emulation (CPU threads)");
    snprintf(out->pciBusId, sizeof out->pciBusId, "0000:00:00.0");
    out->multiProcessors = static_cast<int>(std::thread::hardware_concurrency());
    out->timerTicksPerMs = 1000000;
    return ncclSuccess;
  }
  // Every buffer is "device memory" of the one device.
  ncclResult_t pointerInfo(const void*, dev::PointerInfo* out) override {
    out->kind = dev::MemKind::kDevice;
    out->device = 0;
    return ncclSuccess;
  }
  ncclResult_t streamDevice(void*, int* dev) override {
    *dev = 0;
    return ncclSuccess;
  }
  ncclResult_t deviceAlloc(void** p, size_t bytes) override {
    *p = zeroed(bytes);
    return *p != nullptr ? ncclSuccess : ncclSystemError;
  }
  ncclResult_t deviceFree(void* p) override {
    free(p);
    return ncclSuccess;
  }
  ncclResult_t hostAllocMapped(void** host, void** devPtr, size_t bytes) override {
    *host = *devPtr = zeroed(bytes);
    return *host != nullptr ? ncclSuccess : ncclSystemError;
  }
  ncclResult_t hostFree(void* host) override {
    free(host);
    return ncclSuccess;
  }
  ncclResult_t hostRegister(void* host, size_t, void** devPtr) override {
    *devPtr = host;
    return ncclSuccess;
  }
  ncclResult_t hostUnregister(void*) override { return ncclSuccess; }
  ncclResult_t copy(void* dst, const void* src, size_t bytes) override {
    memcpy(dst, src, bytes);
    return ncclSuccess;
  }
  // Launches run to completion before they return, so stream order holds with plain copies.
  ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, void*) override { return copy(dst, src, bytes); }

  // A handle is the address and the owner's pid: only this process can open it.
  ncclResult_t ipcGetHandle(void* p, dev::IpcHandle* out) override {
    memset(out, 0, sizeof *out);
    const int pid = getpid();
    memcpy(out->bytes, &p, sizeof p);
    memcpy(out->bytes + sizeof p, &pid, sizeof pid);
    return ncclSuccess;
  }
  ncclResult_t ipcOpen(const dev::IpcHandle& h, void** p) override {
    int pid = 0;
    memcpy(p, h.bytes, sizeof *p);
    memcpy(&pid, h.bytes + sizeof *p, sizeof pid);
    return pid == getpid() ? ncclSuccess : reportError(nullptr, ncclInvalidUsage, "emulation: no IPC across processes");
  }
  ncclResult_t ipcClose(void*) override { return ncclSuccess; }
  ncclResult_t canAccessPeer(int, int, bool* yes) override {
    *yes = true;
    return ncclSuccess;
  }
  ncclResult_t enablePeerAccess(int) override { return ncclSuccess; }

  ncclResult_t streamCreate(void** s) override {
    *s = new int(0);
    return ncclSuccess;
  }
  ncclResult_t streamDestroy(void* s) override {
    delete static_cast<int*>(s);
    return ncclSuccess;
  }
  ncclResult_t streamSynchronize(void*) override { return ncclSuccess; }
  ncclResult_t streamIsCapturing(void*, bool* capturing) override {
    *capturing = tCapturing;
    return ncclSuccess;
  }
  ncclResult_t eventCreate(void** e) override {
    *e = new int(0);
    return ncclSuccess;
  }
  ncclResult_t eventDestroy(void* e) override {
    delete static_cast<int*>(e);
    return ncclSuccess;
  }
  ncclResult_t eventRecord(void*, void*) override { return ncclSuccess; }
  ncclResult_t eventQuery(void*, bool* done) override {
    *done = true;  // launches are synchronous
    return ncclSuccess;
  }
  ncclResult_t streamWaitEvent(void*, void*) override { return ncclSuccess; }
  ncclResult_t exchangeCaptureModeRelaxed(bool, int*) override { return ncclSuccess; }
  ncclResult_t launchExecutor(const dev::KernelLaunch& l, void* stream) override {
    const char* what = nullptr;
    tLastBlocks = l.blocks;
    return gpu::launchStepKernel(l, stream, &what) == 0 ? ncclSuccess : ncclUnhandledCudaError;
  }
};

}  // namespace

void setEmulatedCapture(bool on) { tCapturing = on; }

int lastLaunchBlocks() { return tLastBlocks; }

dev::Runtime& emulatedRuntime() {
  static EmulatedRuntime* const instance = new EmulatedRuntime;
  return *instance;
}

}  // namespace weft::testing
