// The layout of one connection in shared memory: a FIFO of slots written by the sender and read by
// the receiver. The receiver owns (creates) the segment.
//
//   line 0          FifoHeader: magic, geometry, ready/attached flags
//   line 1          head: slots the receiver has consumed (the sender reads it only when full)
//   lines 2..       one SlotHeader per slot: the slot's sequence flag, byte count and up to
//                   kInlineBytes of payload in the same cache line, so a small message costs the
//                   receiver a single cache-line transfer (flag and data arrive together)
//   4 KiB aligned   nslots x slotBytes of payload for larger messages
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace weft {

constexpr size_t kInlineBytes = 48;
constexpr uint64_t kFifoMagic = 0x5745465446494630ull;  // "WEFTFIF0"

struct alignas(64) FifoHeader {
  uint64_t magic;
  uint32_t nslots;
  uint32_t slotBytes;
  std::atomic<uint32_t> ready;     // set by the receiver once the header is valid
  std::atomic<uint32_t> attached;  // set by the sender once it mapped the segment
  int32_t receiverRank;
  int32_t senderRank;
};

struct alignas(64) SlotHeader {
  std::atomic<uint64_t> seq;  // n+1 once the sender published its n-th message into this slot
  uint32_t bytes;
  uint32_t pad;
  unsigned char inl[kInlineBytes];
};
static_assert(sizeof(SlotHeader) == 64, "a slot header is one cache line");

struct alignas(64) FifoHead {
  std::atomic<uint64_t> consumed;
};

struct FifoLayout {
  size_t headOffset, slotsOffset, dataOffset, totalBytes;
  static FifoLayout forGeometry(uint32_t nslots, uint32_t slotBytes) {
    FifoLayout l;
    l.headOffset = 64;
    l.slotsOffset = 128;
    l.dataOffset = (l.slotsOffset + size_t(nslots) * sizeof(SlotHeader) + 4095) & ~size_t(4095);
    l.totalBytes = l.dataOffset + size_t(nslots) * slotBytes;
    return l;
  }
};

}  // namespace weft
