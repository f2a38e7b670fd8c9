#include "gpu_executor/kernel_profile.h"

#include <algorithm>

#include "comm/comm.h"
#include "gpu_executor/device_state.h"
#include "runtime/device_runtime.h"
#include "trace/profiler.h"

namespace weft::gpu {

bool KernelEvents::wanted(const ncclComm* comm) {
  return comm->profilerContext != nullptr && profiler::wants(ncclProfileKernelCh);
}

KernelEvents::KernelEvents(const ncclComm* comm)
    : gate_(comm->gpu->kernelEventGate), context_(comm->profilerContext), rank_(comm->rank) {}

void KernelEvents::add(uint32_t timeIndex, void* parent, int channel) {
  if (parent == nullptr) return;
  auto it = std::find_if(events_.begin(), events_.end(),
                         [&](const Event& e) { return e.parent == parent && e.channel == channel; });
  if (it == events_.end()) it = events_.insert(events_.end(), Event{parent, channel, {}});
  it->entries.push_back(timeIndex);
}

ncclResult_t KernelEvents::queue(std::unique_ptr<KernelEvents> events, const DevSeqTimes* times, void* stream) {
  if (events->events_.empty()) return ncclSuccess;
  events->times_ = times;
  KernelEvents* raw = events.release();
  ncclResult_t r = dev::runtime().launchHostFunction(stream, &KernelEvents::emit, raw);
  if (r != ncclSuccess) delete raw;
  return r;
}

void KernelEvents::emit(void* self) {
  std::unique_ptr<KernelEvents> events(static_cast<KernelEvents*>(self));
  std::lock_guard<std::mutex> lock(events->gate_->mutex);
  if (events->gate_->open) events->emitNow();
}

namespace {

// The KernelPhase events (v7) of a finished direct-lane event under `channelEvent`: initial_sync
// from at[0] until the ranks first met (at[1]), compute until the closing barrier began (at[2]) or
// the end, and final_sync from there to the end (at[3]) when there is a closing barrier.
void emitPhases(void* context, int rank, void* channelEvent, int channel, const uint64_t (&at)[4], int phases) {
  static const char* const kNames[3] = {"initial_sync", "compute", "final_sync"};
  for (int p = 0; p < phases; ++p) {
    ncclProfilerEventDescr_t d{};
    d.type = ncclProfileKernelPhase;
    d.parentObj = channelEvent;
    d.rank = rank;
    d.kernelPhase.channelId = static_cast<uint8_t>(channel);
    d.kernelPhase.phaseId = static_cast<uint8_t>(p);
    d.kernelPhase.phaseName = kNames[p];
    d.kernelPhase.pTimer = at[p];
    void* handle = profiler::start(context, &d);
    ncclProfilerEventStateArgs_t args{};
    args.kernelCh.pTimer = at[p + 1];
    profiler::record(handle, ncclProfilerKernelPhaseStop, &args);
    profiler::stop(handle);
  }
}

uint64_t load(const uint64_t& word) { return __atomic_load_n(&word, __ATOMIC_ACQUIRE); }

}  // namespace

void KernelEvents::emitNow() const {
  for (const Event& e : events_) {
    // Over the blocks that shared the work: the first start, and the last of every later mark.
    // The kernel has finished, so its stores to mapped memory are visible here.
    uint64_t first = 0, synced = 0, closing = 0, last = 0;
    bool finished = true, phased = true, closed = true;
    for (uint32_t i : e.entries) {
      const DevSeqTimes& t = times_[i];
      const uint64_t start = load(t.start), met = load(t.synced), closes = load(t.closing), stop = load(t.stop);
      if (start != 0 && (first == 0 || start < first)) first = start;
      synced = std::max(synced, met);
      closing = std::max(closing, closes);
      last = std::max(last, stop);
      finished = finished && stop != 0;
      phased = phased && met != 0;
      closed = closed && closes != 0;
    }
    if (first == 0) continue;  // the kernel failed before this channel's work began
    ncclProfilerEventDescr_t d{};
    d.type = ncclProfileKernelCh;
    d.parentObj = e.parent;
    d.rank = rank_;
    d.kernelCh.channelId = static_cast<uint8_t>(e.channel);
    d.kernelCh.pTimer = first;
    void* handle = profiler::start(context_, &d);
    if (finished) {
      if (phased && handle != nullptr) {
        const uint64_t at[4] = {first, synced, closed ? closing : last, last};
        emitPhases(context_, rank_, handle, e.channel, at, closed ? 3 : 2);
      }
      ncclProfilerEventStateArgs_t args{};
      args.kernelCh.pTimer = last;
      profiler::record(handle, ncclProfilerKernelChStop, &args);
    }
    profiler::stop(handle);
  }
}

}  // namespace weft::gpu
