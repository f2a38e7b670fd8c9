// The device runtime (src/runtime): what a build without a GPU backend answers, what a GPU
// build answers on a machine without a GPU or driver, and, where a GPU exists, that memory,
// pointer queries, IPC handles, events and stream capture queries work. The GPU cases skip, with
// the runtime's reason, when there is no device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.h"
#include "runtime/device_runtime.h"
#include "tuner_env.h"
#include "weft/build_config.h"

namespace {

using weft::dev::IpcHandle;
using weft::dev::MemKind;
using weft::dev::PointerInfo;
using weft::dev::runtime;

constexpr std::string_view kBackend = WEFT_GPU_BACKEND;
constexpr bool kGpuBuild = kBackend != "none";

std::string lastError() { return weft::globalLastError(); }

TEST(DeviceRuntime, NameIsTheBuildsBackend) {
  EXPECT_EQ(std::string(runtime().name()), kGpuBuild ? std::string(kBackend) : std::string("host"));
}

TEST(DeviceRuntime, WeftDeviceHostMeansNoDevices) {
  ScopedEnv env({{"WEFT_DEVICE", "host"}});
  EXPECT_EQ(runtime().deviceCount(), 0);
  EXPECT_FALSE(runtime().whyNone().empty());
  if (kGpuBuild) EXPECT_NE(runtime().whyNone().find("WEFT_DEVICE=host"), std::string::npos) << runtime().whyNone();
}

TEST(DeviceRuntime, HostBuildHasNoDevicesAndRefusesEveryCall) {
  if (kGpuBuild) GTEST_SKIP() << "a " << kBackend << " build";
  weft::dev::Runtime& rt = runtime();
  ScopedEnv env({{"WEFT_DEVICE", "auto"}});
  EXPECT_EQ(rt.deviceCount(), 0);
  EXPECT_NE(rt.whyNone().find("WEFT_GPU=none"), std::string::npos) << rt.whyNone();
  EXPECT_EQ(rt.runtimeVersion(), 0);

  int dev = 0;
  void* p = nullptr;
  void* q = nullptr;
  bool yes = false;
  IpcHandle h{};
  PointerInfo info;
  weft::dev::DeviceInfo di;
  // Each refusal names the call, so a caller that forgot to check deviceCount() is easy to find.
  auto refused = [](ncclResult_t r, const char* call) {
    EXPECT_EQ(r, ncclInvalidUsage) << call;
    EXPECT_NE(lastError().find(call), std::string::npos) << lastError();
  };
  refused(rt.getDevice(&dev), "getDevice");
  refused(rt.setDevice(0), "setDevice");
  refused(rt.deviceInfo(0, &di), "deviceInfo");
  refused(rt.pointerInfo(&dev, &info), "pointerInfo");
  refused(rt.streamDevice(nullptr, &dev), "streamDevice");
  refused(rt.deviceAlloc(&p, 64), "deviceAlloc");
  refused(rt.deviceFree(nullptr), "deviceFree");
  refused(rt.hostAllocMapped(&p, &q, 64), "hostAllocMapped");
  refused(rt.hostFree(nullptr), "hostFree");
  refused(rt.hostRegister(&dev, sizeof dev, &q), "hostRegister");
  refused(rt.hostUnregister(&dev), "hostUnregister");
  refused(rt.copy(&dev, &dev, sizeof dev), "copy");
  refused(rt.copyAsync(&dev, &dev, sizeof dev, nullptr), "copyAsync");
  refused(rt.ipcGetHandle(&dev, &h), "ipcGetHandle");
  refused(rt.ipcOpen(h, &p), "ipcOpen");
  refused(rt.ipcClose(nullptr), "ipcClose");
  refused(rt.canAccessPeer(0, 1, &yes), "canAccessPeer");
  refused(rt.enablePeerAccess(1), "enablePeerAccess");
  refused(rt.streamCreate(&p), "streamCreate");
  refused(rt.streamDestroy(nullptr), "streamDestroy");
  refused(rt.streamSynchronize(nullptr), "streamSynchronize");
  refused(rt.streamIsCapturing(nullptr, &yes), "streamIsCapturing");
  refused(rt.eventCreate(&p), "eventCreate");
  refused(rt.eventDestroy(nullptr), "eventDestroy");
  refused(rt.eventRecord(nullptr, nullptr), "eventRecord");
  refused(rt.eventQuery(nullptr, &yes), "eventQuery");
  refused(rt.streamWaitEvent(nullptr, nullptr), "streamWaitEvent");
  refused(rt.exchangeCaptureModeRelaxed(true, &dev), "exchangeCaptureModeRelaxed");
  refused(rt.launchExecutor(weft::dev::KernelLaunch{}, nullptr), "launchExecutor");
}

// A GPU build on a machine without a driver (this CI) or without a GPU: no devices, the vendor's
// own error as the reason, and calls fail with ncclUnhandledCudaError naming the vendor call.
TEST(DeviceRuntime, GpuBuildWithoutAGpuSaysWhy) {
  if (!kGpuBuild) GTEST_SKIP() << "built without a GPU backend";
  ScopedEnv env({{"WEFT_DEVICE", "auto"}});
  weft::dev::Runtime& rt = runtime();
  if (rt.deviceCount() > 0) GTEST_SKIP() << "this machine has " << rt.deviceCount() << " GPU(s)";
  const std::string countCall = std::string(kBackend) + "GetDeviceCount";
  EXPECT_NE(rt.whyNone().find(countCall), std::string::npos) << rt.whyNone();
  EXPECT_GT(rt.runtimeVersion(), 0);  // the runtime library answers without a driver
  void* p = nullptr;
  EXPECT_EQ(rt.deviceAlloc(&p, 64), ncclUnhandledCudaError);
  EXPECT_NE(lastError().find(std::string(kBackend) + "Malloc: "), std::string::npos) << lastError();
}

// Cases that need a real device.
class DeviceRuntimeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (rt.deviceCount() == 0) GTEST_SKIP() << "no GPU: " << rt.whyNone();
    ASSERT_EQ(rt.getDevice(&dev), ncclSuccess) << lastError();
  }
  ScopedEnv env{{"WEFT_DEVICE", "auto"}};
  weft::dev::Runtime& rt = runtime();
  int dev = -1;
};

TEST_F(DeviceRuntimeGpu, DeviceInfoDescribesTheGpu) {
  weft::dev::DeviceInfo info;
  ASSERT_EQ(rt.deviceInfo(dev, &info), ncclSuccess) << lastError();
  EXPECT_GT(std::strlen(info.name), 0u);
  EXPECT_EQ(std::strlen(info.pciBusId), 12u) << info.pciBusId;  // dddd:bb:dd.f
  EXPECT_GT(info.multiProcessors, 0);
  EXPECT_GT(info.totalMemory, 0u);
  EXPECT_GT(info.timerTicksPerMs, 0);
}

TEST_F(DeviceRuntimeGpu, AllocationIsZeroedAndRoundTrips) {
  constexpr size_t kBytes = 1 << 20;
  void* d = nullptr;
  ASSERT_EQ(rt.deviceAlloc(&d, kBytes), ncclSuccess) << lastError();
  std::vector<unsigned char> host(kBytes, 0xab);
  ASSERT_EQ(rt.copy(host.data(), d, kBytes), ncclSuccess) << lastError();
  EXPECT_EQ(host, std::vector<unsigned char>(kBytes, 0));
  for (size_t i = 0; i < kBytes; ++i) host[i] = static_cast<unsigned char>(i * 7);
  std::vector<unsigned char> back(kBytes);
  ASSERT_EQ(rt.copy(d, host.data(), kBytes), ncclSuccess) << lastError();
  ASSERT_EQ(rt.copy(back.data(), d, kBytes), ncclSuccess) << lastError();
  EXPECT_EQ(back, host);
  EXPECT_EQ(rt.deviceFree(d), ncclSuccess) << lastError();
}

TEST_F(DeviceRuntimeGpu, PointerInfoTellsDeviceHostAndPinnedApart) {
  void* d = nullptr;
  ASSERT_EQ(rt.deviceAlloc(&d, 4096), ncclSuccess) << lastError();
  PointerInfo info;
  ASSERT_EQ(rt.pointerInfo(d, &info), ncclSuccess) << lastError();
  EXPECT_EQ(info.kind, MemKind::kDevice);
  EXPECT_EQ(info.device, dev);
  EXPECT_EQ(rt.deviceFree(d), ncclSuccess);

  std::vector<char> plain(4096);
  ASSERT_EQ(rt.pointerInfo(plain.data(), &info), ncclSuccess) << lastError();
  EXPECT_EQ(info.kind, MemKind::kHost);

  void* host = nullptr;
  void* mapped = nullptr;
  ASSERT_EQ(rt.hostAllocMapped(&host, &mapped, 4096), ncclSuccess) << lastError();
  EXPECT_NE(mapped, nullptr);
  EXPECT_EQ(static_cast<char*>(host)[4095], 0);
  ASSERT_EQ(rt.pointerInfo(host, &info), ncclSuccess) << lastError();
  EXPECT_EQ(info.kind, MemKind::kPinned);
  EXPECT_EQ(rt.hostFree(host), ncclSuccess);

  void* regDev = nullptr;
  ASSERT_EQ(rt.hostRegister(plain.data(), plain.size(), &regDev), ncclSuccess) << lastError();
  EXPECT_NE(regDev, nullptr);
  ASSERT_EQ(rt.pointerInfo(plain.data(), &info), ncclSuccess) << lastError();
  EXPECT_EQ(info.kind, MemKind::kPinned);
  EXPECT_EQ(rt.hostUnregister(plain.data()), ncclSuccess) << lastError();
}

TEST_F(DeviceRuntimeGpu, IpcHandleOfDeviceMemory) {
  void* d = nullptr;
  ASSERT_EQ(rt.deviceAlloc(&d, 1 << 20), ncclSuccess) << lastError();
  IpcHandle h{};
  EXPECT_EQ(rt.ipcGetHandle(d, &h), ncclSuccess) << lastError();
  EXPECT_NE(std::vector<unsigned char>(h.bytes, h.bytes + sizeof h.bytes), std::vector<unsigned char>(64, 0));
  EXPECT_EQ(rt.deviceFree(d), ncclSuccess);
}

TEST_F(DeviceRuntimeGpu, EventRecordAndQuery) {
  void* stream = nullptr;
  void* event = nullptr;
  ASSERT_EQ(rt.streamCreate(&stream), ncclSuccess) << lastError();
  int sdev = -1;
  ASSERT_EQ(rt.streamDevice(stream, &sdev), ncclSuccess) << lastError();
  EXPECT_EQ(sdev, dev);
  ASSERT_EQ(rt.streamDevice(nullptr, &sdev), ncclSuccess) << lastError();
  EXPECT_EQ(sdev, dev);
  ASSERT_EQ(rt.eventCreate(&event), ncclSuccess) << lastError();
  ASSERT_EQ(rt.eventRecord(event, stream), ncclSuccess) << lastError();
  ASSERT_EQ(rt.streamSynchronize(stream), ncclSuccess) << lastError();
  bool done = false;
  ASSERT_EQ(rt.eventQuery(event, &done), ncclSuccess) << lastError();
  EXPECT_TRUE(done);
  EXPECT_EQ(rt.streamWaitEvent(stream, event), ncclSuccess) << lastError();
  EXPECT_EQ(rt.eventDestroy(event), ncclSuccess);
  EXPECT_EQ(rt.streamDestroy(stream), ncclSuccess);
}

TEST_F(DeviceRuntimeGpu, StreamCaptureQueries) {
  void* stream = nullptr;
  ASSERT_EQ(rt.streamCreate(&stream), ncclSuccess) << lastError();
  bool capturing = true;
  ASSERT_EQ(rt.streamIsCapturing(stream, &capturing), ncclSuccess) << lastError();
  EXPECT_FALSE(capturing);
  int previous = -1;
  ASSERT_EQ(rt.exchangeCaptureModeRelaxed(true, &previous), ncclSuccess) << lastError();
  int relaxed = previous;  // restoring hands back the relaxed mode we set
  ASSERT_EQ(rt.exchangeCaptureModeRelaxed(false, &relaxed), ncclSuccess) << lastError();
  EXPECT_NE(relaxed, previous);
  EXPECT_EQ(rt.streamDestroy(stream), ncclSuccess);
}

}  // namespace
