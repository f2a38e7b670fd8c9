// A communicator's connections, created on first use and kept until the communicator goes.
// The thread that runs the communicator's operations finds and adds them; any other thread may
// sum their memory (weftCommDumpState) or shut them down (ncclCommAbort) meanwhile. Those walks
// and every change of the map hold mutex_; find does not, since only the owning thread, the one
// that adds, calls it, and the other threads only read. The handshake list is the owning thread's
// alone: the host executor's record of links whose setup it began and still drives.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

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
    std::lock_guard<std::mutex> lock(mutex_);
    table_[key(conn->id(), conn->isSender())] = std::move(conn);
    return raw;
  }
  // Links of this table, not yet connected, that the host executor moves on in every pass.
  std::vector<Connection*>& handshakes() { return handshakes_; }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return table_.size();
  }
  size_t ownedBytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t total = 0;
    for (const auto& [key, conn] : table_) total += conn->backend().ownedBytes();
    return total;
  }
  // Bytes of the links of one lane, or (onLane false) of every other lane.
  size_t ownedBytes(Lane lane, bool onLane) const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t total = 0;
    for (const auto& [key, conn] : table_)
      if ((conn->id().lane == lane) == onLane) total += conn->backend().ownedBytes();
    return total;
  }
  // Ends every link at once (the communicator failed or is aborted).
  void shutdownAll() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, conn] : table_) conn->backend().shutdown();
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    handshakes_.clear();
    table_.clear();
  }
  // Drops every link but those of `keep` (ncclCommSuspend keeps the one-sided links, which only a
  // collective window registration makes). Returns how many went.
  size_t clearExcept(Lane keep) {
    std::lock_guard<std::mutex> lock(mutex_);
    handshakes_.clear();
    size_t dropped = 0;
    for (auto it = table_.begin(); it != table_.end();) {
      if (it->second->id().lane == keep) {
        ++it;
      } else {
        it = table_.erase(it);
        ++dropped;
      }
    }
    return dropped;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> table_;
  std::vector<Connection*> handshakes_;
};

}  // namespace weft
