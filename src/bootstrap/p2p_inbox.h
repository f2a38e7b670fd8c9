// The point-to-point messages that arrive on a rank's bootstrap listener, read as far as their
// bytes have come and never waited for. Anyone can connect to that listener, so a connection that
// stays silent, sends half a message or sends garbage costs only its own slot: it is dropped after
// its own deadline, and the oldest is dropped first when too many are waiting, while every real
// peer's message is taken the moment it is complete.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "bootstrap/protocol.h"
#include "sockets/socket.h"

namespace weft {

// (from rank, tag) -> the message's body.
using P2pMailbox = std::map<std::pair<int, uint64_t>, std::vector<char>>;

struct P2pInboxLimits {
  size_t maxPending = 256;      // connections read at once; beyond this the oldest is dropped
  int64_t strangerMs = 10000;   // how long one connection may take to deliver its whole message
  uint64_t maxBytes = 1 << 20;  // the largest body believed
};

class P2pInbox {
 public:
  // me: this rank; messages addressed elsewhere, from no rank of nranks, or without a valid proof
  // of `secret` are dropped.
  P2pInbox(int me, int nranks, const bootstrap::Secret& secret, P2pInboxLimits limits = {})
      : me_(me), nranks_(nranks), secret_(secret), limits_(limits) {}

  // Accepts every connection waiting on `listener`, reads each pending one without blocking, and
  // moves every complete, proven message into *mailbox (a later one replaces an earlier one with
  // the same from and tag).
  void poll(const Socket& listener, P2pMailbox* mailbox);

  size_t pending() const { return pending_.size(); }
  uint64_t dropped() const { return dropped_; }

 private:
  struct Pending {
    Socket sock;
    SocketAddress from;
    bootstrap::P2pHeader header;
    size_t headerGot = 0;
    std::vector<char> body;
    size_t bodyGot = 0;
    Deadline giveUp;
  };
  enum class Progress { kMore, kDone, kDrop };
  Progress readSome(Pending& p);
  void drop(const Pending& p, const char* why);

  int me_;
  int nranks_;
  bootstrap::Secret secret_;
  P2pInboxLimits limits_;
  std::deque<Pending> pending_;  // in accept order, oldest first
  uint64_t dropped_ = 0;
};

}  // namespace weft
