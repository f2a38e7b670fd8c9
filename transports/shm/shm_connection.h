// The shared-memory backend of a Connection: the FIFO is a shared-memory segment that the
// receiver creates and the sender fetches and maps, so each side reads and writes the other's slots directly.
#pragma once
#include <string>

#include "transports/connection.h"
#include "transports/shm/shm_segment.h"

namespace weft {

class ShmConnection final : public ConnectionBackend {
 public:
  // peerBell: the other rank's block, rung after every FIFO change.
  ShmConnection(const ConnectionId& id, bool isSender, uint32_t nslots, uint32_t slotBytes, RankBlock* peerBell)
      : id_(id), isSender_(isSender), nslots_(nslots), slotBytes_(slotBytes), peerBell_(peerBell) {}
  // The receiver offers the FIFO to its sender alone; a sender that never came leaves nothing: the
  // receiver's ShmSegment withdraws the name when the connection goes.
  ncclResult_t tryConnect(FifoView* view, bool* ready, std::string* why) override;
  RankBlock* bell() const override { return peerBell_; }
  const char* transportName() const override { return "shm"; }
  void hostRange(void** base, size_t* bytes) const override {
    *base = seg_.data();
    *bytes = seg_.size();
  }

 private:
  ConnectionId id_;
  bool isSender_;
  uint32_t nslots_, slotBytes_;
  RankBlock* peerBell_;
  ShmSegment seg_;
};

}  // namespace weft
