// A small TCP layer shared by Weft's bootstrap and its network transport: owning sockets that are
// always non-blocking, each wait bounded by a deadline and interruptible by a cancel descriptor
// (deadline.h). Addresses are in address.h, the choice of interface in interfaces.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"
#include "sockets/address.h"
#include "sockets/deadline.h"

namespace weft {

// An owning, non-blocking, close-on-exec TCP socket.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { close(); }
  Socket(Socket&& o) noexcept : fd_(o.release()) {}
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
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

 private:
  int fd_ = -1;
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
