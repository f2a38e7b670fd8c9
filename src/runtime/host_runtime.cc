// The device runtime of a build without a GPU backend (WEFT_GPU=none; CMake compiles this file only
// there). It has no devices, so Weft runs every communicator in host mode. A call that needs a GPU
// reaching this runtime is a bug in the caller (it should have checked deviceCount()), so each one
// fails with ncclInvalidUsage and a message naming the call, rather than pretending to work.
#include "base/errors.h"
#include "runtime/device_runtime.h"

namespace weft::dev {
namespace {

ncclResult_t noGpu(const char* call) {
  return reportError(nullptr, ncclInvalidUsage, "%s: this Weft was built without a GPU backend (WEFT_GPU=none)", call);
}

class HostRuntime final : public Runtime {
 public:
  const char* name() const override { return "host"; }
  int deviceCount() override { return 0; }
  std::string whyNone() override { return "built without a GPU backend (WEFT_GPU=none)"; }
  int runtimeVersion() override { return 0; }

  ncclResult_t getDevice(int*) override { return noGpu("getDevice"); }
  ncclResult_t setDevice(int) override { return noGpu("setDevice"); }
  ncclResult_t deviceInfo(int, DeviceInfo*) override { return noGpu("deviceInfo"); }
  ncclResult_t pointerInfo(const void*, PointerInfo*) override { return noGpu("pointerInfo"); }
  ncclResult_t streamDevice(void*, int*) override { return noGpu("streamDevice"); }

  ncclResult_t deviceAlloc(void**, size_t) override { return noGpu("deviceAlloc"); }
  ncclResult_t deviceFree(void*) override { return noGpu("deviceFree"); }
  ncclResult_t hostAllocMapped(void**, void**, size_t) override { return noGpu("hostAllocMapped"); }
  ncclResult_t hostFree(void*) override { return noGpu("hostFree"); }
  ncclResult_t hostRegister(void*, size_t, void**) override { return noGpu("hostRegister"); }
  ncclResult_t hostUnregister(void*) override { return noGpu("hostUnregister"); }
  ncclResult_t copy(void*, const void*, size_t) override { return noGpu("copy"); }
  ncclResult_t copyAsync(void*, const void*, size_t, void*) override { return noGpu("copyAsync"); }

  ncclResult_t ipcGetHandle(void*, IpcHandle*) override { return noGpu("ipcGetHandle"); }
  ncclResult_t ipcOpen(const IpcHandle&, void**) override { return noGpu("ipcOpen"); }
  ncclResult_t ipcClose(void*) override { return noGpu("ipcClose"); }
  ncclResult_t canAccessPeer(int, int, bool*) override { return noGpu("canAccessPeer"); }
  ncclResult_t enablePeerAccess(int) override { return noGpu("enablePeerAccess"); }

  ncclResult_t streamCreate(void**) override { return noGpu("streamCreate"); }
  ncclResult_t streamDestroy(void*) override { return noGpu("streamDestroy"); }
  ncclResult_t streamSynchronize(void*) override { return noGpu("streamSynchronize"); }
  ncclResult_t streamIsCapturing(void*, bool*) override { return noGpu("streamIsCapturing"); }
  ncclResult_t eventCreate(void**) override { return noGpu("eventCreate"); }
  ncclResult_t eventDestroy(void*) override { return noGpu("eventDestroy"); }
  ncclResult_t eventRecord(void*, void*) override { return noGpu("eventRecord"); }
  ncclResult_t eventQuery(void*, bool*) override { return noGpu("eventQuery"); }
  ncclResult_t streamWaitEvent(void*, void*) override { return noGpu("streamWaitEvent"); }
  ncclResult_t exchangeCaptureModeRelaxed(bool, int*) override { return noGpu("exchangeCaptureModeRelaxed"); }

  ncclResult_t launchExecutor(const KernelLaunch&, void*) override { return noGpu("launchExecutor"); }
  ncclResult_t launchHostFunction(void*, HostFunction, void*) override { return noGpu("launchHostFunction"); }
};

}  // namespace

Runtime& builtRuntime() {
  // Never destroyed: the runtime may be used from other objects' destructors at exit.
  static HostRuntime* const instance = new HostRuntime;
  return *instance;
}

}  // namespace weft::dev
