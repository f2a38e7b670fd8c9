// listen / connect / accept of the IB network, and the side channel each connection keeps.
#include "transports/net/ib/ib_connect.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "base/clock.h"
#include "base/log.h"
#include "base/params.h"
#include "sockets/interfaces.h"
#include "sockets/random.h"

namespace weft::net::ib {

namespace {

constexpr uint32_t kHandleMagic = 0x57494248;  // "WIBH"
constexpr int kMaxPending = 16;                // unfinished incoming side channels per listener

// The listen handle: the side channel's address and the receiver's QPs.
struct Handle {
  uint32_t magic;
  uint8_t nqps;
  uint8_t split;
  uint8_t linkLayer;
  uint8_t mtu;
  SocketAddress addr;
  uint32_t psn;
  uint16_t lid;
  uint16_t reserved;
  uint8_t gid[16];
  uint64_t token;
  uint64_t connectKey;  // set by this process's connect() while it is in progress
  uint32_t qpn[kMaxQps];
};
static_assert(sizeof(Handle) <= NCCL_NET_HANDLE_MAXSIZE, "the IB handle must fit NCCL_NET_HANDLE_MAXSIZE");

struct Incoming {
  Socket sock;
  std::string peer;
  QpInfo info{};
  size_t got = 0;
  int64_t deadlineNs = 0;
};

struct ListenComm {
  Device* dev = nullptr;
  Socket sock;
  uint64_t token = 0;
  std::unique_ptr<Comm> comm;  // the receive side, created here, handed out by accept
  std::vector<std::unique_ptr<Incoming>> pending;
};

struct Connecting {
  std::unique_ptr<Comm> comm;
  Socket sock;
  bool connected = false;
  QpInfo mine{};
  size_t sent = 0;
  int64_t deadlineNs = 0;
};

std::mutex gMu;
std::map<uint64_t, std::unique_ptr<Connecting>>* gConnecting = new std::map<uint64_t, std::unique_ptr<Connecting>>;

int64_t linkTimeoutMs() { return param::netLinkTimeoutMs(); }

Device* deviceAt(int dev) {
  const std::vector<Device*>& all = devices();
  return dev >= 0 && size_t(dev) < all.size() ? all[size_t(dev)] : nullptr;
}

// Keepalive on the side channel: no data flows on it, so a peer whose host or link went away is
// seen only through keepalive probes, within about the link timeout.
void configureSideChannel(int fd) {
  int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  int idle = 1, intvl = 1;
  int cnt = int(std::max<int64_t>(1, linkTimeoutMs() / 1000 - 1));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
  unsigned timeout = unsigned(linkTimeoutMs());
  (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof(timeout));
}

ncclResult_t connectFailed(Handle* h, ncclResult_t code, const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(gMu);
    gConnecting->erase(h->connectKey);
  }
  WEFT_WARN("IB network: connecting to %s failed: %s", socketAddressToString(h->addr).c_str(), what.c_str());
  h->connectKey = 0;
  return code;
}

ncclResult_t startConnect(Device* d, Handle* h, Connecting** out) {
  if (h->nqps < 1 || h->nqps > kMaxQps) return connectFailed(h, ncclInvalidArgument, "the handle names a bad QP count");
  auto c = std::make_unique<Connecting>();
  c->deadlineNs = nowNs() + linkTimeoutMs() * 1000000;
  c->comm = std::make_unique<Comm>(true, d, socketAddressToString(h->addr));
  Connecting* raw = c.get();
  {
    std::lock_guard<std::mutex> lock(gMu);
    uint64_t key = 0;
    while (key == 0 || gConnecting->count(key) != 0)
      if (!randomBytes(&key, sizeof(key))) key = reinterpret_cast<uintptr_t>(raw) + gConnecting->size();
    h->connectKey = key;
    (*gConnecting)[key] = std::move(c);
  }
  *out = raw;
  // The QPs connect now, from the handle alone.
  if (ncclResult_t r = raw->comm->create(h->nqps, h->split != 0, &raw->mine); r != ncclSuccess)
    return connectFailed(h, r, "creating the QPs failed");
  QpInfo peer{};
  peer.nqps = h->nqps;
  peer.psn = h->psn;
  memcpy(peer.gid, h->gid, 16);
  peer.lid = h->lid;
  peer.linkLayer = h->linkLayer;
  peer.mtu = h->mtu;
  memcpy(peer.qpn, h->qpn, sizeof(peer.qpn));
  if (ncclResult_t r = raw->comm->connectTo(peer); r != ncclSuccess)
    return connectFailed(h, r, "connecting the QPs failed");
  raw->mine.token = h->token;
  int fd = ::socket(h->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return connectFailed(h, ncclSystemError, std::string("socket: ") + strerror(errno));
  raw->sock = Socket(fd);
  configureSideChannel(fd);
  if (::connect(fd, &h->addr.sa, socketAddressLength(h->addr)) == 0) {
    raw->connected = true;
  } else if (errno != EINPROGRESS) {
    int err = errno;
    return connectFailed(h, ncclRemoteError, std::string("connect: ") + strerror(err));
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t ibListen(int dev, void* handleOut, void** listenComm) {
  *listenComm = nullptr;
  Device* d = deviceAt(dev);
  if (d == nullptr) {
    WEFT_WARN("IB network: listen on device %d, which does not exist", dev);
    return ncclInvalidArgument;
  }
  NetInterface itf;
  std::string why;
  if (ncclResult_t r = selectInterface(&itf, &why); r != ncclSuccess) {
    WEFT_WARN("IB network: no interface for the side channel: %s", why.c_str());
    return r;
  }
  auto lc = std::make_unique<ListenComm>();
  lc->dev = d;
  SocketAddress bindAddr = itf.addr, bound{};
  setSocketAddressPort(&bindAddr, 0);
  if (ncclResult_t r = Socket::listen(bindAddr, false, &lc->sock, &bound, &why); r != ncclSuccess) {
    WEFT_WARN("IB network: side channel listen failed: %s", why.c_str());
    return r;
  }
  int nqps = int(param::ibQpsPerConnection());
  lc->comm = std::make_unique<Comm>(false, d, "(not yet connected)");
  QpInfo mine{};
  if (ncclResult_t r = lc->comm->create(nqps, param::ibSplitDataOnQps(), &mine); r != ncclSuccess) return r;
  if (!randomBytes(&lc->token, sizeof(lc->token))) return ncclSystemError;
  Handle h{};
  h.magic = kHandleMagic;
  h.nqps = uint8_t(nqps);
  h.split = uint8_t(mine.split);
  h.linkLayer = mine.linkLayer;
  h.mtu = mine.mtu;
  h.addr = bound;
  h.psn = mine.psn;
  h.lid = mine.lid;
  memcpy(h.gid, mine.gid, 16);
  h.token = lc->token;
  memcpy(h.qpn, mine.qpn, sizeof(h.qpn));
  memset(handleOut, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handleOut, &h, sizeof(h));
  *listenComm = lc.release();
  return ncclSuccess;
}

ncclResult_t ibConnect(int dev, void* handleIn, void** sendComm) {
  *sendComm = nullptr;
  auto* h = static_cast<Handle*>(handleIn);
  if (h->magic != kHandleMagic || (h->addr.sa.sa_family != AF_INET && h->addr.sa.sa_family != AF_INET6)) {
    WEFT_WARN("IB network: connect was given a handle that no IB network listen() wrote");
    return ncclInvalidArgument;
  }
  Device* d = deviceAt(dev);
  if (d == nullptr) {
    WEFT_WARN("IB network: connect on device %d, which does not exist", dev);
    return ncclInvalidArgument;
  }
  Connecting* c = nullptr;
  if (h->connectKey == 0) {
    if (ncclResult_t r = startConnect(d, h, &c); r != ncclSuccess) return r;
  } else {
    std::lock_guard<std::mutex> lock(gMu);
    auto it = gConnecting->find(h->connectKey);
    if (it == gConnecting->end()) {
      WEFT_WARN("IB network: connect was given a handle with a connection in progress that this process did not start");
      return ncclInvalidArgument;
    }
    c = it->second.get();
  }
  if (!c->connected) {
    pollfd p{c->sock.fd(), POLLOUT, 0};
    if (::poll(&p, 1, 0) > 0) {
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(c->sock.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) return connectFailed(h, ncclRemoteError, std::string("side channel: ") + strerror(err));
      c->connected = true;
    }
  }
  while (c->connected && c->sent < sizeof(c->mine)) {
    ssize_t n = c->sock.trySend(reinterpret_cast<char*>(&c->mine) + c->sent, sizeof(c->mine) - c->sent);
    if (n > 0) {
      c->sent += size_t(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      return connectFailed(h, ncclRemoteError, "sending the QP description: " + c->sock.errorText(errno));
    }
  }
  if (c->sent < sizeof(c->mine)) {
    if (nowNs() > c->deadlineNs)
      return connectFailed(h, ncclRemoteError,
                           "not established within WEFT_NET_LINK_TIMEOUT_MS=" + std::to_string(linkTimeoutMs()) +
                               " ms");
    return ncclSuccess;
  }
  std::unique_ptr<Connecting> done;
  {
    std::lock_guard<std::mutex> lock(gMu);
    auto it = gConnecting->find(h->connectKey);
    done = std::move(it->second);
    gConnecting->erase(it);
  }
  h->connectKey = 0;
  done->comm->adoptSideChannel(std::move(done->sock));
  *sendComm = done->comm.release();
  return ncclSuccess;
}

ncclResult_t ibAccept(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  auto* lc = static_cast<ListenComm*>(listenComm);
  if (lc->comm == nullptr) {
    WEFT_WARN("IB network: accept called again on a listener whose connection was already accepted");
    return ncclInvalidUsage;
  }
  for (;;) {
    SocketAddress from{};
    socklen_t len = sizeof(from);
    int fd = ::accept4(lc->sock.fd(), &from.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) break;
    auto in = std::make_unique<Incoming>();
    in->sock = Socket(fd);
    in->peer = socketAddressToString(from);
    in->deadlineNs = nowNs() + linkTimeoutMs() * 1000000;
    configureSideChannel(fd);
    if (lc->pending.size() >= size_t(kMaxPending)) lc->pending.erase(lc->pending.begin());  // oldest first
    lc->pending.push_back(std::move(in));
  }
  int64_t now = nowNs();
  for (size_t i = 0; i < lc->pending.size();) {
    Incoming& in = *lc->pending[i];
    bool drop = false;
    while (in.got < sizeof(in.info)) {
      ssize_t n = in.sock.tryRecv(reinterpret_cast<char*>(&in.info) + in.got, sizeof(in.info) - in.got);
      if (n > 0) {
        in.got += size_t(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        drop = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        break;
      }
    }
    if (!drop && in.got == sizeof(in.info)) {
      const QpInfo& q = in.info;
      if (q.magic != kQpInfoMagic || q.version != kQpInfoVersion || q.token != lc->token) {
        WEFT_INFO(kLogNet,
                  "IB network: dropped a side-channel connection from %s that did not carry this listener's "
                  "token",
                  in.peer.c_str());
        drop = true;
      } else {
        Comm* comm = lc->comm.get();
        comm->setPeer(in.peer);
        if (q.nqps != uint32_t(comm->qpCount())) {
          WEFT_WARN("IB network: the sender from %s connected %u QPs where this listener made %d", in.peer.c_str(),
                    q.nqps, comm->qpCount());
          return ncclInternalError;
        }
        if (ncclResult_t r = comm->connectTo(q); r != ncclSuccess) return r;
        comm->adoptSideChannel(std::move(in.sock));
        WEFT_INFO(kLogNet, "IB network: accepted the connection from %s on %s", in.peer.c_str(),
                  lc->dev->label().c_str());
        lc->pending.clear();
        *recvComm = lc->comm.release();
        return ncclSuccess;
      }
    }
    if (!drop && now > in.deadlineNs) {
      WEFT_INFO(kLogNet,
                "IB network: dropped a side-channel connection from %s that sent nothing usable within %lld ms",
                in.peer.c_str(), static_cast<long long>(linkTimeoutMs()));
      drop = true;
    }
    if (drop)
      lc->pending.erase(lc->pending.begin() + long(i));
    else
      ++i;
  }
  return ncclSuccess;
}

bool sideChannelAddress(const void* handle, SocketAddress* out) {
  Handle h;
  memcpy(&h, handle, sizeof(h));
  if (h.magic != kHandleMagic) return false;
  *out = h.addr;
  return true;
}

ncclResult_t ibCloseListen(void* listenComm) {
  delete static_cast<ListenComm*>(listenComm);
  return ncclSuccess;
}

}  // namespace weft::net::ib
