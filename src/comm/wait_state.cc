#include "comm/wait_state.h"

#include <cstring>
#include <type_traits>

namespace weft {

static_assert(std::is_trivially_copyable_v<WaitPoint>, "a WaitPoint travels as raw words");

void WaitState::write(bool waiting, const WaitPoint* w) {
  uint64_t words[kWords] = {};
  if (w != nullptr) memcpy(words, w, sizeof *w);
  const uint32_t v = version_.load(std::memory_order_relaxed);
  version_.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // the odd version is seen before any word
  waiting_.store(waiting ? 1 : 0, std::memory_order_relaxed);
  for (int i = 0; i < kWords; ++i) words_[i].store(words[i], std::memory_order_relaxed);
  version_.store(v + 2, std::memory_order_release);
}

void WaitState::publish(const WaitPoint& w) { write(true, &w); }

void WaitState::clear() { write(false, nullptr); }

bool WaitState::read(WaitPoint* w) const {
  // A reader that keeps colliding with writes gives up rather than spin: a dump is best effort.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const uint32_t before = version_.load(std::memory_order_acquire);
    if (before & 1) continue;
    const bool waiting = waiting_.load(std::memory_order_relaxed) != 0;
    uint64_t words[kWords];
    for (int i = 0; i < kWords; ++i) words[i] = words_[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);  // the words are read before the check
    if (version_.load(std::memory_order_relaxed) != before) continue;
    if (waiting) memcpy(w, words, sizeof *w);
    return waiting;
  }
  return false;
}

}  // namespace weft
