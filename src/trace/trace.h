// The operation timeline (WEFT_TRACE_FILE): every API call, group, operation, step, wait and
// network transfer as a Chrome/Perfetto "complete" event, written per rank as trace JSON
// (docs/trace.md shows how to read one).
//
// Off by default, and then each hook costs one relaxed load and a branch: on() is inline and
// the timing around a hook is taken only when it says yes. On, events go to a buffer of the
// calling thread (no lock shared between threads while recording) and reach the file when the
// rank's communicator is destroyed and at process exit. Timestamps are this process's
// CLOCK_MONOTONIC; the header of each file carries the rank's clock offset to rank 0, measured
// over the bootstrap when the communicator was made, so tools/weft_trace_merge.py can line the
// ranks up.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace weft::trace {

enum class Cat : uint8_t { kApi, kGroup, kOp, kStep, kWait, kNet };
const char* catName(Cat c);

namespace detail {
// 0 = not decided yet (the parameter is read on the first API call), 1 = off, 2 = on.
extern std::atomic<int> gState;
int decide();
}  // namespace detail

// True when events are being recorded. The first call reads WEFT_TRACE_FILE.
inline bool on() {
  int s = detail::gState.load(std::memory_order_relaxed);
  if (s == 0) s = detail::decide();
  return s == 2;
}

// The members of an event's "args" object, rendered as JSON text as they are added.
class Args {
 public:
  Args& num(const char* key, int64_t v);
  Args& real(const char* key, double v);
  Args& str(const char* key, const char* v);
  Args& hex(const char* key, uint64_t v);
  std::string take() { return std::move(text_); }

 private:
  void key(const char* k);
  std::string text_;
};

// Records one event that ran from startNs to endNs (base/clock.h nowNs) on this thread. `rank`
// is the trace rank it belongs to (ncclComm::traceRank), or -1 for what belongs to the process
// (API calls, groups). `name` must outlive the process's trace (a literal or a static table).
void record(Cat cat, int rank, const char* name, int64_t startNs, int64_t endNs, std::string args = {});

// Names the calling thread in the trace ("proxy"); unnamed threads are "thread <tid>".
void nameThread(const char* name);

// What a rank's file says about it: the communicator size, and the offset that puts its clock on
// rank 0's (microseconds to add; uncertainty < 0 when it could not be measured).
void noteRank(int rank, int nranks, double clockOffsetUs, double uncertaintyUs);

// Writes (rewrites) the file that holds `rank`'s events. Safe to call while others record.
void flushRank(int rank);

}  // namespace weft::trace
