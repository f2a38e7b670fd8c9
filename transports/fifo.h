// The layout of one connection in shared memory: a FIFO of slots written by the sender and read by
// the receiver. The receiver owns (creates) the segment.
//
//   line 0          FifoHeader: magic, geometry, ready/attached flags
//   line 1          head: slots the receiver has consumed (the sender reads it only when full)
//   lines 2..       one SlotHeader per header slot: the slot's sequence flag, byte count, the
//                   sender's OpStamp and up to kInlineBytes of payload in the same cache line, so a
//                   small message costs the receiver a single cache-line transfer (flag, stamp and
//                   data arrive together)
//   then            the small area (host mode): smallBytes of payload per header slot, for messages
//                   of kInlineBytes+1..smallBytes
//   4 KiB aligned   nslots x slotBytes of payload for larger messages
//
// Header slots can outnumber payload slots (host mode: 8 to 1). A message that fits its header or
// the small area needs only a free header slot, so a sender of small messages runs up to nheaders
// messages ahead of its receiver while large messages still cycle through a few large slots. The
// depth is what lets rooted collectives stream: ranks that share a core each run many calls per
// time slice instead of handing the core over every nslots calls (4 ranks on 2 cores: an 8 B
// Broadcast 2.5 -> 0.9 us). The GPU kernel and the network proxy use FIFOs with
// nheaders == nslots and no small area.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "math/port.h"

namespace weft {

// What one rank called as one operation of a communicator (ARCHITECTURE.md principle 8). Every
// message carries its sender's stamp in-band (slot header, network trailer, direct-lane header),
// so a receiver that called something else fails at once, naming both calls, instead of hanging
// or computing garbage. Plain data: the GPU kernel writes and compares stamps too.
// Built from a Task by comm/op_stamp.cc once its algorithm is chosen.
struct OpStamp {
  uint32_t op;        // the operation's number in its sequence space, low 32 bits (first = 1)
  uint32_t countLo;   // count (elements, per rank as the API defines it) bits 0..31
  uint16_t countHi;   // count bits 32..47
  uint8_t kind;       // CollKind (task/task.h)
  uint8_t dtype;      // ncclDataType_t
  int32_t root;       // rooted collectives: the root; Send/Recv: the peer; otherwise 0
  uint8_t redop;      // kStampNoRedop, or ncclSum..ncclAvg, or kStampPreMulSum (never a handle)
  uint8_t algorithm;  // Algorithm (task/algorithm.h)
  uint8_t protocol;   // Protocol
  uint8_t nChannels;
};
static_assert(sizeof(OpStamp) == 20, "a stamp fits a slot header beside the flag and 32 inline bytes");

// Values of OpStamp fields that the comparison must know (checked against CollKind in op_stamp.cc).
constexpr uint8_t kStampKindSend = 9, kStampKindRecv = 10;
constexpr uint8_t kStampNoRedop = 0xff, kStampPreMulSum = 5;

// Does `theirs` (a peer's stamp, seen in a message from peerRank) belong to the same operation as
// `mine`? Collectives must agree field by field (the builder zeroes what need not agree). A Send
// matches a Recv when each names the other and number, count and datatype agree. Shared by the
// host executor, the direct lane and the GPU kernel.
WEFT_HOST_DEVICE inline bool stampsAgree(const OpStamp& mine, const OpStamp& theirs, int myRank, int peerRank) {
  const bool sameData = mine.op == theirs.op && mine.countLo == theirs.countLo && mine.countHi == theirs.countHi &&
                        mine.dtype == theirs.dtype;
  if (mine.kind == kStampKindRecv || mine.kind == kStampKindSend) {
    const uint8_t want = mine.kind == kStampKindRecv ? kStampKindSend : kStampKindRecv;
    return sameData && theirs.kind == want && theirs.root == myRank && mine.root == peerRank;
  }
  return sameData && mine.kind == theirs.kind && mine.root == theirs.root && mine.redop == theirs.redop &&
         mine.algorithm == theirs.algorithm && mine.protocol == theirs.protocol && mine.nChannels == theirs.nChannels;
}

// 32 bytes of inline payload (it was 48 before stamps): the stamp takes the rest of the line.
constexpr size_t kInlineBytes = 32;
// Room after each network slot's payload for the stamp, which the proxy carries as a trailer of
// every message (the network moves bytes only). A whole line keeps the next slot aligned.
constexpr uint32_t kNetTrailerBytes = 64;
constexpr uint64_t kFifoMagic = 0x5745465446494630ull;  // "WEFTFIF0"

struct alignas(64) FifoHeader {
  uint64_t magic;
  uint32_t nslots;  // payload slots
  uint32_t slotBytes;
  std::atomic<uint32_t> ready;     // set by the receiver once the header is valid
  std::atomic<uint32_t> attached;  // set by the sender once it mapped the segment
  int32_t receiverRank;
  int32_t senderRank;
  uint32_t spreadPayload;  // 1: messages rotate through their slots (connection.h: spreadOffset)
  uint32_t nheaders;       // header slots (>= nslots)
  uint32_t smallBytes;     // the small area's bytes per header slot (0: no small area)
};

struct alignas(64) SlotHeader {
  std::atomic<uint64_t> seq;  // n+1 once the sender published its n-th message into this slot
  uint32_t bytes;
  OpStamp stamp;  // the sender's call (written with every message; same cache line as the flag)
  alignas(8) unsigned char inl[kInlineBytes];
};
static_assert(sizeof(SlotHeader) == 64, "a slot header is one cache line");

struct alignas(64) FifoHead {
  std::atomic<uint64_t> consumed;
};

// A FIFO's shape, chosen by its creator and read by the other end from the FifoHeader.
struct FifoGeometry {
  uint32_t nslots = 0;  // payload slots of slotBytes each
  uint32_t slotBytes = 0;
  uint32_t nheaders = 0;    // header slots; 0 means nslots
  uint32_t smallBytes = 0;  // small-area bytes per header slot (a multiple of 64; 0: none)
  uint32_t headers() const { return nheaders != 0 ? nheaders : nslots; }
};

// Host mode's shared-memory FIFOs: header slots per payload slot, and the small area's size per
// header slot (messages up to it also have their payload prefetched with the flag: connection.h).
constexpr uint32_t kHeaderSlotsPerPayloadSlot = 8;
constexpr uint32_t kSmallPayloadBytes = 512;

struct FifoLayout {
  size_t headOffset, slotsOffset, smallOffset, dataOffset, totalBytes;
  static FifoLayout of(const FifoGeometry& g) {
    FifoLayout l;
    l.headOffset = 64;
    l.slotsOffset = 128;
    l.smallOffset = l.slotsOffset + size_t(g.headers()) * sizeof(SlotHeader);
    l.dataOffset = (l.smallOffset + size_t(g.headers()) * g.smallBytes + 4095) & ~size_t(4095);
    l.totalBytes = l.dataOffset + size_t(g.nslots) * g.slotBytes;
    return l;
  }
  static FifoLayout forGeometry(uint32_t nslots, uint32_t slotBytes) { return of(FifoGeometry{nslots, slotBytes}); }
};

}  // namespace weft
