#include "sockets/intake.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/log.h"

namespace weft {
namespace {

struct Pending {
  Socket sock;
  SocketAddress from;
  std::vector<char> got;
  size_t have = 0;
  Deadline giveUp;
};

// Reads what has arrived on p without blocking. False when the connection is finished with p.have == p.got.size() when
// its hello is complete. (closed, failed; *why then says why when TLS failed); p.have == p.got.size() when its hello is
// complete.
bool readSome(Pending& p, std::string* why) {
  while (p.have < p.got.size()) {
    ssize_t n = p.sock.tryRecv(p.got.data() + p.have, p.got.size() - p.have);
    if (n > 0) {
      p.have += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      if (n < 0 && errno == EPROTO) *why = p.sock.errorText(EPROTO);
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  return true;
}

}  // namespace

IoStatus acceptIntroduced(const Socket& listener, const IntakeOptions& opts, Deadline deadline, int cancelFd,
                          Socket* out, void* hello, int* dropped, std::string* detail) {
  std::vector<Pending> pending;
  int nDropped = 0;
  std::string lastTlsFailure;  // a peer with another key fails here: the timeout's message names it
  auto finish = [&](IoStatus st) {
    if (dropped) *dropped = nDropped;
    return st;
  };
  for (;;) {
    for (;;) {
      Pending p;
      std::string why;
      IoStatus st = listener.accept(Deadline::immediate(), -1, &p.sock, &p.from, &why);
      if (st == IoStatus::kTimeout) break;
      if (st != IoStatus::kOk) {
        if (detail) *detail = why;
        return finish(st);
      }
      p.got.resize(opts.helloBytes);
      p.giveUp = Deadline::afterMs(opts.strangerMs);
      pending.push_back(std::move(p));
    }
    for (size_t i = 0; i < pending.size();) {
      Pending& p = pending[i];
      std::string tlsWhy;
      bool keep = readSome(p, &tlsWhy);
      if (!tlsWhy.empty()) {
        WEFT_WARN("%s", tlsWhy.c_str());
        lastTlsFailure = tlsWhy;
      }
      if (keep && p.have == p.got.size()) {
        if (opts.isExpected(p.got.data())) {
          memcpy(hello, p.got.data(), p.got.size());
          *out = std::move(p.sock);
          return finish(IoStatus::kOk);
        }
        keep = false;
      }
      if (keep && p.giveUp.expired()) keep = false;
      if (keep) {
        ++i;
        continue;
      }
      const std::string hint = p.sock.encrypted() ? "" : tlsPlaintextHint(p.got.data(), p.have);
      if (!hint.empty()) {
        WEFT_WARN("dropped a connection from %s%s", socketAddressToString(p.from).c_str(), hint.c_str());
        lastTlsFailure = "a connection from " + socketAddressToString(p.from) + hint;
      } else {
        WEFT_INFO(kLogBootstrap,
                  "dropped a connection from %s that did not introduce itself as expected (%zu of %zu bytes)",
                  socketAddressToString(p.from).c_str(), p.have, p.got.size());
      }
      ++nDropped;
      pending.erase(pending.begin() + static_cast<long>(i));
    }
    if (deadline.expired()) {
      if (detail) {
        *detail = "no expected connection arrived";
        if (!lastTlsFailure.empty()) *detail += " (" + lastTlsFailure + ")";
      }
      return finish(IoStatus::kTimeout);
    }
    std::vector<pollfd> fds;
    fds.push_back({listener.fd(), POLLIN, 0});
    for (const Pending& p : pending) fds.push_back({p.sock.fd(), p.sock.waitEvents(POLLIN), 0});
    if (cancelFd >= 0) fds.push_back({cancelFd, POLLIN, 0});
    // Wake at least every 100 ms so that strangers' own deadlines are checked.
    int n = ::poll(fds.data(), fds.size(), deadline.pollTimeout(100));
    if (n < 0 && errno != EINTR) {
      if (detail) *detail = std::string("poll: ") + strerror(errno);
      return finish(IoStatus::kError);
    }
    if (cancelFd >= 0 && (fds.back().revents & POLLIN) != 0) {
      if (detail) *detail = "cancelled";
      return finish(IoStatus::kAborted);
    }
  }
}

}  // namespace weft
