// A communicator's connections, created on first use and kept until the communicator goes.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "transports/shm/connection.h"

namespace weft {

class ConnectionTable {
 public:
  // The connection for (lane, channel, peer, direction), created (not yet connected) if new.
  Connection* get(const ConnectionId& id, bool isSender, uint32_t nslots, uint32_t slotBytes, RankBlock* peerBell) {
    int peer = isSender ? id.receiverRank : id.senderRank;
    uint64_t key = (uint64_t(id.lane) << 62) | (uint64_t(isSender) << 61) | (uint64_t(id.channel) << 32) |
                   uint32_t(peer);
    auto it = table_.find(key);
    if (it != table_.end()) return it->second.get();
    auto conn = std::make_unique<Connection>(id, isSender, nslots, slotBytes, peerBell);
    Connection* raw = conn.get();
    table_.emplace(key, std::move(conn));
    return raw;
  }
  size_t size() const { return table_.size(); }
  size_t ownedBytes() const {
    size_t total = 0;
    for (const auto& [key, conn] : table_) total += conn->ownedBytes();
    return total;
  }
  void clear() { table_.clear(); }

 private:
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> table_;
};

}  // namespace weft
