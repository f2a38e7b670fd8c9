// The latest WaitPoint of a communicator, written by the thread that runs its operations and read
// by any other (weftCommDumpState, typically called because a call seems stuck). The executor
// writes it only when it is about to sleep (after WEFT_SPIN_US of spinning and yielding), and
// clears it when it moves again or returns, so neither moving data nor a short wait costs anything. A sequence counter
// (a seqlock) lets the reader take a consistent copy without ever blocking the writer.
#pragma once
#include <atomic>
#include <cstdint>

#include "comm/wait_point.h"

namespace weft {

class WaitState {
 public:
  // Writer side: one thread at a time, as a communicator runs one operation at a time.
  void publish(const WaitPoint& w);
  void clear();
  // Reader side, any thread: true with *w set while the executor waits.
  bool read(WaitPoint* w) const;

 private:
  static constexpr int kWords = (sizeof(WaitPoint) + 7) / 8;
  void write(bool waiting, const WaitPoint* w);
  std::atomic<uint32_t> version_{0};  // odd while a write is under way
  std::atomic<uint64_t> waiting_{0};
  std::atomic<uint64_t> words_[kWords] = {};
};

}  // namespace weft
