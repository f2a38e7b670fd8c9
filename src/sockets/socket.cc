// TCP sockets for Weft's bootstrap and network transport. Every descriptor is non-blocking and
// every wait is a poll() over the socket plus the caller's cancel descriptor, so a Weft user's
// ncclCommAbort can always interrupt a rank that waits on a dead or slow peer.
#include "sockets/socket.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

#include "base/log.h"
#include "sockets/text.h"

namespace weft {

using sockets_detail::errnoString;

namespace {

void setNoDelay(int fd) {
  int one = 1;
  // Bootstrap and transport messages are small and latency-bound; Nagle would add tens of ms.
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Waits until fd has `events` ready, the cancel descriptor fires, or the deadline passes.
IoStatus waitFor(int fd, short events, const Deadline& deadline, int cancelFd, std::string* detail) {
  for (;;) {
    pollfd pfd[2];
    pfd[0] = {fd, events, 0};
    nfds_t n = 1;
    if (cancelFd >= 0) {
      pfd[1] = {cancelFd, POLLIN, 0};
      n = 2;
    }
    int r = ::poll(pfd, n, deadline.pollTimeout());
    if (r < 0) {
      if (errno == EINTR) continue;
      if (detail) *detail = "poll: " + errnoString(errno);
      return IoStatus::kError;
    }
    if (n == 2 && pfd[1].revents != 0) {
      if (detail) *detail = "aborted";
      return IoStatus::kAborted;
    }
    if (r == 0) {
      // poll's timeout is rounded to whole milliseconds; only report a timeout once it is real.
      if (deadline.expired()) {
        if (detail) *detail = "timed out";
        return IoStatus::kTimeout;
      }
      continue;
    }
    // Readiness, POLLERR or POLLHUP: the caller's next send/recv reports what happened.
    return IoStatus::kOk;
  }
}

bool retryableConnectError(int err) {
  switch (err) {
    case ECONNREFUSED:  // nobody listens yet (the root or a peer starts later)
    case ETIMEDOUT:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ECONNRESET:  // the listener's backlog overflowed or it closed with us queued
    case ECONNABORTED:
    case EAGAIN:
    case EADDRNOTAVAIL:  // ephemeral ports briefly exhausted
    case EINTR: return true;
    default: return false;
  }
}

IoStatus closedStatus(int err, std::string* detail) {
  if (detail) *detail = err == 0 ? "peer closed the connection" : errnoString(err);
  return IoStatus::kClosed;
}

bool isPeerGoneError(int err) { return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ETIMEDOUT; }

}  // namespace

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
    tls_ = std::move(o.tls_);
  }
  return *this;
}

void Socket::close() {
  if (tls_) {
    std::shared_ptr<TlsLink> link = std::move(tls_);
    bool handedOver = false;
    {
      std::lock_guard<std::mutex> lock(link->mutex());
      if (link->queuedLocked() && fd_ >= 0) {
        link->adoptFdLocked();
        handedOver = true;
      } else {
        link->detachLocked();
      }
    }
    if (handedOver) {
      tlsFlushInBackground(link);
      fd_ = -1;
      return;
    }
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

ncclResult_t Socket::startTls(TlsRole role, const std::string& peer, std::string* why) {
  std::shared_ptr<TlsContext> ctx;
  ncclResult_t r = tlsCurrent(&ctx, why);
  if (r != ncclSuccess || !ctx) return r;
  r = TlsLink::create(std::move(ctx), fd_, role, peer, &tls_, why);
  if (r != ncclSuccess) return r;
  static std::once_flag said;
  std::call_once(said, [] {
    WEFT_INFO(kLogInit | kLogBootstrap | kLogNet, "TLS 1.3 with a pre-shared key encrypts this process's sockets");
  });
  if (role == TlsRole::kClient) {
    // Say hello at once, so the peer can answer while this side is busy elsewhere.
    std::lock_guard<std::mutex> lock(tls_->mutex());
    (void)tls_->sendLocked(nullptr, 0);
  }
  return ncclSuccess;
}

ssize_t Socket::trySend(const void* data, size_t len) const {
  if (!tls_) return ::send(fd_, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
  std::lock_guard<std::mutex> lock(tls_->mutex());
  return tls_->sendLocked(data, len);
}

ssize_t Socket::tryRecv(void* data, size_t len) const {
  if (!tls_) return ::recv(fd_, data, len, MSG_DONTWAIT);
  std::lock_guard<std::mutex> lock(tls_->mutex());
  return tls_->recvLocked(data, len);
}

short Socket::waitEvents(short dflt) const {
  if (!tls_) return dflt;
  std::lock_guard<std::mutex> lock(tls_->mutex());
  return tls_->wantEvents() ? tls_->wantEvents() : dflt;
}

bool Socket::finishQueued(Deadline deadline) const {
  if (!tls_) return true;
  for (;;) {
    short events;
    {
      std::lock_guard<std::mutex> lock(tls_->mutex());
      if (!tls_->queuedLocked()) return true;
      tls_->claimLocked();  // from now on only this thread drives it, so its poll waits for the right thing
      if (tls_->fd() < 0 || !tls_->flushLocked()) return false;
      if (!tls_->queuedLocked()) return true;
      events = tls_->wantEvents() ? tls_->wantEvents() : static_cast<short>(POLLOUT);
    }
    if (waitFor(fd_, events, deadline, -1, nullptr) != IoStatus::kOk) return false;
  }
}

std::string Socket::errorText(int err) const {
  if (tls_ && err == EPROTO) {
    std::lock_guard<std::mutex> lock(tls_->mutex());
    if (!tls_->error().empty()) return tls_->error();
  }
  return errnoString(err);
}

void Socket::shutdownBoth() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

SocketAddress Socket::localAddress() const {
  SocketAddress a = emptySocketAddress();
  socklen_t len = sizeof(a);
  if (fd_ < 0 || getsockname(fd_, &a.sa, &len) != 0) return emptySocketAddress();
  return a;
}

ncclResult_t Socket::listen(const SocketAddress& bindAddr, bool reuseAddr, Socket* out, SocketAddress* bound,
                            std::string* why, int* err) {
  int scratch = 0;
  if (!err) err = &scratch;
  *err = 0;
  if (!socketAddressValid(bindAddr)) {
    *why = "cannot listen on an address that is not IPv4 or IPv6";
    return ncclInternalError;
  }
  Socket s(::socket(bindAddr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.valid()) {
    *err = errno;
    *why = "socket() for " + socketAddressToString(bindAddr) + ": " + errnoString(*err);
    return ncclSystemError;
  }
  if (reuseAddr) {
    int one = 1;
    (void)setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  }
  if (::bind(s.fd(), &bindAddr.sa, socketAddressLength(bindAddr)) != 0) {
    *err = errno;
    *why = "bind to " + socketAddressToString(bindAddr) + ": " + errnoString(*err);
    return ncclSystemError;
  }
  // The kernel clamps the backlog to somaxconn; ask for plenty so a whole job's ranks can queue.
  if (::listen(s.fd(), 16384) != 0) {
    *err = errno;
    *why = "listen on " + socketAddressToString(bindAddr) + ": " + errnoString(*err);
    return ncclSystemError;
  }
  if (bound) {
    *bound = s.localAddress();
    if (!socketAddressValid(*bound)) {
      *err = errno;
      *why = "getsockname after binding " + socketAddressToString(bindAddr) + ": " + errnoString(*err);
      return ncclSystemError;
    }
  }
  *out = std::move(s);
  return ncclSuccess;
}

IoStatus Socket::connect(const SocketAddress& to, Deadline deadline, int cancelFd, Socket* out, std::string* detail) {
  if (!socketAddressValid(to)) {
    if (detail) *detail = "the address is not IPv4 or IPv6";
    return IoStatus::kError;
  }
  int backoffMs = 1;
  std::string last = "no attempt finished";
  for (;;) {
    Socket s(::socket(to.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!s.valid()) {
      if (detail) *detail = "socket(): " + errnoString(errno);
      return IoStatus::kError;
    }
    int err = 0;
    if (::connect(s.fd(), &to.sa, socketAddressLength(to)) != 0) err = errno;
    if (err == EINPROGRESS || err == EINTR) {
      IoStatus w = waitFor(s.fd(), POLLOUT, deadline, cancelFd, detail);
      if (w == IoStatus::kAborted || w == IoStatus::kError) return w;
      if (w == IoStatus::kTimeout) {
        if (detail) *detail = "timed out (" + last + ")";
        return IoStatus::kTimeout;
      }
      socklen_t len = sizeof(err);
      if (getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) {
      // A client retrying a local port nobody listens on can be handed that very port as its own
      // and "connect" to itself (TCP simultaneous open). That is a refusal in disguise.
      SocketAddress self = s.localAddress();
      if (socketAddressEqual(self, to)) {
        err = ECONNREFUSED;
      } else {
        setNoDelay(s.fd());
        std::string why;
        if (s.startTls(TlsRole::kClient, socketAddressToString(to), &why) != ncclSuccess) {
          if (detail) *detail = why;
          return IoStatus::kError;
        }
        *out = std::move(s);
        return IoStatus::kOk;
      }
    }
    if (!retryableConnectError(err)) {
      if (detail) *detail = errnoString(err);
      return IoStatus::kError;
    }
    last = errnoString(err);
    s.close();
    if (deadline.expired()) {
      if (detail) *detail = "timed out (" + last + ")";
      return IoStatus::kTimeout;
    }
    // Back off without ignoring the cancel descriptor; the listener is usually up within a few ms.
    if (cancelFd >= 0) {
      pollfd p = {cancelFd, POLLIN, 0};
      if (::poll(&p, 1, deadline.pollTimeout(backoffMs)) > 0) {
        if (detail) *detail = "aborted";
        return IoStatus::kAborted;
      }
    } else {
      ::poll(nullptr, 0, deadline.pollTimeout(backoffMs));
    }
    backoffMs = std::min(backoffMs * 2, 100);
  }
}

IoStatus Socket::accept(Deadline deadline, int cancelFd, Socket* out, SocketAddress* peer, std::string* detail) const {
  for (;;) {
    SocketAddress a = emptySocketAddress();
    socklen_t len = sizeof(a);
    int fd = ::accept4(fd_, &a.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      setNoDelay(fd);
      Socket s(fd);
      std::string why;
      if (s.startTls(TlsRole::kServer, socketAddressToString(a), &why) != ncclSuccess) {
        if (detail) *detail = why;
        return IoStatus::kError;
      }
      *out = std::move(s);
      if (peer) *peer = a;
      return IoStatus::kOk;
    }
    int err = errno;
    if (err == EINTR) continue;
    // accept(2): errors of the already-dead pending connection surface here; wait for the next one.
    bool transient = err == ECONNABORTED || err == EPROTO || err == ENETDOWN || err == ENOPROTOOPT ||
                     err == EHOSTDOWN || err == ENONET || err == EHOSTUNREACH || err == EOPNOTSUPP ||
                     err == ENETUNREACH;
    if (err != EAGAIN && err != EWOULDBLOCK && !transient) {
      if (detail) *detail = "accept: " + errnoString(err);
      return IoStatus::kError;
    }
    IoStatus w = waitFor(fd_, POLLIN, deadline, cancelFd, detail);
    if (w != IoStatus::kOk) return w;
  }
}

IoStatus Socket::sendAll(const void* data, size_t len, Deadline deadline, int cancelFd, std::string* detail) const {
  if (tls_ && len > 0) {
    // Before the handshake is done, queue rather than wait for the peer's answer: the peer may
    // answer only after this thread has gone on to its next step (tls_flusher.cc says why).
    std::unique_lock<std::mutex> lock(tls_->mutex());
    if (!tls_->flushLocked()) {
      if (detail) *detail = tls_->error();
      return IoStatus::kError;
    }
    if (!tls_->handshakeDone() || tls_->queuedLocked()) {
      tls_->queueLocked(data, len, deadline);
      lock.unlock();
      tlsFlushInBackground(tls_);
      return IoStatus::kOk;
    }
  }
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = trySend(p, len);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
      IoStatus w = waitFor(fd_, waitEvents(POLLOUT), deadline, cancelFd, detail);
      if (w != IoStatus::kOk) return w;
      continue;
    }
    if (n < 0 && isPeerGoneError(err)) return closedStatus(err, detail);
    if (detail) *detail = "send: " + errorText(n < 0 ? err : EIO);
    return IoStatus::kError;
  }
  return IoStatus::kOk;
}

IoStatus Socket::recvAll(void* data, size_t len, Deadline deadline, int cancelFd, std::string* detail) const {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = tryRecv(p, len);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      // A TLS peer refusing this plaintext one answers with an alert, then closes. That is a
      // setting that differs, not a peer that went away (which callers may wait out): say so.
      std::string hint = tls_ ? "" : tlsPlaintextHint(data, static_cast<size_t>(p - static_cast<char*>(data)));
      if (hint.empty()) return closedStatus(0, detail);
      if (detail) *detail = "the peer closed the connection" + hint;
      return IoStatus::kError;
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      IoStatus w = waitFor(fd_, waitEvents(POLLIN), deadline, cancelFd, detail);
      if (w != IoStatus::kOk) return w;
      continue;
    }
    if (isPeerGoneError(err)) return closedStatus(err, detail);
    if (detail) *detail = "recv: " + errorText(err);
    return IoStatus::kError;
  }
  return IoStatus::kOk;
}

IoStatus sendRecvAll(const Socket& tx, const void* sendData, size_t sendLen, const Socket& rx, void* recvData,
                     size_t recvLen, int64_t idleTimeoutMs, int cancelFd, IoDirection* failed, std::string* detail) {
  using Clock = Deadline::Clock;
  const char* sp = static_cast<const char*>(sendData);
  char* rp = static_cast<char*>(recvData);
  auto lastSend = Clock::now(), lastRecv = lastSend;
  const auto idle = std::chrono::milliseconds(idleTimeoutMs);
  auto fail = [&](IoDirection d, IoStatus s) {
    if (failed) *failed = d;
    return s;
  };
  if (failed) *failed = IoDirection::kNone;
  while (sendLen > 0 || recvLen > 0) {
    bool progressed = false;
    if (sendLen > 0) {
      ssize_t n = tx.trySend(sp, sendLen);
      if (n > 0) {
        sp += n;
        sendLen -= static_cast<size_t>(n);
        lastSend = Clock::now();
        progressed = true;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        int err = errno;
        if (isPeerGoneError(err)) return fail(IoDirection::kSend, closedStatus(err, detail));
        if (detail) *detail = "send: " + tx.errorText(err);
        return fail(IoDirection::kSend, IoStatus::kError);
      }
    }
    if (recvLen > 0) {
      ssize_t n = rx.tryRecv(rp, recvLen);
      if (n > 0) {
        rp += n;
        recvLen -= static_cast<size_t>(n);
        lastRecv = Clock::now();
        progressed = true;
      } else if (n == 0) {
        return fail(IoDirection::kRecv, closedStatus(0, detail));
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        int err = errno;
        if (isPeerGoneError(err)) return fail(IoDirection::kRecv, closedStatus(err, detail));
        if (detail) *detail = "recv: " + rx.errorText(err);
        return fail(IoDirection::kRecv, IoStatus::kError);
      }
    }
    if (progressed) continue;  // try again before sleeping: more may already be possible
    if (sendLen == 0 && recvLen == 0) break;

    // Neither side could move: sleep until one can, the idle limit of a pending side runs out,
    // or the cancel descriptor fires.
    auto now = Clock::now();
    int timeout = -1;
    if (idleTimeoutMs > 0) {
      auto until = Clock::time_point::max();
      if (recvLen > 0) until = std::min(until, lastRecv + idle);
      if (sendLen > 0) until = std::min(until, lastSend + idle);
      if (now >= until) {
        if (detail) *detail = "timed out";
        return fail(recvLen > 0 && now >= lastRecv + idle ? IoDirection::kRecv : IoDirection::kSend,
                    IoStatus::kTimeout);
      }
      timeout = static_cast<int>(
          std::min<int64_t>(std::chrono::ceil<std::chrono::milliseconds>(until - now).count(), INT_MAX));
    }
    pollfd pfd[3];
    nfds_t n = 0;
    if (sendLen > 0 && recvLen > 0 && tx.fd() == rx.fd()) {
      pfd[n++] = {tx.fd(), static_cast<short>(POLLOUT | POLLIN), 0};
    } else {
      if (sendLen > 0) pfd[n++] = {tx.fd(), tx.waitEvents(POLLOUT), 0};
      if (recvLen > 0) pfd[n++] = {rx.fd(), rx.waitEvents(POLLIN), 0};
    }
    int cancelIdx = -1;
    if (cancelFd >= 0) {
      cancelIdx = static_cast<int>(n);
      pfd[n++] = {cancelFd, POLLIN, 0};
    }
    int r = ::poll(pfd, n, timeout);
    if (r < 0 && errno != EINTR) {
      if (detail) *detail = "poll: " + errnoString(errno);
      return fail(IoDirection::kNone, IoStatus::kError);
    }
    if (r > 0 && cancelIdx >= 0 && pfd[cancelIdx].revents != 0) {
      if (detail) *detail = "aborted";
      return fail(IoDirection::kNone, IoStatus::kAborted);
    }
  }
  return IoStatus::kOk;
}

}  // namespace weft
