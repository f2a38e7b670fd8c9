// A small TCP layer shared by Weft's bootstrap and its network transport: owning sockets that are
// always non-blocking, every wait bounded by a deadline and interruptible by a cancel descriptor,
// IPv4 and IPv6 addresses in one fixed-size union (so they fit in a ncclUniqueId and in tables that
// cross the wire), and the choice of the network interface under NCCL_SOCKET_IFNAME /
// NCCL_SOCKET_FAMILY.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace weft {

// An IPv4 or IPv6 endpoint. Its bytes are copied verbatim into unique ids and address tables, so
// the size is fixed (that of sockaddr_in6) and unused bytes must be zero; all ranks of one job run
// the same build on the same architecture, so host byte order in sa_family is not a concern.
union SocketAddress {
  sockaddr sa;
  sockaddr_in v4;
  sockaddr_in6 v6;
};
static_assert(sizeof(SocketAddress) == 28, "SocketAddress travels on the wire and in the unique id");

// A zeroed address (family AF_UNSPEC).
SocketAddress emptySocketAddress();
bool socketAddressValid(const SocketAddress& a);  // AF_INET or AF_INET6
socklen_t socketAddressLength(const SocketAddress& a);
uint16_t socketAddressPort(const SocketAddress& a);
void setSocketAddressPort(SocketAddress* a, uint16_t port);
bool socketAddressEqual(const SocketAddress& a, const SocketAddress& b);
// "192.0.2.7:41000", "[fd00::2]:41000", "[fe80::1%eth0]:41000"; "<unset>" for an invalid one.
std::string socketAddressToString(const SocketAddress& a);

// Address families NCCL_SOCKET_FAMILY can ask for; kAny when unset.
enum class AddressFamily { kAny, kIPv4, kIPv6 };
// Parses NCCL_SOCKET_FAMILY's value ("AF_INET", "AF_INET6", case-insensitive; "" = any). Unknown
// values return false and leave *out at kAny.
bool parseAddressFamily(const std::string& text, AddressFamily* out);

// Parses "host:port" as NCCL_COMM_ID accepts it: "192.0.2.7:41000", "[::1]:41000" or
// "node12:41000" (resolved with getaddrinfo, honouring family). False with a reason otherwise.
bool parseHostPort(const std::string& text, AddressFamily family, SocketAddress* out, std::string* why);

// One usable address of one network interface.
struct NetInterface {
  std::string name;
  SocketAddress addr;
  bool loopback = false;
};

// True when interface `name` is admitted by an NCCL_SOCKET_IFNAME-style spec: a comma-separated
// list of name prefixes; a leading '^' turns it into a list to exclude; a leading '=' (after the
// '^' if both) makes the entries exact names instead of prefixes. An empty spec admits everything.
bool interfaceNameMatches(const std::string& spec, const std::string& name);

// Lists the interfaces that are up and admitted by ifnameSpec and family, one address each (IPv4
// preferred over IPv6 when both are allowed; IPv6 link-local addresses are skipped because they
// are ambiguous without a scope). With an empty spec the default applies: everything except
// loopback and docker*, falling back to loopback when nothing else is up. Fails (false, *why)
// when getifaddrs fails.
bool findInterfaces(const std::string& ifnameSpec, AddressFamily family, std::vector<NetInterface>* out,
                    std::string* why);

// The interface Weft's sockets bind to, chosen from param::socketIfname() and
// param::socketFamily(): the first of findInterfaces'. ncclSystemError / ncclInvalidArgument with a
// reason listing what is available when nothing matches.
ncclResult_t selectInterface(NetInterface* out, std::string* why);

// An absolute point in time after which a wait gives up; never() does not expire.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline never() { return Deadline(); }
  // Already expired: a wait with it only looks, never blocks.
  static Deadline immediate();
  // ms <= 0 means no limit: Weft treats a zero or negative timeout as "wait forever".
  static Deadline afterMs(int64_t ms);
  bool isNever() const { return never_; }
  bool expired() const;
  // Milliseconds left, rounded up, at least 0; -1 for never.
  int64_t remainingMs() const;
  // A poll() timeout: the time left, capped at capMs when capMs >= 0.
  int pollTimeout(int capMs = -1) const;
  Deadline earlier(const Deadline& other) const;

 private:
  bool never_ = true;
  Clock::time_point at_{};
};

// How an I/O wait ended. kClosed covers EOF, ECONNRESET and EPIPE: the peer is gone, which callers
// report as a remote failure rather than a local system error.
enum class IoStatus { kOk, kTimeout, kClosed, kAborted, kError };
// kError -> ncclSystemError; kTimeout, kClosed, kAborted -> ncclRemoteError.
ncclResult_t ioStatusResult(IoStatus s);

// A descriptor that becomes readable, and stays so, once fire() is called. Every wait in this layer
// takes such a descriptor (or -1) in its poll set, so one fire() wakes all blocked calls at once.
class CancelEvent {
 public:
  CancelEvent();
  ~CancelEvent();
  CancelEvent(const CancelEvent&) = delete;
  CancelEvent& operator=(const CancelEvent&) = delete;
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void fire();
  bool fired() const;

 private:
  int fd_ = -1;
};

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
  static IoStatus connect(const SocketAddress& to, Deadline deadline, int cancelFd, Socket* out,
                          std::string* detail);
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

// Fills buf with cryptographically random bytes (getrandom, falling back to /dev/urandom).
bool randomBytes(void* buf, size_t len);

}  // namespace weft
