// One direction of one (lane, channel, peer) link between two ranks of a host, over a FIFO in POSIX
// shared memory (layout in fifo.h). Connections are made lazily: the first step that needs one
// calls tryConnect from the executor's progress loop, which never blocks, so a rank waiting for a
// peer to create its side keeps progressing its other work.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"
#include "transports/lane.h"
#include "transports/shm/fifo.h"
#include "transports/shm/rank_block.h"
#include "transports/shm/shm_segment.h"

namespace weft {


struct ConnectionId {
  uint64_t commHash;
  Lane lane;
  int channel;
  int senderRank;
  int receiverRank;
  std::string shmName() const;
};

class Connection {
 public:
  Connection(const ConnectionId& id, bool isSender, uint32_t nslots, uint32_t slotBytes, RankBlock* peerBell)
      : id_(id), isSender_(isSender), nslots_(nslots), slotBytes_(slotBytes), peerBell_(peerBell) {}
  // A receiver whose sender never attached still owns the name: its ShmSegment removes it.
  ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Makes progress on connecting; *ready once both sides may use the FIFO. Never blocks.
  ncclResult_t tryConnect(bool* ready, std::string* why);
  bool connected() const { return slots_ != nullptr; }
  bool isSender() const { return isSender_; }
  int peer() const { return isSender_ ? id_.receiverRank : id_.senderRank; }
  uint32_t slotBytes() const { return slotBytes_; }
  // Shared memory this side created (receivers own their FIFO; senders only map it).
  size_t ownedBytes() const { return isSender_ ? 0 : seg_.size(); }

  // --- sender side ---
  bool canSend() {
    if (count_ - cachedHead_ < nslots_) return true;
    cachedHead_ = head_->consumed.load(std::memory_order_acquire);
    return count_ - cachedHead_ < nslots_;
  }
  // Where to write the next message of `bytes` (<= slotBytes): inline in the slot header for small
  // messages, else in the slot's payload area.
  void* sendBuffer(size_t bytes) {
    uint64_t i = count_ % nslots_;
    return bytes <= kInlineBytes ? static_cast<void*>(slots_[i].inl) : static_cast<void*>(data_ + i * slotBytes_);
  }
  void publish(size_t bytes) {
    SlotHeader& s = slots_[count_ % nslots_];
    s.bytes = static_cast<uint32_t>(bytes);
    s.seq.store(count_ + 1, std::memory_order_release);
    ++count_;
    ringIfSleeping(peerBell_);
  }

  // --- receiver side ---
  bool canRecv() const { return slots_[count_ % nslots_].seq.load(std::memory_order_acquire) == count_ + 1; }
  const void* recvBuffer(size_t* bytes) const {
    uint64_t i = count_ % nslots_;
    *bytes = slots_[i].bytes;
    return *bytes <= kInlineBytes ? static_cast<const void*>(slots_[i].inl)
                                  : static_cast<const void*>(data_ + i * slotBytes_);
  }
  void release() {
    ++count_;
    head_->consumed.store(count_, std::memory_order_release);
    ringIfSleeping(peerBell_);
  }

 private:
  ConnectionId id_;
  bool isSender_;
  uint32_t nslots_, slotBytes_;
  RankBlock* peerBell_;
  ShmSegment seg_;
  FifoHeader* header_ = nullptr;
  FifoHead* head_ = nullptr;
  SlotHeader* slots_ = nullptr;
  unsigned char* data_ = nullptr;
  uint64_t count_ = 0;       // messages sent (sender) or consumed (receiver)
  uint64_t cachedHead_ = 0;  // sender's last view of the receiver's progress
};

}  // namespace weft
