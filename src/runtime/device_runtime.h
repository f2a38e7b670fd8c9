// The device runtime: the one interface through which Weft touches a GPU (memory, IPC handles,
// streams, events, kernel launch, device properties). Collectives, transports and the enqueue path
// call only this; the CUDA and HIP implementations live in gpu_runtime.cu (one source for both
// vendors, through gpu_api.h), and a build without a GPU backend gets host_runtime.cc, whose
// deviceCount() is 0. A GPU build on a machine without a GPU (or without a driver) also reports
// 0 devices, with the reason, and Weft runs in host mode there.
//
// Streams and events are passed as void*: they are the vendor's cudaStream_t / hipStream_t
// (pointers on both), exactly what the application handed to the NCCL API.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"

namespace weft::dev {

// Where a pointer lives, as the vendor runtime sees it.
enum class MemKind : uint8_t {
  kHost,     // pageable host memory the runtime does not know
  kPinned,   // host memory allocated or registered with the runtime (device-accessible)
  kDevice,   // device memory (device = its GPU)
  kManaged,  // unified/managed memory
};

struct PointerInfo {
  MemKind kind = MemKind::kHost;
  int device = -1;  // for kDevice / kManaged (and kPinned where the runtime says)
};

struct DeviceInfo {
  char name[96] = {};
  char pciBusId[32] = {};  // "0000:18:00.0"
  int multiProcessors = 0;
  size_t totalMemory = 0;
  int computeMajor = 0, computeMinor = 0;  // gfx9.4 reads as 9, 4 on AMD
  // Ticks of the kernel's wait clock per millisecond (CUDA's globaltimer counts nanoseconds; AMD's
  // wall clock runs at the device's wallClockRate).
  int64_t timerTicksPerMs = 0;
};

// An inter-process handle for device memory; both vendors' handles are 64 bytes.
struct IpcHandle {
  unsigned char bytes[64];
};

struct KernelLaunch;
// A kernel's host-side entry: enqueues it on `stream` and returns the vendor runtime's error (0 =
// success), with its name and text in *what on failure. The GPU executor hands its own in
// (src/gpu_executor/kernel_entry.h), so the runtime launches kernels without knowing them.
using KernelEntry = int (*)(const KernelLaunch& l, void* stream, const char** what);

// What launchExecutor needs to start the step-interpreter kernel (src/gpu_executor/).
struct KernelLaunch {
  KernelEntry entry = nullptr;  // null in a build without GPU code
  const void* desc = nullptr;   // device address of the launch descriptor (launch_desc.h)
  int blocks = 0;               // one per chain of the program
  int threads = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual const char* name() const = 0;  // "cuda", "hip" or "host"
  // Usable devices; 0 when the build has no GPU backend, no driver is installed or no GPU is
  // present. whyNone() then says which.
  virtual int deviceCount() = 0;
  virtual std::string whyNone() = 0;
  virtual int runtimeVersion() = 0;  // the vendor runtime's version number, 0 in host builds

  virtual ncclResult_t getDevice(int* dev) = 0;
  virtual ncclResult_t setDevice(int dev) = 0;
  virtual ncclResult_t deviceInfo(int dev, DeviceInfo* out) = 0;
  virtual ncclResult_t pointerInfo(const void* p, PointerInfo* out) = 0;
  // The device a stream belongs to (the current device for the legacy default stream, 0/NULL).
  virtual ncclResult_t streamDevice(void* stream, int* dev) = 0;

  // Device memory of the current device, zero-filled.
  virtual ncclResult_t deviceAlloc(void** p, size_t bytes) = 0;
  virtual ncclResult_t deviceFree(void* p) = 0;
  // Page-locked host memory mapped into the device's address space; *devPtr is the address
  // kernels use (equal to *host on every current platform, kept apart for clarity). Zero-filled.
  virtual ncclResult_t hostAllocMapped(void** host, void** devPtr, size_t bytes) = 0;
  virtual ncclResult_t hostFree(void* host) = 0;
  // Makes existing host memory (a shared-memory FIFO, say) device-accessible; *devPtr as above.
  virtual ncclResult_t hostRegister(void* host, size_t bytes, void** devPtr) = 0;
  virtual ncclResult_t hostUnregister(void* host) = 0;
  // Blocking copy in any direction (the runtime infers it from the pointers).
  virtual ncclResult_t copy(void* dst, const void* src, size_t bytes) = 0;
  virtual ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, void* stream) = 0;

  // Ranks whose address spaces are equal reach each other's device memory by address (with peer
  // access between GPUs); others exchange IPC handles. The process id here; the kernel-emulation
  // tests give ranks that are threads address spaces of their own, so that the IPC paths run.
  virtual int64_t addressSpace();
  // Exports device memory: devPtr must be where an allocation starts (as cudaIpcGetMemHandle and
  // hipIpcGetMemHandle require; their handles name the whole allocation).
  virtual ncclResult_t ipcGetHandle(void* devPtr, IpcHandle* out) = 0;
  // Maps another process's device memory; *p is valid until ipcClose(*p).
  virtual ncclResult_t ipcOpen(const IpcHandle& h, void** p) = 0;
  virtual ncclResult_t ipcClose(void* p) = 0;
  virtual ncclResult_t canAccessPeer(int dev, int peerDev, bool* yes) = 0;
  // Lets the current device access peerDev's memory; "already enabled" is success.
  virtual ncclResult_t enablePeerAccess(int peerDev) = 0;

  virtual ncclResult_t streamCreate(void** stream) = 0;  // non-blocking w.r.t. the legacy stream
  virtual ncclResult_t streamDestroy(void* stream) = 0;
  virtual ncclResult_t streamSynchronize(void* stream) = 0;
  virtual ncclResult_t streamIsCapturing(void* stream, bool* capturing) = 0;
  virtual ncclResult_t eventCreate(void** event) = 0;  // timing disabled
  virtual ncclResult_t eventDestroy(void* event) = 0;
  virtual ncclResult_t eventRecord(void* event, void* stream) = 0;
  // *done: every work recorded before the event has finished.
  virtual ncclResult_t eventQuery(void* event, bool* done) = 0;
  virtual ncclResult_t streamWaitEvent(void* stream, void* event) = 0;
  // Lets this thread call allocation functions while another thread's stream is being captured
  // in global mode; returns the previous mode so that it can be restored (relaxed = true).
  virtual ncclResult_t exchangeCaptureModeRelaxed(bool relaxed, int* previous) = 0;

  virtual ncclResult_t launchExecutor(const KernelLaunch& l, void* stream) = 0;
  // Runs fn(arg) on a runtime thread once the work queued on `stream` before it has finished
  // (cudaLaunchHostFunc; hipStreamAddCallback on AMD). fn must not call the vendor runtime.
  using HostFunction = void (*)(void* arg);
  virtual ncclResult_t launchHostFunction(void* stream, HostFunction fn, void* arg) = 0;
};

// The runtime every caller uses: the one this library was built with, unless a test replaced it.
Runtime& runtime();
// The build's own runtime (gpu_runtime.cu or host_runtime.cc).
Runtime& builtRuntime();
// Tests only: makes runtime() return r (nullptr restores the built one); returns the previous
// replacement. The kernel-emulation tests use it to run the GPU executor on CPU threads.
Runtime* replaceRuntimeForTesting(Runtime* r);

}  // namespace weft::dev
