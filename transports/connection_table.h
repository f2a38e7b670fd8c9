// A communicator's connections, created on first use and kept until the communicator goes.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "transports/connection.h"

namespace weft {

class ConnectionTable {
 public:
  static uint64_t key(const ConnectionId& id, bool isSender) {
    int peer = isSender ? id.receiverRank : id.senderRank;
    return (uint64_t(id.lane) << 56) | (uint64_t(isSender) << 55) | (uint64_t(id.channel) << 32) | uint32_t(peer);
  }
  Connection* find(const ConnectionId& id, bool isSender) const {
    auto it = table_.find(key(id, isSender));
    return it == table_.end() ? nullptr : it->second.get();
  }
  Connection* add(std::unique_ptr<Connection> conn) {
    Connection* raw = conn.get();
    table_[key(conn->id(), conn->isSender())] = std::move(conn);
    return raw;
  }
  size_t size() const { return table_.size(); }
  size_t ownedBytes() const {
    size_t total = 0;
    for (const auto& [key, conn] : table_) total += conn->backend().ownedBytes();
    return total;
  }
  // Ends every link at once (the communicator failed or is aborted).
  void shutdownAll() {
    for (const auto& [key, conn] : table_) conn->backend().shutdown();
  }
  void clear() { table_.clear(); }

 private:
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> table_;
};

}  // namespace weft
