#include "bootstrap/p2p_inbox.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace weft {

using bootstrap::P2pHeader;

namespace {

// Reads into buf[*got..len) what has arrived. False when the connection is finished (closed by the
// peer or failed) before len bytes came.
bool readAvailable(const Socket& sock, void* buf, size_t len, size_t* got) {
  char* p = static_cast<char*>(buf);
  while (*got < len) {
    ssize_t n = sock.tryRecv(p + *got, len - *got);  // through TLS when the socket has it
    if (n > 0) {
      *got += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  return true;
}

}  // namespace

P2pInbox::Progress P2pInbox::readSome(Pending& p) {
  if (p.headerGot < sizeof(P2pHeader)) {
    if (!readAvailable(p.sock, &p.header, sizeof(P2pHeader), &p.headerGot)) return Progress::kDrop;
    if (p.headerGot < sizeof(P2pHeader)) return Progress::kMore;
    const P2pHeader& h = p.header;
    // Checked before a byte of the body is accepted, so that no length a stranger claims is ever
    // allocated beyond the limit.
    if (!bootstrap::p2pHeaderAcceptable(h, me_, nranks_) || h.bytes > limits_.maxBytes) return Progress::kDrop;
    p.body.resize(h.bytes);
  }
  if (!readAvailable(p.sock, p.body.data(), p.body.size(), &p.bodyGot)) return Progress::kDrop;
  if (p.bodyGot < p.body.size()) return Progress::kMore;
  if (!digestEqual(p.header.proof, bootstrap::p2pProof(secret_, p.header, p.body.data()))) return Progress::kDrop;
  return Progress::kDone;
}

void P2pInbox::drop(const Pending& p, const char* why) {
  ++dropped_;
  WEFT_INFO(kLogBootstrap, "bootstrap: rank %d dropped a connection from %s: %s (%zu header and %zu body bytes read)",
            me_, socketAddressToString(p.from).c_str(), why, p.headerGot, p.bodyGot);
}

void P2pInbox::poll(const Socket& listener, P2pMailbox* mailbox) {
  for (;;) {
    Pending p;
    std::string detail;
    if (listener.accept(Deadline::immediate(), -1, &p.sock, &p.from, &detail) != IoStatus::kOk) break;
    p.giveUp = Deadline::afterMs(limits_.strangerMs);
    if (pending_.size() >= limits_.maxPending) {
      // A real sender writes its whole message as soon as it connects, so the oldest unfinished
      // connection is the likeliest stranger.
      drop(pending_.front(), "too many unfinished connections; the oldest makes room");
      pending_.pop_front();
    }
    pending_.push_back(std::move(p));
  }
  for (auto it = pending_.begin(); it != pending_.end();) {
    Progress pr = readSome(*it);
    if (pr == Progress::kMore && !it->giveUp.expired()) {
      ++it;
      continue;
    }
    if (pr == Progress::kDone) {
      (*mailbox)[{it->header.from, it->header.tag}] = std::move(it->body);
    } else {
      drop(*it, pr == Progress::kDrop ? "not a proven message for this rank" : "it did not finish its message in time");
    }
    it = pending_.erase(it);
  }
}

}  // namespace weft
