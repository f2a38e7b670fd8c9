// One direction of one (lane, channel, peer) link between two ranks: a FIFO of slots (layout in
// fifo.h) that the executor writes or reads. Where the FIFO lives and who sits at its other end is
// the backend's business: the peer itself over shared memory (transports/shm), or this process's
// network proxy (transports/net), which moves slots to and from the peer's FIFO. The executor only
// sees slots and counters, so its hot path below is the same, inline code for every transport.
//
// Connections are made lazily: the first step that needs one calls tryConnect from the executor's
// progress loop, which never blocks, so a rank waiting for its peer keeps progressing other work.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nccl.h"
#include "program/lane.h"
#include "transports/fifo.h"
#include "transports/rank_block.h"

namespace weft {

struct ConnectionId {
  uint64_t commHash;
  Lane lane;
  int channel;
  int senderRank;
  int receiverRank;
  std::string shmName() const;
  std::string describe() const;  // "ring lane, channel 0, rank 1 -> rank 2"
};

// Where a FIFO is, once its backend has it ready.
struct FifoView {
  FifoHead* head = nullptr;
  SlotHeader* slots = nullptr;
  unsigned char* small = nullptr;  // the small area (null without one)
  unsigned char* data = nullptr;
  uint32_t nslots = 0;    // payload slots
  uint32_t nheaders = 0;  // header slots (>= nslots)
  uint32_t smallBytes = 0;
  uint32_t slotBytes = 0;
  bool spreadPayload = false;  // messages placed by spreadOffset: what the FIFO's creator chose

  // The parts of a FIFO laid out at base (fifo.h), wherever that memory is.
  static FifoView at(void* base, const FifoGeometry& g) {
    auto* b = static_cast<unsigned char*>(base);
    const FifoLayout l = FifoLayout::of(g);
    FifoView v;
    v.head = reinterpret_cast<FifoHead*>(b + l.headOffset);
    v.slots = reinterpret_cast<SlotHeader*>(b + l.slotsOffset);
    v.small = g.smallBytes != 0 ? b + l.smallOffset : nullptr;
    v.data = b + l.dataOffset;
    v.nslots = g.nslots;
    v.nheaders = g.headers();
    v.smallBytes = g.smallBytes;
    v.slotBytes = g.slotBytes;
    return v;
  }
  static FifoView at(void* base, uint32_t nslots, uint32_t slotBytes) {
    return at(base, FifoGeometry{nslots, slotBytes});
  }
};

class ConnectionBackend {
 public:
  virtual ~ConnectionBackend() = default;
  // Makes progress on connecting; once the FIFO can be used, fills *view and sets *ready. Never
  // blocks.
  virtual ncclResult_t tryConnect(FifoView* view, bool* ready, std::string* why) = 0;
  // Who the executor rings after it changed the FIFO (published or released a slot).
  virtual RankBlock* bell() const = 0;
  // Empty while the link is healthy; otherwise why it failed (a network error, a lost peer).
  virtual std::string failure() const { return {}; }
  // Bytes of shared or registered memory this side owns. Any thread may ask (weftCommDumpState)
  // while the owning thread connects, so the backend publishes the figure once it holds the memory.
  size_t ownedBytes() const { return ownedBytes_.load(std::memory_order_relaxed); }
  virtual const char* transportName() const = 0;
  // The communicator failed or is being aborted: drop the link now so that the peer's waits end
  // with an error at once instead of at their timeout.
  virtual void shutdown() {}
  // Where the FIFO's memory is, for a GPU executor: in device memory already (P2P), or in host
  // memory that must be registered with the device runtime before a kernel can use it (the
  // shared-memory segment, the network proxy's buffers): hostRange then gives it.
  virtual bool fifoInDeviceMemory() const { return false; }
  virtual void hostRange(void** base, size_t* bytes) const {
    *base = nullptr;
    *bytes = 0;
  }

 protected:
  void publishOwnedBytes(size_t bytes) { ownedBytes_.store(bytes, std::memory_order_relaxed); }

 private:
  std::atomic<size_t> ownedBytes_{0};
};

// Where in its slot a message of `bytes` goes when its FIFO spreads payloads (FifoView::spreadPayload,
// chosen by the FIFO's creator and read by the other end from the FIFO's header, so both agree).
// Why spread: a 32 KiB message rewrote the same 32 KiB of a slot every 8 messages, lines the
// receiving core had just read and still held, and taking them back cost the writer 4x a plain
// copy (a 2-core EPYC VM: 4.7 against 1.2 us). Rotated, a line comes back only after the FIFO's
// whole 4 MiB went by, and by then the reader has dropped it. Only where each rank has a core of
// its own: ranks that share a core read each other's lines from that core's own cache, and
// spreading them only pushes them out of it (4 ranks on 2 cores ran 30% slower spread).
// The lap-th use of a slot puts a message at stride * (lap % positions),
// the stride being the message's size rounded up to a power of two (at least kSpreadMinBytes) and
// positions the largest power of two of strides that fit the slot. Smaller messages, and those
// too large for two positions, sit at the slot's start. Sender and receiver compute it from the
// message's number and size alone, so nothing travels with the message.
constexpr size_t kSpreadMinBytes = 4096;
inline size_t spreadOffset(uint64_t message, uint32_t nslots, uint32_t slotBytes, size_t bytes) {
  if (bytes < kSpreadMinBytes) return 0;
  const unsigned strideLog = 64 - unsigned(__builtin_clzll(uint64_t(bytes) - 1));  // ceil(log2(bytes))
  const uint64_t fit = uint64_t(slotBytes) >> strideLog;
  if (fit < 2) return 0;
  const uint64_t positions = uint64_t(1) << (63 - unsigned(__builtin_clzll(fit)));  // a power of two <= fit
  return size_t(((message / nslots) & (positions - 1)) << strideLog);
}

class Connection {
 public:
  Connection(const ConnectionId& id, bool isSender, std::unique_ptr<ConnectionBackend> backend)
      : id_(id), isSender_(isSender), backend_(std::move(backend)) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  ncclResult_t tryConnect(bool* ready, std::string* why) {
    *ready = slots_ != nullptr;
    if (*ready) return ncclSuccess;
    FifoView v;
    ncclResult_t r = backend_->tryConnect(&v, ready, why);
    if (r != ncclSuccess || !*ready) return r;
    head_ = v.head;
    small_ = v.small;
    data_ = v.data;
    nslots_ = v.nslots;
    nheaders_ = v.nheaders;
    smallBytes_ = v.smallBytes;
    headerOnlyBytes_ = std::max<size_t>(kInlineBytes, v.smallBytes);
    slotBytes_ = v.slotBytes;
    spread_ = v.spreadPayload;
    bell_ = backend_->bell();
    slots_ = v.slots;
    return ncclSuccess;
  }
  bool connected() const { return slots_ != nullptr; }
  // The FIFO as the backend mapped it (valid once connected); a GPU executor translates it.
  FifoView view() const {
    FifoView v;
    v.head = head_;
    v.slots = slots_;
    v.small = small_;
    v.data = data_;
    v.nslots = nslots_;
    v.nheaders = nheaders_;
    v.smallBytes = smallBytes_;
    v.slotBytes = slotBytes_;
    v.spreadPayload = spread_;
    return v;
  }
  bool isSender() const { return isSender_; }
  int peer() const { return isSender_ ? id_.receiverRank : id_.senderRank; }
  const ConnectionId& id() const { return id_; }
  ConnectionBackend& backend() const { return *backend_; }

  // --- sender side ---
  // Room for the next message of `bytes`: one that fits its header slot or the small area needs a
  // free header slot, a larger one a free payload slot too (message n uses header n % nheaders and
  // payload slot n % nslots, each free once message n - nheaders or n - nslots was consumed).
  bool canSend(size_t bytes) {
    const uint32_t window = bytes <= headerOnlyBytes_ ? nheaders_ : nslots_;
    if (count_ - cachedHead_ < window) return true;
    cachedHead_ = head_->consumed.load(std::memory_order_acquire);
    return count_ - cachedHead_ < window;
  }
  // Room for a message of any size.
  bool canSend() { return canSend(~size_t(0)); }
  // Where to write the next message of `bytes` (<= slotBytes): inline in the slot header, in the
  // header slot's part of the small area, or in the payload slot.
  void* sendBuffer(size_t bytes) { return payloadAt(bytes); }
  // The stamp rides in the flag's cache line, so carrying it costs the receiver nothing extra.
  void publish(size_t bytes, const OpStamp& stamp) {
    SlotHeader& s = slots_[header_];
    s.bytes = static_cast<uint32_t>(bytes);
    s.stamp = stamp;
    s.seq.store(count_ + 1, std::memory_order_release);
    step();
    ringIfSleeping(bell_);
  }

  // --- receiver side ---
  // While the messages are small but larger than the header's inline bytes (33-512 B), each look
  // also prefetches the lines that a message of the last one's size fills: the payload then crosses
  // to this core in the same round trip as the flag, not in a second one after it.
  // Larger payloads are not prefetched: the sender is still writing them while this core looks,
  // and taking their lines away from it made a 1 KiB AllReduce slower.
  bool canRecv() const {
    if (prefetchLines_ != 0) {
      const auto* d = static_cast<const unsigned char*>(payloadAt(prefetchBytes_));
      for (uint32_t line = 0; line < prefetchLines_; ++line) __builtin_prefetch(d + line * 64);
    }
    return slots_[header_].seq.load(std::memory_order_acquire) == count_ + 1;
  }
  const void* recvBuffer(size_t* bytes) const {
    *bytes = slots_[header_].bytes;
    return payloadAt(*bytes);
  }
  // The sender's stamp of the message recvBuffer returns.
  const OpStamp& recvStamp() const { return slots_[header_].stamp; }
  void release() {
    const uint32_t bytes = slots_[header_].bytes;
    const bool prefetch = bytes > kInlineBytes && bytes <= kPrefetchMaxBytes;
    prefetchLines_ = prefetch ? (bytes + 63) / 64 : 0;
    prefetchBytes_ = bytes;
    step();
    head_->consumed.store(count_, std::memory_order_release);
    ringIfSleeping(bell_);
  }

 private:
  size_t payloadOffset(size_t bytes) const { return spread_ ? spreadOffset(count_, nslots_, slotBytes_, bytes) : 0; }
  // Where the next message (number count_) of `bytes` keeps its payload: sender and receiver agree
  // from its number and size alone.
  void* payloadAt(size_t bytes) const {
    if (bytes <= kInlineBytes) return slots_[header_].inl;
    if (bytes <= smallBytes_) return small_ + size_t(header_) * smallBytes_;
    return data_ + size_t(slot_) * slotBytes_ + payloadOffset(bytes);
  }
  // On to the next message. The slot indices follow count_ by increments, not by count_ % n: a
  // division by a runtime n costs tens of cycles, and the hot path asked for one about five times
  // a message.
  void step() {
    ++count_;
    if (++header_ == nheaders_) header_ = 0;
    if (++slot_ == nslots_) slot_ = 0;
  }

  ConnectionId id_;
  bool isSender_;
  bool spread_ = false;  // spreadOffset places the messages (the FIFO's creator chose it)
  std::unique_ptr<ConnectionBackend> backend_;
  uint32_t nslots_ = 0, nheaders_ = 0, smallBytes_ = 0, slotBytes_ = 0;
  size_t headerOnlyBytes_ = 0;  // messages up to this size need no payload slot
  RankBlock* bell_ = nullptr;
  FifoHead* head_ = nullptr;
  SlotHeader* slots_ = nullptr;
  unsigned char* small_ = nullptr;
  unsigned char* data_ = nullptr;
  uint64_t count_ = 0;       // messages sent (sender) or consumed (receiver)
  uint32_t header_ = 0;      // count_ % nheaders_: the next message's header slot
  uint32_t slot_ = 0;        // count_ % nslots_: its payload slot, if it needs one
  uint64_t cachedHead_ = 0;  // sender's last view of the receiver's progress
  static constexpr uint32_t kPrefetchMaxBytes = kSmallPayloadBytes;
  uint32_t prefetchLines_ = 0;  // receiver: payload lines of the last message, if canRecv prefetches
  uint32_t prefetchBytes_ = 0;  // receiver: the last message's size, where canRecv prefetches
};

}  // namespace weft
