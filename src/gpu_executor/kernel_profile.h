// The profiler plugin's KernelCh events on GPU communicators. When a plugin asks for them, a
// launch's kernel writes when each block started and finished each of its sequences into mapped
// host memory (LaunchHeader::times), and a host function queued behind the kernel on the same
// stream turns those times into one KernelCh event per operation and channel, under the
// operation's event: pTimer is the kernel's wait clock at the start, and the KernelChStop state
// carries it at the end. As in NCCL, the events come after the operation's own event stopped (that
// stop says the operation was enqueued), so a plugin keeps its parents alive. A direct-lane (DDA,
// FP8) event also gets v7's KernelPhase events under it: initial_sync until the ranks first met,
// compute, and final_sync over the closing barrier when there is one.
//
// Graph-captured launches get none: the host function would run at every replay, long after the
// operation events it names are gone.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "gpu_executor/launch_desc.h"
#include "nccl.h"

struct ncclComm;

namespace weft::gpu {

// One per GPU communicator, shared with its queued events: closed at teardown, so that events
// behind a kernel that never finished are dropped rather than handed to a finalized context.
struct KernelEventGate {
  std::mutex mutex;
  bool open = true;
};

// One launch's events, from its kernel's times.
class KernelEvents {
 public:
  // Whether comm's next launch should record times: a plugin wants KernelCh events and comm has a
  // profiler context.
  static bool wanted(const ncclComm* comm);

  explicit KernelEvents(const ncclComm* comm);
  // Entry `timeIndex` of the launch's times belongs to the event of operation `parent` (its Coll
  // or P2p event; null: none) on `channel`. The blocks sharing one channel's work of an operation
  // become one event, from the first start to the last stop.
  void add(uint32_t timeIndex, void* parent, int channel);

  // Queues the events behind the work already on `stream`; `times` is the host address of what
  // the kernel writes. Takes ownership of `events`.
  static ncclResult_t queue(std::unique_ptr<KernelEvents> events, const DevSeqTimes* times, void* stream);

 private:
  struct Event {
    void* parent;
    int channel;
    std::vector<uint32_t> entries;
  };
  static void emit(void* self);  // the host function
  void emitNow() const;

  std::shared_ptr<KernelEventGate> gate_;
  void* context_;
  int rank_;
  const DevSeqTimes* times_ = nullptr;
  std::vector<Event> events_;
};

}  // namespace weft::gpu
