// How an idle host-mode rank decides between spinning, yielding and sleeping: the spin budget it
// learns from its waits, and the check for a local peer queued on its own CPU.
#include <gtest/gtest.h>
#include <sched.h>

#include <memory>
#include <thread>
#include <vector>

#include "host_executor/spin_budget.h"
#include "transports/rank_block.h"

namespace weft {
namespace {

constexpr int64_t kMaxNs = 100000;  // WEFT_SPIN_US's default, 100 us

TEST(SpinBudget, StartsAtTheMaximumAndKeepsItWhileWaitsEndSpinning) {
  SpinBudget b;
  EXPECT_EQ(b.ns(kMaxNs), kMaxNs);
  for (int i = 0; i < 100; ++i) b.waitEnded(/*spunOut=*/false, kMaxNs);
  EXPECT_EQ(b.ns(kMaxNs), kMaxNs);
}

TEST(SpinBudget, LostSpinsShrinkItToTheFloorAndWonSpinsGrowItBack) {
  SpinBudget b;
  b.ns(kMaxNs);
  b.waitEnded(true, kMaxNs);
  EXPECT_EQ(b.ns(kMaxNs), kMaxNs / 4);
  for (int i = 0; i < 10; ++i) b.waitEnded(true, kMaxNs);
  EXPECT_EQ(b.ns(kMaxNs), kMinSpinNs);
  b.waitEnded(false, kMaxNs);
  EXPECT_EQ(b.ns(kMaxNs), 2 * kMinSpinNs);
  for (int i = 0; i < 10; ++i) b.waitEnded(false, kMaxNs);
  EXPECT_EQ(b.ns(kMaxNs), kMaxNs);
}

TEST(SpinBudget, FollowsALoweredMaximumAndAZeroSpin) {
  SpinBudget b;
  b.ns(kMaxNs);
  EXPECT_EQ(b.ns(20000), 20000);  // WEFT_SPIN_US lowered between calls
  b.waitEnded(false, 20000);
  EXPECT_EQ(b.ns(20000), 20000);
  EXPECT_EQ(b.ns(0), 0);  // WEFT_SPIN_US=0: never spin
  b.waitEnded(true, 0);
  EXPECT_EQ(b.ns(0), 0);
}

// Runs fn on a thread bound to one CPU (the test's own CPU), so that sched_getcpu is stable.
template <typename Fn>
void onOneCpu(Fn fn) {
  const int cpu = sched_getcpu();
  ASSERT_GE(cpu, 0);
  std::thread t([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    ASSERT_EQ(sched_setaffinity(0, sizeof set, &set), 0);
    fn(cpu);
  });
  t.join();
}

TEST(PeerQueuedOnThisCpu, PublishesTheCpuAndFindsAnAwakePeerOnIt) {
  auto self = std::make_unique<RankBlock>();
  auto a = std::make_unique<RankBlock>();
  auto b = std::make_unique<RankBlock>();
  EXPECT_EQ(self->cpu.load(), -1);  // nothing published before the first wait
  const std::vector<RankBlock*> others{a.get(), b.get()};
  onOneCpu([&](int cpu) {
    EXPECT_FALSE(peerQueuedOnThisCpu(self.get(), others));  // the peers have published nothing
    EXPECT_EQ(self->cpu.load(), cpu);
    a->cpu = cpu + 1;  // a peer on another CPU
    EXPECT_FALSE(peerQueuedOnThisCpu(self.get(), others));
    b->cpu = cpu;  // a peer that last waited on this CPU and is not asleep: queued behind us
    EXPECT_TRUE(peerQueuedOnThisCpu(self.get(), others));
    b->sleeping = 1;  // asleep on its doorbell, it needs no CPU until woken
    EXPECT_FALSE(peerQueuedOnThisCpu(self.get(), others));
  });
}

}  // namespace
}  // namespace weft
