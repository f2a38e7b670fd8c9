#include "gpu_executor/device_state.h"

#include <chrono>
#include <thread>

#include "base/clock.h"
#include "comm/comm.h"
#include "runtime/device_runtime.h"

namespace weft::gpu {
namespace {
// Counters are one word per link endpoint; a communicator holds a few per peer and lane.
constexpr uint32_t kMaxCounters = 8192;
}  // namespace

ncclResult_t DeviceState::init(int device, std::string* why) {
  dev::Runtime& rt = dev::runtime();
  device_ = device;
  void* devMapped = nullptr;
  if (rt.hostAllocMapped(&mapped_, &devMapped, 4096) != ncclSuccess) {
    *why = "cannot allocate mapped host memory for the kernel's error record";
    return ncclUnhandledCudaError;
  }
  errorHost_ = static_cast<DevError*>(mapped_);
  errorDevice_ = static_cast<DevError*>(devMapped);
  abortHost_ = reinterpret_cast<volatile uint32_t*>(static_cast<char*>(mapped_) + 2048);
  abortDevice_ = reinterpret_cast<const volatile uint32_t*>(static_cast<char*>(devMapped) + 2048);
  void* c = nullptr;
  if (rt.deviceAlloc(&c, kMaxCounters * sizeof(uint64_t)) != ncclSuccess) {
    *why = "cannot allocate the link counters in GPU memory";
    return ncclUnhandledCudaError;
  }
  counters_ = static_cast<uint64_t*>(c);
  nCounters_ = kMaxCounters;
  usedCounters_ = 1;  // word 0 is the kernels' error claim
  return rt.eventCreate(&lastEvent);
}

DeviceState::~DeviceState() {
  dev::Runtime& rt = dev::runtime();
  releaseLinks();
  for (auto& s : slots_) {
    if (s->done != nullptr) rt.eventDestroy(s->done);
    if (s->host != nullptr) rt.hostFree(s->host);
    if (s->device != nullptr) rt.deviceFree(s->device);
  }
  for (void* p : retiredScratch_) rt.deviceFree(p);
  if (scratch_ != nullptr) rt.deviceFree(scratch_);
  if (counters_ != nullptr) rt.deviceFree(counters_);
  if (lastEvent != nullptr) rt.eventDestroy(lastEvent);
  if (mapped_ != nullptr) rt.hostFree(mapped_);
}

ncclResult_t DeviceState::prepareLink(const Connection& conn, DeviceLink** out, std::string* why) {
  auto it = links_.find(&conn);
  if (it != links_.end()) {
    *out = &it->second;
    return ncclSuccess;
  }
  if (usedCounters_ == nCounters_) {
    *why = "more than " + std::to_string(kMaxCounters) + " links on one GPU communicator";
    return ncclInternalError;
  }
  DeviceLink link;
  link.view = conn.view();
  const ConnectionBackend& be = conn.backend();
  if (!be.fifoInDeviceMemory()) {
    // A FIFO in host memory (shared memory with a peer, or the network proxy's buffers): the
    // kernel reaches it through a mapping; the addresses keep their offsets within the range.
    void* base = nullptr;
    size_t bytes = 0;
    be.hostRange(&base, &bytes);
    void* devBase = nullptr;
    if (base == nullptr || dev::runtime().hostRegister(base, bytes, &devBase) != ncclSuccess) {
      *why = "cannot register the " + std::string(be.transportName()) + " FIFO of " + conn.id().describe() +
             " with the GPU";
      return ncclUnhandledCudaError;
    }
    link.registered = base;
    auto shift = [&](auto* p) {
      return reinterpret_cast<decltype(p)>(static_cast<char*>(devBase) +
                                           (reinterpret_cast<char*>(p) - static_cast<char*>(base)));
    };
    link.view.head = shift(link.view.head);
    link.view.slots = shift(link.view.slots);
    link.view.data = shift(link.view.data);
  }
  // The counter starts where the host-side count stands (0: links are used by one executor only).
  link.counter = counters_ + usedCounters_++;
  *out = &links_.emplace(&conn, link).first->second;
  return ncclSuccess;
}

ncclResult_t DeviceState::scratch(size_t bytes, void** out, std::string* why) {
  if (bytes > scratchBytes_) {
    void* p = nullptr;
    size_t grown = std::max(bytes, scratchBytes_ * 2);
    if (dev::runtime().deviceAlloc(&p, grown) != ncclSuccess) {
      *why = "cannot allocate " + std::to_string(grown) + " bytes of GPU scratch";
      return ncclUnhandledCudaError;
    }
    if (scratch_ != nullptr) retiredScratch_.push_back(scratch_);
    scratch_ = p;
    scratchBytes_ = grown;
  }
  *out = scratch_;
  return ncclSuccess;
}

ncclResult_t DeviceState::acquireSlot(size_t bytes, bool capturing, LaunchSlot** out, std::string* why) {
  dev::Runtime& rt = dev::runtime();
  if (!capturing) {
    for (auto& s : slots_) {
      if (s->captured || s->capacity < bytes) continue;
      bool done = !s->used;
      if (!done && rt.eventQuery(s->done, &done) != ncclSuccess) continue;
      if (done) {
        *out = s.get();
        return ncclSuccess;
      }
    }
  }
  auto s = std::make_unique<LaunchSlot>();
  s->capacity = std::max<size_t>(bytes, 16384);
  // While another thread's stream is captured in global mode, allocations are refused unless
  // this thread says it is relaxed about capture.
  int saved = 0;
  rt.exchangeCaptureModeRelaxed(true, &saved);
  ncclResult_t r = rt.hostAllocMapped(&s->host, &s->hostForDevice, s->capacity);
  if (r == ncclSuccess) r = rt.deviceAlloc(&s->device, s->capacity);
  if (r == ncclSuccess) r = rt.eventCreate(&s->done);
  rt.exchangeCaptureModeRelaxed(false, &saved);  // back to the mode saved above
  if (r != ncclSuccess) {
    *why = "cannot allocate a launch descriptor of " + std::to_string(s->capacity) + " bytes";
    if (s->host != nullptr) rt.hostFree(s->host);
    if (s->device != nullptr) rt.deviceFree(s->device);
    return r;
  }
  s->captured = capturing;
  slots_.push_back(std::move(s));
  *out = slots_.back().get();
  return ncclSuccess;
}

bool DeviceState::waitIdle(int64_t timeoutMs) {
  dev::Runtime& rt = dev::runtime();
  const int64_t deadline = nowNs() + timeoutMs * 1000000;
  for (auto& s : slots_) {
    if (!s->used || s->captured) continue;
    bool done = false;
    while (rt.eventQuery(s->done, &done) == ncclSuccess && !done) {
      if (nowNs() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  return true;
}

void DeviceState::releaseLinks() {
  for (auto& [conn, link] : links_)
    if (link.registered != nullptr) dev::runtime().hostUnregister(link.registered);
  links_.clear();
}

void DeviceStateDeleter::operator()(DeviceState* s) const { delete s; }

}  // namespace weft::gpu
