// How long an idle executor thread spins before it sleeps on its doorbell, learnt from its own
// waits. Not agreed across ranks: it steers no algorithm, only when a waiting thread gives its core
// away.
#pragma once
#include <algorithm>
#include <cstdint>

namespace weft {

// The shortest spin a budget shrinks to: a peer running on another core answers a handoff well
// within it (a cache-line transfer is 0.06-0.3 us here), so a rank whose peer does run keeps
// catching it without a sleep.
constexpr int64_t kMinSpinNs = 5000;

// Spinning pays only while the peer runs on another core at the same time. When it does not (busy
// loops or another job hold the peer's core), every spin is lost time: beside two busy loops on 2
// cores, a fixed 100 us spin cost 2 ranks 0.3-1 ms per 64 KiB AllReduce, and 1 ms spins up to
// 5 ms (benchmarks/run_load_compare.sh). Sleeping costs a futex wake instead, and a woken thread
// runs promptly. So a wait that ends while spinning doubles the budget, up to the maximum
// (WEFT_SPIN_US), and a wait that outlasts it quarters it, down to kMinSpinNs: shrinking is
// faster than growing, so a run of lost spins ends quickly. On an idle machine the waits end while
// spinning and the budget stays at its maximum.
class SpinBudget {
 public:
  // The spin for the next wait; maxNs is the current WEFT_SPIN_US.
  int64_t ns(int64_t maxNs) {
    if (budgetNs_ < 0 || budgetNs_ > maxNs) budgetNs_ = maxNs;
    return budgetNs_;
  }
  // A wait ended; spunOut: it outlasted its spin.
  void waitEnded(bool spunOut, int64_t maxNs) {
    budgetNs_ = spunOut ? std::max(kMinSpinNs, budgetNs_ / 4) : std::min(maxNs, budgetNs_ * 2);
  }

 private:
  int64_t budgetNs_ = -1;  // -1: no wait yet
};

}  // namespace weft
