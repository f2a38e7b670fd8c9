// A small TCP layer shared by Weft's bootstrap and its network transport: owning sockets that are
// always non-blocking, each wait bounded by a deadline and interruptible by a cancel descriptor
// (deadline.h). Addresses are in address.h, the choice of interface in interfaces.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nccl.h"
#include "sockets/address.h"
#include "sockets/deadline.h"
#include "sockets/tls.h"

namespace weft {

// An owning, non-blocking, close-on-exec TCP socket. When the process has encryption on (tls.h),
// the sockets that connect() and accept() make carry TLS, and every transfer below goes through
// it; so do sockets made elsewhere once startTls() marks them.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { close(); }
  Socket(Socket&& o) noexcept : fd_(o.fd_), tls_(std::move(o.tls_)) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closing a TLS socket whose handshake has not finished hands its queued bytes to the flusher
  // (tls.h), which sends them and then closes the descriptor.
  void close();
  // Wakes anything blocked on this socket in another thread (and tells the peer we are done).
  void shutdownBoth();
  // The address this socket is bound to (getsockname); empty on failure.
  SocketAddress localAddress() const;

  // Binds to bindAddr (port 0 picks an ephemeral port) and listens. *bound receives the actual
  // address. reuseAddr sets SO_REUSEADDR (for well-known ports that may linger in TIME_WAIT).
  // Failures are ncclSystemError with strerror and the address; *err (when given) gets the errno.
  static ncclResult_t listen(const SocketAddress& bindAddr, bool reuseAddr, Socket* out, SocketAddress* bound,
                             std::string* why, int* err = nullptr);
  // Connects to `to`, retrying refused/unreachable attempts with a short backoff until the deadline
  // (the listener may not be up yet). kTimeout's detail names the last error. TCP_NODELAY is set.
  static IoStatus connect(const SocketAddress& to, Deadline deadline, int cancelFd, Socket* out, std::string* detail);
  // Accepts one connection on a listening socket. TCP_NODELAY is set on it.
  IoStatus accept(Deadline deadline, int cancelFd, Socket* out, SocketAddress* peer, std::string* detail) const;
  // Transfers exactly len bytes, or reports why not. MSG_NOSIGNAL: a dead peer is kClosed, not SIGPIPE.
  IoStatus sendAll(const void* data, size_t len, Deadline deadline, int cancelFd, std::string* detail) const;
  IoStatus recvAll(void* data, size_t len, Deadline deadline, int cancelFd, std::string* detail) const;

  // TLS: when the process has encryption on, this connected socket gets it, as the client (it
  // connected) or the server (it was accepted); peer names the other end in messages. A no-op
  // when encryption is off; fails when it is on but cannot run (no OpenSSL).
  ncclResult_t startTls(TlsRole role, const std::string& peer, std::string* why);
  bool encrypted() const { return tls_ != nullptr; }
  // send(2)/recv(2) with MSG_DONTWAIT (and MSG_NOSIGNAL), through TLS when it is on. -1 with errno
  // EPROTO: TLS failed, errorText(EPROTO) says why.
  ssize_t trySend(const void* data, size_t len) const;
  ssize_t tryRecv(void* data, size_t len) const;
  // The poll() events to wait for after an EAGAIN of a transfer that wanted `dflt` (TLS may need to
  // read in order to write, or the other way round).
  short waitEvents(short dflt) const;
  // TLS: sends what sendAll queued before the handshake finished, waiting for the peer at most
  // until the deadline (a process that exits right after its last send would take those bytes
  // with it, where a plaintext socket leaves them in the kernel). True when nothing is left.
  bool finishQueued(Deadline deadline) const;
  // The text for errno err of the last transfer (the TLS failure for EPROTO).
  std::string errorText(int err) const;

 private:
  int fd_ = -1;
  std::shared_ptr<TlsLink> tls_;
};

// Which half of sendRecvAll failed.
enum class IoDirection { kNone, kSend, kRecv };

// Sends sendLen bytes on tx while receiving recvLen bytes on rx (tx and rx may be the same socket),
// progressing whichever side is ready. Doing both at once is what keeps a ring of ranks that all
// push large blocks from deadlocking on full kernel buffers. idleTimeoutMs bounds how long a side
// may go without moving a byte (<= 0: no limit); *failed says which side ended the call.
IoStatus sendRecvAll(const Socket& tx, const void* sendData, size_t sendLen, const Socket& rx, void* recvData,
                     size_t recvLen, int64_t idleTimeoutMs, int cancelFd, IoDirection* failed, std::string* detail);

}  // namespace weft
