// TCP sockets for Weft's bootstrap and network transport. Every descriptor is non-blocking and
// every wait is a poll() over the socket plus the caller's cancel descriptor, so a Weft user's
// ncclCommAbort can always interrupt a rank that waits on a dead or slow peer.
#include "sockets/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "base/log.h"
#include "base/params.h"

namespace weft {

namespace {

std::string errnoString(int err) {
  char buf[128];
  // The GNU strerror_r returns the message (possibly not in buf); it is thread-safe, unlike strerror.
  const char* msg = strerror_r(err, buf, sizeof(buf));
  return std::string(msg);
}

bool isIPv6LinkLocal(const sockaddr_in6& a) {
  return a.sin6_addr.s6_addr[0] == 0xfe && (a.sin6_addr.s6_addr[1] & 0xc0) == 0x80;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

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
    case ECONNREFUSED:   // nobody listens yet (the root or a peer starts later)
    case ETIMEDOUT:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ECONNRESET:     // the listener's backlog overflowed or it closed with us queued
    case ECONNABORTED:
    case EAGAIN:
    case EADDRNOTAVAIL:  // ephemeral ports briefly exhausted
    case EINTR:
      return true;
    default:
      return false;
  }
}

IoStatus closedStatus(int err, std::string* detail) {
  if (detail) *detail = err == 0 ? "peer closed the connection" : errnoString(err);
  return IoStatus::kClosed;
}

bool isPeerGoneError(int err) { return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ETIMEDOUT; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Addresses

SocketAddress emptySocketAddress() {
  SocketAddress a;
  memset(&a, 0, sizeof(a));
  return a;
}

bool socketAddressValid(const SocketAddress& a) { return a.sa.sa_family == AF_INET || a.sa.sa_family == AF_INET6; }

socklen_t socketAddressLength(const SocketAddress& a) {
  return a.sa.sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

uint16_t socketAddressPort(const SocketAddress& a) {
  if (a.sa.sa_family == AF_INET) return ntohs(a.v4.sin_port);
  if (a.sa.sa_family == AF_INET6) return ntohs(a.v6.sin6_port);
  return 0;
}

void setSocketAddressPort(SocketAddress* a, uint16_t port) {
  if (a->sa.sa_family == AF_INET) a->v4.sin_port = htons(port);
  if (a->sa.sa_family == AF_INET6) a->v6.sin6_port = htons(port);
}

bool socketAddressEqual(const SocketAddress& a, const SocketAddress& b) {
  if (a.sa.sa_family != b.sa.sa_family) return false;
  if (a.sa.sa_family == AF_INET)
    return a.v4.sin_port == b.v4.sin_port && a.v4.sin_addr.s_addr == b.v4.sin_addr.s_addr;
  if (a.sa.sa_family == AF_INET6)
    return a.v6.sin6_port == b.v6.sin6_port && a.v6.sin6_scope_id == b.v6.sin6_scope_id &&
           memcmp(&a.v6.sin6_addr, &b.v6.sin6_addr, sizeof(in6_addr)) == 0;
  return false;
}

std::string socketAddressToString(const SocketAddress& a) {
  char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {0};
  if (a.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &a.v4.sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(a.v4.sin_port));
  }
  if (a.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &a.v6.sin6_addr, host, INET6_ADDRSTRLEN);
    std::string h(host);
    if (a.v6.sin6_scope_id != 0) {
      char ifname[IF_NAMESIZE] = {0};
      if (if_indextoname(a.v6.sin6_scope_id, ifname))
        h += std::string("%") + ifname;
      else
        h += "%" + std::to_string(a.v6.sin6_scope_id);
    }
    return "[" + h + "]:" + std::to_string(ntohs(a.v6.sin6_port));
  }
  return "<unset>";
}

bool parseAddressFamily(const std::string& text, AddressFamily* out) {
  *out = AddressFamily::kAny;
  std::string t = lower(trim(text));
  if (t.empty()) return true;
  if (t == "af_inet" || t == "inet" || t == "ipv4" || t == "4") {
    *out = AddressFamily::kIPv4;
    return true;
  }
  if (t == "af_inet6" || t == "inet6" || t == "ipv6" || t == "6") {
    *out = AddressFamily::kIPv6;
    return true;
  }
  return false;
}

bool parseHostPort(const std::string& textIn, AddressFamily family, SocketAddress* out, std::string* why) {
  std::string text = trim(textIn);
  std::string host, port;
  bool bracketed = false;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *why = "'" + text + "' is not of the form [IPv6-address]:port";
      return false;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    bracketed = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      *why = "'" + text + "' has no port (expected host:port)";
      return false;
    }
    if (text.find(':') != colon) {
      *why = "'" + text + "' is ambiguous: write an IPv6 address as [address]:port";
      return false;
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) {
    *why = "'" + text + "' has an empty host";
    return false;
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    *why = "'" + text + "' has an invalid port (expected 1..65535)";
    return false;
  }
  addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = family == AddressFamily::kIPv4 ? AF_INET : family == AddressFamily::kIPv6 ? AF_INET6 : AF_UNSPEC;
  if (bracketed) {
    if (family == AddressFamily::kIPv4) {
      *why = "'" + text + "' is IPv6 but NCCL_SOCKET_FAMILY asks for IPv4";
      return false;
    }
    hints.ai_family = AF_INET6;
    hints.ai_flags = AI_NUMERICHOST;
  }
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    *why = "cannot resolve '" + host + "': " + (rc == EAI_SYSTEM ? errnoString(errno) : gai_strerror(rc));
    if (res) freeaddrinfo(res);
    return false;
  }
  // Prefer IPv4 when both are allowed, the same preference interface selection has.
  const addrinfo* pick = nullptr;
  for (const addrinfo* p = res; p; p = p->ai_next)
    if (p->ai_family == AF_INET && !pick) pick = p;
  if (!pick)
    for (const addrinfo* p = res; p; p = p->ai_next)
      if (p->ai_family == AF_INET6 && !pick) pick = p;
  if (!pick) {
    freeaddrinfo(res);
    *why = "'" + host + "' has no IPv4 or IPv6 address";
    return false;
  }
  *out = emptySocketAddress();
  memcpy(out, pick->ai_addr, std::min<size_t>(pick->ai_addrlen, sizeof(SocketAddress)));
  freeaddrinfo(res);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Interfaces

bool interfaceNameMatches(const std::string& specIn, const std::string& name) {
  std::string spec = trim(specIn);
  bool exclude = false, exact = false;
  if (!spec.empty() && spec[0] == '^') {
    exclude = true;
    spec.erase(0, 1);
  }
  if (!spec.empty() && spec[0] == '=') {
    exact = true;
    spec.erase(0, 1);
  }
  if (!exclude && !exact && spec.empty()) return true;
  bool matched = false;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string entry = trim(spec.substr(pos, comma - pos));
    if (!entry.empty()) {
      if (exact ? name == entry : name.compare(0, entry.size(), entry) == 0) matched = true;
    }
    pos = comma + 1;
  }
  return exclude ? !matched : matched;
}

bool findInterfaces(const std::string& ifnameSpec, AddressFamily family, std::vector<NetInterface>* out,
                    std::string* why) {
  out->clear();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    *why = "getifaddrs: " + errnoString(errno);
    return false;
  }
  struct Candidate {
    NetInterface iface;
    unsigned index;
  };
  std::vector<Candidate> all;  // one per interface name, best address so far
  for (ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
    if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP)) continue;
    int fam = ifa->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (family == AddressFamily::kIPv4 && fam != AF_INET) continue;
    if (family == AddressFamily::kIPv6 && fam != AF_INET6) continue;
    SocketAddress a = emptySocketAddress();
    if (fam == AF_INET) {
      memcpy(&a.v4, ifa->ifa_addr, sizeof(sockaddr_in));
    } else {
      memcpy(&a.v6, ifa->ifa_addr, sizeof(sockaddr_in6));
      if (isIPv6LinkLocal(a.v6)) continue;
    }
    setSocketAddressPort(&a, 0);
    std::string name = ifa->ifa_name;
    auto it = std::find_if(all.begin(), all.end(), [&](const Candidate& c) { return c.iface.name == name; });
    if (it == all.end()) {
      Candidate c;
      c.iface.name = name;
      c.iface.addr = a;
      c.iface.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
      c.index = if_nametoindex(ifa->ifa_name);
      all.push_back(c);
    } else if (it->iface.addr.sa.sa_family == AF_INET6 && fam == AF_INET) {
      it->iface.addr = a;  // IPv4 wins: it is what a mixed cluster is most likely to route
    }
  }
  freeifaddrs(list);
  std::stable_sort(all.begin(), all.end(), [](const Candidate& x, const Candidate& y) { return x.index < y.index; });

  std::string spec = trim(ifnameSpec);
  if (!spec.empty()) {
    for (const Candidate& c : all)
      if (interfaceNameMatches(spec, c.iface.name)) out->push_back(c.iface);
    return true;
  }
  // Default: the interfaces other ranks can reach. Docker bridges are host-local and loopback is
  // only a last resort for single-host jobs.
  for (const Candidate& c : all)
    if (!c.iface.loopback && interfaceNameMatches("^docker,lo", c.iface.name)) out->push_back(c.iface);
  if (out->empty())
    for (const Candidate& c : all)
      if (c.iface.loopback || !interfaceNameMatches("^lo", c.iface.name)) out->push_back(c.iface);
  return true;
}

ncclResult_t selectInterface(NetInterface* out, std::string* why) {
  std::string spec = param::socketIfname();
  std::string famText = param::socketFamily();
  AddressFamily family;
  if (!parseAddressFamily(famText, &family))
    WEFT_WARN("NCCL_SOCKET_FAMILY=%s is not AF_INET or AF_INET6; using any family", famText.c_str());
  std::vector<NetInterface> found;
  if (!findInterfaces(spec, family, &found, why)) return ncclSystemError;
  if (!found.empty()) {
    *out = found[0];
    WEFT_TRACE(kLogBootstrap, "bootstrap: using interface %s (%s)", out->name.c_str(),
               socketAddressToString(out->addr).c_str());
    return ncclSuccess;
  }
  // Nothing matched: say what exists so the user can fix NCCL_SOCKET_IFNAME.
  std::vector<NetInterface> every;
  std::string avail;
  std::string ignored;
  if (findInterfaces("^=", AddressFamily::kAny, &every, &ignored)) {
    for (const NetInterface& i : every) {
      if (!avail.empty()) avail += ", ";
      avail += i.name + " (" + socketAddressToString(i.addr) + ")";
    }
  }
  if (avail.empty()) avail = "none";
  *why = "no usable network interface: NCCL_SOCKET_IFNAME=" + (spec.empty() ? std::string("<unset>") : spec) +
         " NCCL_SOCKET_FAMILY=" + (famText.empty() ? std::string("<unset>") : famText) +
         " match nothing that is up; interfaces up: " + avail;
  return spec.empty() && famText.empty() ? ncclSystemError : ncclInvalidArgument;
}

// ---------------------------------------------------------------------------------------------
// Deadlines, statuses, cancellation

Deadline Deadline::immediate() {
  Deadline d;
  d.never_ = false;
  d.at_ = Clock::now();
  return d;
}

Deadline Deadline::afterMs(int64_t ms) {
  Deadline d;
  // Beyond ~30 years the addition could overflow the clock; such a limit is "never" anyway.
  if (ms <= 0 || ms > (int64_t{1} << 40)) return d;
  d.never_ = false;
  d.at_ = Clock::now() + std::chrono::milliseconds(ms);
  return d;
}

bool Deadline::expired() const { return !never_ && Clock::now() >= at_; }

int64_t Deadline::remainingMs() const {
  if (never_) return -1;
  auto left = at_ - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  return std::chrono::ceil<std::chrono::milliseconds>(left).count();
}

int Deadline::pollTimeout(int capMs) const {
  int64_t left = remainingMs();
  if (left < 0) return capMs;  // never: cap or infinite (-1)
  if (capMs >= 0 && left > capMs) left = capMs;
  return static_cast<int>(std::min<int64_t>(left, INT_MAX));
}

Deadline Deadline::earlier(const Deadline& other) const {
  if (never_) return other;
  if (other.never_) return *this;
  return at_ <= other.at_ ? *this : other;
}

ncclResult_t ioStatusResult(IoStatus s) {
  switch (s) {
    case IoStatus::kOk:
      return ncclSuccess;
    case IoStatus::kError:
      return ncclSystemError;
    default:
      return ncclRemoteError;
  }
}

CancelEvent::CancelEvent() { fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

CancelEvent::~CancelEvent() {
  if (fd_ >= 0) ::close(fd_);
}

void CancelEvent::fire() {
  if (fd_ < 0) return;
  uint64_t one = 1;
  // Nobody ever reads the counter, so the descriptor stays readable for all later polls.
  ssize_t r;
  do {
    r = ::write(fd_, &one, sizeof(one));
  } while (r < 0 && errno == EINTR);
}

bool CancelEvent::fired() const {
  if (fd_ < 0) return false;
  pollfd p = {fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

// ---------------------------------------------------------------------------------------------
// Sockets

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.release();
  }
  return *this;
}

int Socket::release() {
  int f = fd_;
  fd_ = -1;
  return f;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
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
      *out = Socket(fd);
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
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd_, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
      IoStatus w = waitFor(fd_, POLLOUT, deadline, cancelFd, detail);
      if (w != IoStatus::kOk) return w;
      continue;
    }
    if (n < 0 && isPeerGoneError(err)) return closedStatus(err, detail);
    if (detail) *detail = "send: " + errnoString(n < 0 ? err : EIO);
    return IoStatus::kError;
  }
  return IoStatus::kOk;
}

IoStatus Socket::recvAll(void* data, size_t len, Deadline deadline, int cancelFd, std::string* detail) const {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = ::recv(fd_, p, len, 0);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return closedStatus(0, detail);
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      IoStatus w = waitFor(fd_, POLLIN, deadline, cancelFd, detail);
      if (w != IoStatus::kOk) return w;
      continue;
    }
    if (isPeerGoneError(err)) return closedStatus(err, detail);
    if (detail) *detail = "recv: " + errnoString(err);
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
      ssize_t n = ::send(tx.fd(), sp, sendLen, MSG_NOSIGNAL);
      if (n > 0) {
        sp += n;
        sendLen -= static_cast<size_t>(n);
        lastSend = Clock::now();
        progressed = true;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        int err = errno;
        if (isPeerGoneError(err)) return fail(IoDirection::kSend, closedStatus(err, detail));
        if (detail) *detail = "send: " + errnoString(err);
        return fail(IoDirection::kSend, IoStatus::kError);
      }
    }
    if (recvLen > 0) {
      ssize_t n = ::recv(rx.fd(), rp, recvLen, 0);
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
        if (detail) *detail = "recv: " + errnoString(err);
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
      if (sendLen > 0) pfd[n++] = {tx.fd(), POLLOUT, 0};
      if (recvLen > 0) pfd[n++] = {rx.fd(), POLLIN, 0};
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

bool randomBytes(void* buf, size_t len) {
  char* p = static_cast<char*>(buf);
  size_t left = len;
  while (left > 0) {
    ssize_t n = getrandom(p, left, 0);
    if (n > 0) {
      p += n;
      left -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // ENOSYS on very old kernels: fall back to the device
  }
  if (left == 0) return true;
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  while (left > 0) {
    ssize_t n = ::read(fd, p, left);
    if (n > 0) {
      p += n;
      left -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(fd);
  return left == 0;
}

}  // namespace weft
