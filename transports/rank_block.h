// The small shared block every rank publishes to the other ranks of its host: a doorbell futex its
// peers ring when they hand it data, whether it is asleep, its pid (so peers notice when it dies),
// its abort flag, and a mailbox used by ncclCommShrink to hand out the new communicator's id.
// After it, in the same segment, one signal counter per rank of the communicator (ncclSignal).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

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
  alignas(64) std::atomic<uint32_t> doorbell;    // bumped by a peer that wakes this rank
  std::atomic<uint32_t> sleeping;                // 1 while this rank waits on doorbell
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
