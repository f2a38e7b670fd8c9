// The small shared block every rank publishes to the other ranks of its host: a doorbell futex its
// peers ring when they hand it data, whether it is asleep, the CPU it last waited on, its pid (so
// peers notice when it dies), its abort flag, and a mailbox used by ncclCommShrink to hand out the
// new communicator's id. After it, in the same segment, one signal counter per rank of the
// communicator (ncclSignal).
#pragma once
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccl.h"
#include "transports/futex.h"

namespace weft {

struct alignas(64) RankBlock {
  uint64_t magic;
  int32_t pid;
  int32_t rank;
  uint64_t startTime;  // the process's start time (/proc/<pid>/stat), to tell it from a reused pid
  // Where the owner maps this block. A peer in the same process (ranks as threads) signals through
  // that mapping rather than its own: the same memory either way, but one address, so the owner's
  // acquire pairs with the signaller's release for ThreadSanitizer too.
  uint64_t ownerAddress;
  alignas(64) std::atomic<uint32_t> doorbell;  // bumped by a peer that wakes this rank
  std::atomic<uint32_t> sleeping;              // 1 while this rank waits on doorbell
  // The CPU this rank ran on when it last waited (-1: not yet): a peer that waits on the same CPU
  // yields rather than spins, since this rank cannot run until that CPU is free. On a line of its
  // own, written only when it changes, so reading it costs the peers no cache-line transfer.
  alignas(64) std::atomic<int32_t> cpu{-1};
  alignas(64) std::atomic<uint32_t> aborted;     // 1 once this rank aborted or failed
  char reason[256];                              // why, written before `aborted` is set
  alignas(64) std::atomic<uint64_t> mailboxSeq;  // ncclCommShrink: which shrink the id belongs to
  ncclUniqueId mailboxId;
};

constexpr uint64_t kRankBlockMagic = 0x5745465452424c4bull;  // "WEFTRBLK"

// The signal counters that follow a block: counter r counts the signals rank r has sent to the
// block's owner (src/rma). Only rank r adds to it, and only the owner waits on it.
using SignalCounter = std::atomic<uint64_t>;
static_assert(sizeof(RankBlock) % alignof(SignalCounter) == 0, "the counters follow the block aligned");
inline size_t rankBlockBytes(int nranks) { return sizeof(RankBlock) + sizeof(SignalCounter) * nranks; }
inline SignalCounter* rankSignals(RankBlock* b) { return reinterpret_cast<SignalCounter*>(b + 1); }

// Publishes the CPU the calling thread runs on in its own block `self`, and says whether one of
// `others` (local peers' blocks) that is not asleep last waited on that CPU. Such a peer is queued
// behind this thread: it can only run once this thread gives the CPU up, so spinning for it is
// useless. A peer that moved since it last waited gives a stale answer until its next wait; the
// cost of that is one needless yield.
inline bool peerQueuedOnThisCpu(RankBlock* self, const std::vector<RankBlock*>& others) {
  const int cpu = sched_getcpu();
  if (cpu < 0) return false;
  if (self->cpu.load(std::memory_order_relaxed) != cpu) self->cpu.store(cpu, std::memory_order_relaxed);
  for (const RankBlock* b : others)
    if (b->cpu.load(std::memory_order_relaxed) == cpu && b->sleeping.load(std::memory_order_relaxed) == 0) return true;
  return false;
}

// Called by a rank after it made data visible to the owner of `bell`: wakes it if it sleeps.
// The fence pairs with the one in the sleeper (RankWaiter): either the sleeper sees our data in
// its last check, or we see its `sleeping` flag and ring.
inline void ringIfSleeping(RankBlock* bell) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (bell->sleeping.load(std::memory_order_relaxed) != 0) {
    bell->doorbell.fetch_add(1, std::memory_order_relaxed);
    futexWakeAll(&bell->doorbell);
  }
}

}  // namespace weft
