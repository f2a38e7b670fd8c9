// The device runtime of a CUDA or HIP build: one source for both vendors, spelled through gpu_api.h
// (CMake defines WEFT_GPU_CUDA or WEFT_GPU_HIP and compiles this file with nvcc or clang -x hip).
// Every vendor failure becomes ncclUnhandledCudaError with a message naming the vendor call, its
// error name and its text. A machine without a driver or a GPU is not an error: deviceCount() is
// then 0, whyNone() keeps the vendor's reason, and Weft runs in host mode.
#include "runtime/gpu_api.h"

#include <cctype>
#include <cstring>
#include <memory>
#include <string>

#include "base/errors.h"
#include "base/log.h"
#include "base/params.h"
#include "base/result.h"
#include "runtime/device_runtime.h"

// Two steps so that the vendor's name ("cudaMalloc", "hipHostMalloc") is quoted, not gpu_api.h's.
#define WEFT_GPU_STR2(x) #x
#define WEFT_GPU_STR(x) WEFT_GPU_STR2(x)
// Calls fn(args...) and returns from the enclosing function with the mapped error if it fails.
#define WEFT_GPU_TRY(fn, ...)                                                       \
  do {                                                                              \
    gpuError_t weftGpuErr = fn(__VA_ARGS__);                                        \
    if (weftGpuErr != gpuSuccess) return vendorError(WEFT_GPU_STR(fn), weftGpuErr); \
  } while (0)

namespace weft::dev {
namespace {

static_assert(sizeof(gpuIpcMemHandle_t) == sizeof(IpcHandle), "IpcHandle must hold the vendor's handle");

// Reads and clears the thread's last-error slot. Every failure we have already handled must be
// cleared: launchStepKernel reads that slot after a launch and would otherwise blame the launch.
void clearLastError() { (void)gpuGetLastError(); }

std::string describe(const char* call, gpuError_t e) {
  std::string s = std::string(call) + ": " + gpuGetErrorName(e);
  // HIP 5 gives the name again as the text; say it once.
  if (std::strcmp(gpuGetErrorName(e), gpuGetErrorString(e)) != 0) s += std::string(": ") + gpuGetErrorString(e);
  return s;
}

ncclResult_t vendorError(const char* call, gpuError_t e) {
  clearLastError();
  return reportError(nullptr, ncclUnhandledCudaError, "%s", describe(call, e).c_str());
}

// The vendor's device count, asked once per process. Without a driver CUDA fails with
// cudaErrorInsufficientDriver (and leaves the count unwritten); HIP without a GPU fails with
// hipErrorNoDevice. Both mean "no devices" here, and the text is kept for whyNone().
struct Probe {
  int count = 0;
  std::string why;
};

const Probe& probe() {
  // A function-local static: initialised exactly once even when threads race to the first call.
  static const Probe result = [] {
    Probe p;
    int n = 0;
    gpuError_t e = gpuGetDeviceCount(&n);
    if (e != gpuSuccess) {
      clearLastError();
      p.why = describe(WEFT_GPU_STR(gpuGetDeviceCount), e);
      n = 0;
    } else if (n <= 0) {
      p.why = std::string(WEFT_GPU_STR(gpuGetDeviceCount)) + " reported no devices";
      n = 0;
    }
    p.count = n;
    if (n == 0) WEFT_INFO(kLogInit, "no usable %s device: %s", WEFT_GPU_VENDOR, p.why.c_str());
    return p;
  }();
  return result;
}

bool forcedHost() { return param::device() == "host"; }

// Ticks per millisecond of the clock the step kernel reads while it waits.
ncclResult_t timerRate(int dev, int64_t* ticksPerMs) {
#if defined(WEFT_GPU_CUDA)
  (void)dev;
  *ticksPerMs = 1000000;  // %globaltimer counts nanoseconds
#elif defined(WEFT_HIP_PRE6)
  // HIP 5.2 cannot report the rate. wall_clock64() runs at a constant 100 MHz on the gfx9 data
  // center chips (MI100 to MI300) that this build targets.
  (void)dev;
  *ticksPerMs = 100000;
#else
  int khz = 0;
  WEFT_GPU_TRY(hipDeviceGetAttribute, &khz, hipDeviceAttributeWallClockRate, dev);
  *ticksPerMs = khz;  // kHz: ticks per millisecond
#endif
  return ncclSuccess;
}

MemKind kindOf(const gpuPointerAttributes_t& a) {
#if defined(WEFT_HIP_PRE6)
  // HIP 5: memoryType says host or device; managed memory is a separate flag.
  if (a.isManaged) return MemKind::kManaged;
  switch (a.memoryType) {
    case hipMemoryTypeHost: return MemKind::kPinned;
    case hipMemoryTypeDevice:
    case hipMemoryTypeArray: return MemKind::kDevice;
    case hipMemoryTypeUnified: return MemKind::kManaged;
    // HIP 5.7 adds hipMemoryTypeManaged, which 5.2 lacks; managed memory also sets isManaged
    // (above). Anything else is treated as plain host memory: it is staged, never mapped.
    default: break;
  }
  return MemKind::kHost;
#else
  switch (a.type) {
    case gpuMemoryTypeUnregistered: return MemKind::kHost;
    case gpuMemoryTypeHost: return MemKind::kPinned;
    case gpuMemoryTypeDevice: return MemKind::kDevice;
    case gpuMemoryTypeManaged: return MemKind::kManaged;
    default: return MemKind::kHost;
  }
#endif
}

class GpuRuntime final : public Runtime {
 public:
  const char* name() const override { return WEFT_GPU_VENDOR; }

  int deviceCount() override { return forcedHost() ? 0 : probe().count; }

  std::string whyNone() override {
    if (forcedHost()) return "WEFT_DEVICE=host forces host mode";
    return probe().why;  // "" when there are devices
  }

  int runtimeVersion() override {
    int v = 0;
    if (gpuRuntimeGetVersion(&v) != gpuSuccess) {
      clearLastError();
      return 0;
    }
    return v;
  }

  ncclResult_t getDevice(int* dev) override {
    WEFT_GPU_TRY(gpuGetDevice, dev);
    return ncclSuccess;
  }

  ncclResult_t setDevice(int dev) override {
    WEFT_GPU_TRY(gpuSetDevice, dev);
    return ncclSuccess;
  }

  ncclResult_t deviceInfo(int dev, DeviceInfo* out) override {
    gpuDeviceProp_t prop;
    WEFT_GPU_TRY(gpuGetDeviceProperties, &prop, dev);
    *out = DeviceInfo{};
    // The vendor's name field is longer than ours; keep what fits (names are far shorter).
    size_t n = strnlen(prop.name, sizeof out->name - 1);
    std::memcpy(out->name, prop.name, n);
    out->multiProcessors = prop.multiProcessorCount;
    out->totalMemory = prop.totalGlobalMem;
    out->computeMajor = prop.major;
    out->computeMinor = prop.minor;
    WEFT_CHECK(timerRate(dev, &out->timerTicksPerMs));
    WEFT_GPU_TRY(gpuDeviceGetPCIBusId, out->pciBusId, static_cast<int>(sizeof out->pciBusId), dev);
    // Lower case, as sysfs and hwloc spell bus ids, so the topology code can match them.
    for (char* c = out->pciBusId; *c; ++c) *c = static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
    return ncclSuccess;
  }

  ncclResult_t pointerInfo(const void* p, PointerInfo* out) override {
    gpuPointerAttributes_t a;
    std::memset(&a, 0, sizeof a);
    gpuError_t e = gpuPointerGetAttributes(&a, p);
    if (e == gpuErrorInvalidValue) {
      // Runtimes older than CUDA 11 (and HIP 5) fail for memory they never saw instead of saying
      // "unregistered": that is plain host memory. The failure is sticky in the last-error slot.
      clearLastError();
      *out = PointerInfo{MemKind::kHost, -1};
      return ncclSuccess;
    }
    if (e != gpuSuccess) return vendorError(WEFT_GPU_STR(gpuPointerGetAttributes), e);
    out->kind = kindOf(a);
    out->device = out->kind == MemKind::kHost ? -1 : a.device;
    return ncclSuccess;
  }

  ncclResult_t streamDevice(void* stream, int* dev) override {
    if (stream == nullptr) return getDevice(dev);  // the legacy default stream: the current device
#if defined(WEFT_HIP_PRE6)
    int d = hipGetStreamDeviceId(static_cast<gpuStream_t>(stream));  // no error code, -1 instead
    if (d < 0)
      return reportError(nullptr, ncclUnhandledCudaError, "hipGetStreamDeviceId: stream %p is not a valid stream",
                         stream);
    *dev = d;
#else
    WEFT_GPU_TRY(gpuStreamGetDevice, static_cast<gpuStream_t>(stream), dev);
#endif
    return ncclSuccess;
  }

  ncclResult_t deviceAlloc(void** p, size_t bytes) override {
    WEFT_GPU_TRY(gpuMalloc, p, bytes);
    // Zero it on a private non-blocking stream and wait for that stream only. The legacy stream
    // would also wait for every kernel on the device's blocking streams, and a peer rank sharing
    // this GPU may have a kernel running that waits for this very allocation (a FIFO being set
    // up): that wait would never end.
    gpuStream_t zeroing = nullptr;
    gpuError_t e = gpuStreamCreateWithFlags(&zeroing, gpuStreamNonBlocking);
    const char* call = WEFT_GPU_STR(gpuStreamCreateWithFlags);
    if (e == gpuSuccess) {
      e = gpuMemsetAsync(*p, 0, bytes, zeroing);
      call = WEFT_GPU_STR(gpuMemsetAsync);
      if (e == gpuSuccess) {
        e = gpuStreamSynchronize(zeroing);
        call = WEFT_GPU_STR(gpuStreamSynchronize);
      }
      (void)gpuStreamDestroy(zeroing);
    }
    if (e != gpuSuccess) {
      (void)gpuFree(*p);
      *p = nullptr;
      return vendorError(call, e);
    }
    return ncclSuccess;
  }

  ncclResult_t deviceFree(void* p) override {
    WEFT_GPU_TRY(gpuFree, p);
    return ncclSuccess;
  }

  ncclResult_t hostAllocMapped(void** host, void** devPtr, size_t bytes) override {
    // Portable: pinned for every device of the process, not only the current one.
    WEFT_GPU_TRY(gpuHostAlloc, host, bytes, gpuHostAllocMapped | gpuHostAllocPortable);
    std::memset(*host, 0, bytes);
    gpuError_t e = gpuHostGetDevicePointer(devPtr, *host, 0);
    if (e != gpuSuccess) {
      (void)gpuFreeHost(*host);
      *host = nullptr;
      return vendorError(WEFT_GPU_STR(gpuHostGetDevicePointer), e);
    }
    return ncclSuccess;
  }

  ncclResult_t hostFree(void* host) override {
    WEFT_GPU_TRY(gpuFreeHost, host);
    return ncclSuccess;
  }

  ncclResult_t hostRegister(void* host, size_t bytes, void** devPtr) override {
    WEFT_GPU_TRY(gpuHostRegister, host, bytes, gpuHostRegisterMapped | gpuHostRegisterPortable);
    gpuError_t e = gpuHostGetDevicePointer(devPtr, host, 0);
    if (e != gpuSuccess) {
      (void)gpuHostUnregister(host);
      return vendorError(WEFT_GPU_STR(gpuHostGetDevicePointer), e);
    }
    return ncclSuccess;
  }

  ncclResult_t hostUnregister(void* host) override {
    WEFT_GPU_TRY(gpuHostUnregister, host);
    return ncclSuccess;
  }

  ncclResult_t copy(void* dst, const void* src, size_t bytes) override {
    WEFT_GPU_TRY(gpuMemcpy, dst, src, bytes, gpuMemcpyDefault);
    return ncclSuccess;
  }

  ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, void* stream) override {
    WEFT_GPU_TRY(gpuMemcpyAsync, dst, src, bytes, gpuMemcpyDefault, static_cast<gpuStream_t>(stream));
    return ncclSuccess;
  }

  ncclResult_t ipcGetHandle(void* devPtr, IpcHandle* out) override {
    gpuIpcMemHandle_t h;
    WEFT_GPU_TRY(gpuIpcGetMemHandle, &h, devPtr);
    std::memcpy(out->bytes, &h, sizeof h);
    return ncclSuccess;
  }

  ncclResult_t ipcOpen(const IpcHandle& in, void** p) override {
    gpuIpcMemHandle_t h;
    std::memcpy(&h, in.bytes, sizeof h);
    WEFT_GPU_TRY(gpuIpcOpenMemHandle, p, h, gpuIpcMemLazyEnablePeerAccess);
    return ncclSuccess;
  }

  ncclResult_t ipcClose(void* p) override {
    WEFT_GPU_TRY(gpuIpcCloseMemHandle, p);
    return ncclSuccess;
  }

  ncclResult_t canAccessPeer(int dev, int peerDev, bool* yes) override {
    int v = 0;
    WEFT_GPU_TRY(gpuDeviceCanAccessPeer, &v, dev, peerDev);
    *yes = v != 0;
    return ncclSuccess;
  }

  ncclResult_t enablePeerAccess(int peerDev) override {
    gpuError_t e = gpuDeviceEnablePeerAccess(peerDev, 0);
    if (e == gpuErrorPeerAccessAlreadyEnabled) {
      clearLastError();
      return ncclSuccess;
    }
    if (e != gpuSuccess) return vendorError(WEFT_GPU_STR(gpuDeviceEnablePeerAccess), e);
    return ncclSuccess;
  }

  ncclResult_t streamCreate(void** stream) override {
    gpuStream_t s = nullptr;
    WEFT_GPU_TRY(gpuStreamCreateWithFlags, &s, gpuStreamNonBlocking);
    *stream = s;
    return ncclSuccess;
  }

  ncclResult_t streamDestroy(void* stream) override {
    WEFT_GPU_TRY(gpuStreamDestroy, static_cast<gpuStream_t>(stream));
    return ncclSuccess;
  }

  ncclResult_t streamSynchronize(void* stream) override {
    WEFT_GPU_TRY(gpuStreamSynchronize, static_cast<gpuStream_t>(stream));
    return ncclSuccess;
  }

  ncclResult_t streamIsCapturing(void* stream, bool* capturing) override {
    gpuStreamCaptureStatus st = gpuStreamCaptureStatusNone;
    WEFT_GPU_TRY(gpuStreamIsCapturing, static_cast<gpuStream_t>(stream), &st);
    // An invalidated capture still has to be ended by the application: it counts as capturing.
    *capturing = st != gpuStreamCaptureStatusNone;
    return ncclSuccess;
  }

  ncclResult_t eventCreate(void** event) override {
    gpuEvent_t e = nullptr;
    WEFT_GPU_TRY(gpuEventCreateWithFlags, &e, gpuEventDisableTiming);
    *event = e;
    return ncclSuccess;
  }

  ncclResult_t eventDestroy(void* event) override {
    WEFT_GPU_TRY(gpuEventDestroy, static_cast<gpuEvent_t>(event));
    return ncclSuccess;
  }

  ncclResult_t eventRecord(void* event, void* stream) override {
    WEFT_GPU_TRY(gpuEventRecord, static_cast<gpuEvent_t>(event), static_cast<gpuStream_t>(stream));
    return ncclSuccess;
  }

  ncclResult_t eventQuery(void* event, bool* done) override {
    gpuError_t e = gpuEventQuery(static_cast<gpuEvent_t>(event));
    if (e == gpuErrorNotReady) {
      clearLastError();  // "not ready" is an answer, not a failure
      *done = false;
      return ncclSuccess;
    }
    if (e != gpuSuccess) return vendorError(WEFT_GPU_STR(gpuEventQuery), e);
    *done = true;
    return ncclSuccess;
  }

  ncclResult_t streamWaitEvent(void* stream, void* event) override {
    WEFT_GPU_TRY(gpuStreamWaitEvent, static_cast<gpuStream_t>(stream), static_cast<gpuEvent_t>(event), 0);
    return ncclSuccess;
  }

  // relaxed = true switches this thread to relaxed mode; relaxed = false puts back the mode in
  // *previous (what the first call returned). Either way *previous receives the mode replaced.
  ncclResult_t exchangeCaptureModeRelaxed(bool relaxed, int* previous) override {
    gpuStreamCaptureMode mode = relaxed ? gpuStreamCaptureModeRelaxed : static_cast<gpuStreamCaptureMode>(*previous);
    WEFT_GPU_TRY(gpuThreadExchangeStreamCaptureMode, &mode);
    *previous = static_cast<int>(mode);
    return ncclSuccess;
  }

  ncclResult_t launchExecutor(const KernelLaunch& l, void* stream) override {
    if (l.entry == nullptr)
      return reportError(nullptr, ncclInternalError, "step kernel launch: this build holds no GPU kernel");
    const char* what = nullptr;
    int e = l.entry(l, stream, &what);
    if (e != 0) {
      clearLastError();
      return reportError(nullptr, ncclUnhandledCudaError, "step kernel launch (%d blocks x %d threads): %s", l.blocks,
                         l.threads, what != nullptr ? what : "unknown error");
    }
    return ncclSuccess;
  }

  ncclResult_t launchHostFunction(void* stream, HostFunction fn, void* arg) override {
#if defined(WEFT_GPU_HIP)
    // hipLaunchHostFunc came with HIP 5.3; a stream callback does the same in every HIP Weft builds
    // with (the callback gets the stream's status, which the host function has no use for).
    struct Call {
      HostFunction fn;
      void* arg;
    };
    auto* call = new Call{fn, arg};
    auto run = [](hipStream_t, hipError_t, void* p) {
      std::unique_ptr<Call> c(static_cast<Call*>(p));
      c->fn(c->arg);
    };
    const hipError_t e = hipStreamAddCallback(static_cast<hipStream_t>(stream), run, call, 0);
    if (e != hipSuccess) {
      delete call;
      return vendorError("hipStreamAddCallback", e);
    }
#else
    WEFT_GPU_TRY(cudaLaunchHostFunc, static_cast<gpuStream_t>(stream), fn, arg);
#endif
    return ncclSuccess;
  }
};

}  // namespace

Runtime& builtRuntime() {
  // Never destroyed: the runtime may be used from other objects' destructors at exit.
  static GpuRuntime* const instance = new GpuRuntime;
  return *instance;
}

}  // namespace weft::dev
