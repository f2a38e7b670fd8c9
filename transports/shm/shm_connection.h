// The shared-memory backend of a Connection: the FIFO is a shared-memory segment that the
// receiver creates and the sender fetches and maps, so each side reads and writes the other's slots directly.
#pragma once
#include <string>

#include "transports/connection.h"
#include "transports/shm/shm_segment.h"

namespace weft {

class ShmConnection final : public ConnectionBackend {
 public:
  // peerBell: the other rank's block, rung after every FIFO change. geometry and spreadPayload:
  // the FIFO's shape (fifo.h) and how messages are laid out in it (connection.h: spreadOffset),
  // the receiver's choices: it creates the FIFO, and a sender takes them from the FIFO's header.
  ShmConnection(const ConnectionId& id, bool isSender, const FifoGeometry& geometry, RankBlock* peerBell,
                bool spreadPayload)
      : id_(id), isSender_(isSender), spread_(spreadPayload), geometry_(geometry), peerBell_(peerBell) {}
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
  bool spread_;
  FifoGeometry geometry_;
  RankBlock* peerBell_;
  ShmSegment seg_;
};

}  // namespace weft
