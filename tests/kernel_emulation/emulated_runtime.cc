#include "emulated_runtime.h"

#include <sys/mman.h>
#include <unistd.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
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
thread_local int64_t tAddressSpace = 0;  // 0: the process's

void* zeroed(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes == 0 ? 1 : bytes) != 0) return nullptr;
  memset(p, 0, bytes);
  return p;
}

// Device memory of a rank with an address space of its own: a memory file, so that an "IPC
// handle" can map the same bytes a second time, at another address, as a peer process would see
// them. The file stays open while its owner or any mapping holds it.
struct MemFile {
  int fd = -1;
  size_t bytes = 0;
  int64_t owner = 0;  // the address space that allocated it
  ~MemFile() {
    if (fd >= 0) close(fd);
  }
};
constexpr uint64_t kMemFileHandle = 0x57454654454d4631ull;  // "WEFTEMF1"
struct MemFileHandle {
  uint64_t magic;
  uint64_t id;
  int64_t owner;
};
std::mutex gMemMutex;
uint64_t gNextId = 0;
std::unordered_map<uint64_t, std::shared_ptr<MemFile>> gById;                     // exported files, by handle id
std::unordered_map<void*, std::pair<uint64_t, std::shared_ptr<MemFile>>> gOwned;  // allocations
std::unordered_map<void*, std::shared_ptr<MemFile>> gOpened;                      // ipcOpen mappings

void* mapFile(const MemFile& f) {
  void* p = mmap(nullptr, f.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void* allocMemFile(size_t bytes) {
  auto f = std::make_shared<MemFile>();
  f->bytes = (bytes == 0 ? 1 : bytes + 4095) / 4096 * 4096;
  f->owner = tAddressSpace;
  f->fd = memfd_create("weft-emulated-gpu", MFD_CLOEXEC);
  if (f->fd < 0 || ftruncate(f->fd, static_cast<off_t>(f->bytes)) != 0) return nullptr;
  void* p = mapFile(*f);  // a new file reads as zeros
  if (p == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(gMemMutex);
  const uint64_t id = ++gNextId;
  gById[id] = f;
  gOwned[p] = {id, f};
  return p;
}

// True when p came from allocMemFile (then it is unmapped and its file let go).
bool freeMemFile(void* p) {
  std::shared_ptr<MemFile> f;
  {
    std::lock_guard<std::mutex> lock(gMemMutex);
    auto it = gOwned.find(p);
    if (it == gOwned.end()) return false;
    f = it->second.second;
    gById.erase(it->second.first);  // freed memory can no longer be opened
    gOwned.erase(it);
  }
  munmap(p, f->bytes);
  return true;
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
    *p = tAddressSpace != 0 ? allocMemFile(bytes) : zeroed(bytes);
    return *p != nullptr ? ncclSuccess : ncclSystemError;
  }
  ncclResult_t deviceFree(void* p) override {
    if (!freeMemFile(p)) free(p);
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

  int64_t addressSpace() override { return tAddressSpace != 0 ? tAddressSpace : getpid(); }

  // Memory of an address space of its own exports its file; as with the vendors' calls, only the
  // start of an allocation, and a handle opens only in another address space. Other memory gives
  // a handle of its address and the owner's pid, which only this process opens (to that address).
  ncclResult_t ipcGetHandle(void* p, dev::IpcHandle* out) override {
    memset(out, 0, sizeof *out);
    {
      std::lock_guard<std::mutex> lock(gMemMutex);
      auto it = gOwned.find(p);
      if (it != gOwned.end()) {
        const MemFileHandle h{kMemFileHandle, it->second.first, it->second.second->owner};
        memcpy(out->bytes, &h, sizeof h);
        return ncclSuccess;
      }
    }
    if (tAddressSpace != 0)
      return reportError(nullptr, ncclInvalidArgument, "emulation: %p does not start an allocation of device memory",
                         p);
    const int pid = getpid();
    memcpy(out->bytes, &p, sizeof p);
    memcpy(out->bytes + sizeof p, &pid, sizeof pid);
    return ncclSuccess;
  }
  ncclResult_t ipcOpen(const dev::IpcHandle& in, void** p) override {
    MemFileHandle h{};
    memcpy(&h, in.bytes, sizeof h);
    if (h.magic == kMemFileHandle) {
      if (h.owner == addressSpace())
        return reportError(nullptr, ncclInvalidUsage, "emulation: an address space cannot open its own IPC handle");
      std::shared_ptr<MemFile> f;
      {
        std::lock_guard<std::mutex> lock(gMemMutex);
        auto it = gById.find(h.id);
        if (it == gById.end())
          return reportError(nullptr, ncclInvalidUsage, "emulation: the IPC handle's memory is freed");
        f = it->second;
      }
      *p = mapFile(*f);
      if (*p == nullptr) return reportError(nullptr, ncclSystemError, "emulation: cannot map an IPC handle");
      std::lock_guard<std::mutex> lock(gMemMutex);
      gOpened[*p] = f;
      return ncclSuccess;
    }
    int pid = 0;
    memcpy(p, in.bytes, sizeof *p);
    memcpy(&pid, in.bytes + sizeof *p, sizeof pid);
    return pid == getpid() ? ncclSuccess : reportError(nullptr, ncclInvalidUsage, "emulation: no IPC across processes");
  }
  ncclResult_t ipcClose(void* p) override {
    std::shared_ptr<MemFile> f;
    {
      std::lock_guard<std::mutex> lock(gMemMutex);
      auto it = gOpened.find(p);
      if (it == gOpened.end()) return ncclSuccess;
      f = std::move(it->second);
      gOpened.erase(it);
    }
    munmap(p, f->bytes);
    return ncclSuccess;
  }
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
  // Everything queued before has finished (launches are synchronous), so it runs now, here.
  ncclResult_t launchHostFunction(void*, HostFunction fn, void* arg) override {
    fn(arg);
    return ncclSuccess;
  }
};

}  // namespace

void setEmulatedCapture(bool on) { tCapturing = on; }

int lastLaunchBlocks() { return tLastBlocks; }

void setEmulatedAddressSpace(int64_t id) { tAddressSpace = id; }

size_t emulatedIpcMappings() {
  std::lock_guard<std::mutex> lock(gMemMutex);
  return gOpened.size();
}

dev::Runtime& emulatedRuntime() {
  static EmulatedRuntime* const instance = new EmulatedRuntime;
  return *instance;
}

}  // namespace weft::testing
