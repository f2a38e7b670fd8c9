// What a GPU communicator keeps on and for its device: the kernel's error record and abort flag
// (mapped host memory), the device-resident message counters of its links, each link's FIFO as
// the device sees it, the direct lane's staging areas, a grow-only scratch area, and the pool of
// launch descriptors. One per communicator, made at init when the communicator runs on a GPU
// (ncclComm::gpu).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu_executor/device_direct.h"
#include "gpu_executor/kernel_profile.h"
#include "gpu_executor/launch_desc.h"
#include "nccl.h"
#include "transports/connection.h"

struct ncclComm;

namespace weft::gpu {

// One link endpoint, prepared for kernels.
struct DeviceLink {
  FifoView view;  // device-accessible addresses
  uint64_t* counter = nullptr;
  void* registered = nullptr;  // host memory registered for it (unregistered at teardown)
};

// A launch descriptor's home: pinned host memory the host writes, device memory the kernel reads
// (filled by an asynchronous copy on the launch's stream), and an event that says when the
// kernel that read it has finished. Slots used by a graph capture stay with the graph.
struct LaunchSlot {
  void* host = nullptr;
  void* hostForDevice = nullptr;  // the same host memory as kernels address it (the kernel's times)
  void* device = nullptr;
  size_t capacity = 0;
  void* done = nullptr;  // event recorded after the kernel
  bool used = false;
  bool captured = false;  // belongs to a captured graph: never reused
};

class DeviceState {
 public:
  DeviceState() = default;
  ~DeviceState();
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  // Allocates the per-communicator device resources on `device` (the caller's current one).
  ncclResult_t init(int device, std::string* why);

  int device() const { return device_; }
  // The link as kernels see it: registers host FIFOs, hands out a counter. Once per link.
  ncclResult_t prepareLink(const Connection& conn, DeviceLink** out, std::string* why);
  // A scratch area of at least `bytes` device bytes. Growing never frees a buffer a queued kernel
  // may still use: old ones are kept until teardown.
  ncclResult_t scratch(size_t bytes, void** out, std::string* why);
  // A free descriptor slot of at least `bytes`; `capturing` marks it as the graph's for good.
  ncclResult_t acquireSlot(size_t bytes, bool capturing, LaunchSlot** out, std::string* why);

  // The direct lane's staging areas (DDA and low precision), made on first use.
  DeviceDirectAreas direct;
  // Shared with queued profiler kernel events (kernel_profile.h); closed at teardown.
  std::shared_ptr<KernelEventGate> kernelEventGate = std::make_shared<KernelEventGate>();

  // The last launch's stream and completion event, for ordering launches across streams.
  void* lastStream = nullptr;
  void* lastEvent = nullptr;

  DevError* errorHost() const { return errorHost_; }
  DevError* errorDevice() const { return errorDevice_; }
  volatile uint32_t* abortHost() const { return abortHost_; }
  const volatile uint32_t* abortDevice() const { return abortDevice_; }
  uint32_t* errorClaim() const { return reinterpret_cast<uint32_t*>(counters_); }  // word 0 of the counters
  // Waits (bounded) until every launch of this communicator has finished; false on timeout.
  bool waitIdle(int64_t timeoutMs);
  // Unregisters host FIFOs before their connections unmap them.
  void releaseLinks();

 private:
  int device_ = -1;
  DevError* errorHost_ = nullptr;
  DevError* errorDevice_ = nullptr;
  volatile uint32_t* abortHost_ = nullptr;
  const volatile uint32_t* abortDevice_ = nullptr;
  void* mapped_ = nullptr;  // one page holding both
  uint64_t* counters_ = nullptr;
  uint32_t nCounters_ = 0, usedCounters_ = 0;
  void* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  std::vector<void*> retiredScratch_;
  std::vector<std::unique_ptr<LaunchSlot>> slots_;
  std::unordered_map<const Connection*, DeviceLink> links_;
};

}  // namespace weft::gpu
