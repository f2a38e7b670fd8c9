// The Socket network's plugin functions: devices, connection setup (listen / connect / accept,
// all non-blocking) and the thin entry points over Comm's data path.
#include "transports/net/socket/socket_net.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "sockets/interfaces.h"
#include "sockets/random.h"
#include "sockets/socket.h"
#include "transports/net/socket/socket_comm.h"
#include "transports/net/socket/socket_handle.h"

namespace weft::net::socketnet {

namespace {

constexpr size_t kMaxMessage = 1ull << 30;  // test() reports int sizes; NCCL's MAX_NET_SIZE

static_assert(sizeof(Handle) <= NCCL_NET_HANDLE_MAXSIZE, "a handle must fit NCCL_NET_HANDLE_MAXSIZE");

struct Settings {
  std::vector<NetInterface> interfaces;
  int nThreads = 2;
  int nSocksPerThread = 1;
  int64_t timeoutMs = 60000;
};

std::mutex gMu;
Settings gSettings;
std::deque<std::string> gNames;  // property strings stay valid for the life of the process

Settings settings() {
  std::lock_guard<std::mutex> lock(gMu);
  return gSettings;
}

struct PendingSocket {
  Socket sock;
  bool connected = false;
  bool tlsStarted = false;  // TLS (when on) starts once TCP is connected
  Hello hello{};
  size_t sent = 0;
};

struct ConnectState {
  std::vector<PendingSocket> socks;
  Deadline deadline;
  std::string peer;
  int nThreads = 1;
};

// The connections this process is making, by the key their handle holds (Handle::connectKey).
std::mutex gConnectMu;
std::map<uint64_t, std::unique_ptr<ConnectState>> gConnecting;

struct Incoming {
  Socket sock;
  Hello hello{};
  size_t got = 0;
};

struct Group {
  std::vector<Socket> socks;
  size_t have = 0;
};

struct ListenComm {
  Socket sock;
  std::string address;
  std::vector<Incoming> incoming;
  std::map<uint64_t, Group> groups;
};

// ---- init, devices, properties ----

ncclResult_t socketInit(void** ctx, uint64_t, ncclNetCommConfig_v12_t*, ncclDebugLogger_t, ncclProfilerCallback_t) {
  Settings s;
  AddressFamily family = AddressFamily::kAny;
  (void)parseAddressFamily(param::socketFamily(), &family);  // the registry admits only valid names
  std::string why;
  if (!findInterfaces(param::socketIfname(), family, &s.interfaces, &why)) {
    WEFT_WARN("Socket network: cannot list network interfaces: %s", why.c_str());
    return ncclSystemError;
  }
  s.nThreads = param::socketNThreads() > 0 ? static_cast<int>(param::socketNThreads()) : 2;
  s.nSocksPerThread = param::nSocksPerThread() > 0 ? static_cast<int>(param::nSocksPerThread()) : 1;
  if (s.nThreads * s.nSocksPerThread > kMaxDataSockets) {
    int clamped = std::max(1, kMaxDataSockets / s.nThreads);
    WEFT_WARN(
        "Socket network: NCCL_SOCKET_NTHREADS=%d x NCCL_NSOCKS_PERTHREAD=%d exceeds %d sockets; using %d "
        "sockets per thread",
        s.nThreads, s.nSocksPerThread, kMaxDataSockets, clamped);
    s.nSocksPerThread = clamped;
  }
  s.timeoutMs = param::netLinkTimeoutMs();
  std::string names;
  for (const NetInterface& i : s.interfaces) names += " " + i.name + "=" + socketAddressToString(i.addr);
  WEFT_INFO(kLogNet | kLogInit, "Socket network: %zu device(s):%s; %d helper thread(s) x %d socket(s)",
            s.interfaces.size(), names.c_str(), s.nThreads, s.nSocksPerThread);
  std::lock_guard<std::mutex> lock(gMu);
  gSettings = std::move(s);
  if (ctx != nullptr) *ctx = &gSettings;  // no per-communicator state: any non-null context does
  return ncclSuccess;
}

ncclResult_t socketDevices(int* ndev) {
  std::lock_guard<std::mutex> lock(gMu);
  *ndev = static_cast<int>(gSettings.interfaces.size());
  return ncclSuccess;
}

int readSpeedMbps(const std::string& ifname) {
  std::ifstream f("/sys/class/net/" + ifname + "/speed");
  int speed = 0;
  if (f >> speed && speed > 0) return speed;
  return 10000;  // virtual and loopback interfaces report none
}

ncclResult_t socketGetProperties(int dev, ncclNetProperties_v12_t* props) {
  std::lock_guard<std::mutex> lock(gMu);
  if (dev < 0 || dev >= static_cast<int>(gSettings.interfaces.size())) {
    WEFT_WARN("Socket network: getProperties of device %d, but there are %zu", dev, gSettings.interfaces.size());
    return ncclInvalidArgument;
  }
  const NetInterface& i = gSettings.interfaces[dev];
  memset(props, 0, sizeof(*props));
  auto known = std::find(gNames.begin(), gNames.end(), i.name);
  if (known == gNames.end()) known = gNames.insert(gNames.end(), i.name);
  props->name = known->data();
  props->pciPath = nullptr;
  props->guid = static_cast<uint64_t>(dev);
  props->ptrSupport = NCCL_PTR_HOST;
  props->regIsGlobal = 1;
  props->speed = readSpeedMbps(i.name);
  props->port = 0;
  props->latency = 0;
  props->maxComms = 65536;
  props->maxRecvs = 1;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = kMaxMessage;
  props->maxCollBytes = kMaxMessage;
  props->maxMultiRequestSize = 1;
  props->railId = -1;
  props->planeId = -1;
  return ncclSuccess;
}

// ---- connection setup ----

ncclResult_t socketListen(void*, int dev, void* handle, void** listenComm) {
  *listenComm = nullptr;
  Settings s = settings();
  if (dev < 0 || dev >= static_cast<int>(s.interfaces.size())) {
    WEFT_WARN("Socket network: listen on device %d, but there are %zu", dev, s.interfaces.size());
    return ncclInvalidArgument;
  }
  SocketAddress bindAddr = s.interfaces[dev].addr;
  setSocketAddressPort(&bindAddr, 0);
  auto lc = std::make_unique<ListenComm>();
  SocketAddress bound;
  std::string why;
  ncclResult_t r = Socket::listen(bindAddr, false, &lc->sock, &bound, &why);
  if (r != ncclSuccess) {
    WEFT_WARN("Socket network: listen on %s failed: %s", s.interfaces[dev].name.c_str(), why.c_str());
    return r;
  }
  lc->address = socketAddressToString(bound);
  makeSocketHandle(bound, handle);
  *listenComm = lc.release();
  return ncclSuccess;
}

ncclResult_t connectFailed(Handle* h, ncclResult_t code, const std::string& what) {
  std::unique_ptr<ConnectState> st;
  {
    std::lock_guard<std::mutex> lock(gConnectMu);
    auto it = gConnecting.find(h->connectKey);
    if (it != gConnecting.end()) {
      st = std::move(it->second);
      gConnecting.erase(it);
    }
  }
  WEFT_WARN("Socket network: connect to %s failed: %s", st ? st->peer.c_str() : socketAddressToString(h->addr).c_str(),
            what.c_str());
  h->connectKey = 0;
  return code;
}

ncclResult_t startConnect(Handle* h, ConnectState** out) {
  Settings s = settings();
  auto owned = std::make_unique<ConnectState>();
  ConnectState* st = owned.get();
  st->peer = socketAddressToString(h->addr);
  st->deadline = Deadline::afterMs(s.timeoutMs);
  st->nThreads = s.nThreads;
  uint32_t nData = static_cast<uint32_t>(s.nThreads * s.nSocksPerThread);
  uint64_t connId = 0;
  if (!randomBytes(&connId, sizeof(connId))) connId = reinterpret_cast<uintptr_t>(st);
  {
    // A random key, so that a key in a handle that arrived with one already set (from a peer that
    // is confused or hostile) names nothing here.
    std::lock_guard<std::mutex> lock(gConnectMu);
    uint64_t key = 0;
    while (key == 0 || gConnecting.count(key) != 0)
      if (!randomBytes(&key, sizeof(key))) key = connId + gConnecting.size() + 1;
    h->connectKey = key;
    gConnecting[key] = std::move(owned);
  }
  *out = st;
  for (uint32_t i = 0; i <= nData; ++i) {
    int fd = ::socket(h->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return connectFailed(h, ncclSystemError, std::string("socket: ") + strerror(errno));
    PendingSocket ps;
    ps.sock = Socket(fd);
    ps.hello = Hello{kHelloMagic, connId, i, nData};
    configureSocket(fd, s.timeoutMs);
    if (::connect(fd, &h->addr.sa, socketAddressLength(h->addr)) == 0) {
      ps.connected = true;
    } else if (errno != EINPROGRESS) {
      int err = errno;
      return connectFailed(h, errnoResult(err), strerror(err));
    }
    st->socks.push_back(std::move(ps));
  }
  return ncclSuccess;
}

ncclResult_t socketConnect(void*, int dev, void* handleIn, void** sendComm, ncclNetDeviceHandle_v12_t**) {
  *sendComm = nullptr;
  Handle* h = static_cast<Handle*>(handleIn);
  Handle read;
  if (!readSocketHandle(handleIn, NCCL_NET_HANDLE_MAXSIZE, &read)) {
    WEFT_WARN("Socket network: connect was given a handle that no Socket network listen() wrote");
    return ncclInvalidArgument;
  }
  ConnectState* st = nullptr;
  if (read.connectKey == 0) {
    if (ncclResult_t r = startConnect(h, &st); r != ncclSuccess) return r;
  } else {
    std::lock_guard<std::mutex> lock(gConnectMu);
    auto it = gConnecting.find(read.connectKey);
    if (it == gConnecting.end()) {
      WEFT_WARN(
          "Socket network: connect was given a handle with a connection in progress that this process did not "
          "start (a handle must reach connect() as listen() wrote it)");
      return ncclInvalidArgument;
    }
    st = it->second.get();
  }
  bool all = true;
  for (PendingSocket& ps : st->socks) {
    if (!ps.connected) {
      pollfd p{ps.sock.fd(), POLLOUT, 0};
      if (::poll(&p, 1, 0) <= 0) {
        all = false;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(ps.sock.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) return connectFailed(h, errnoResult(err), strerror(err));
      ps.connected = true;
    }
    if (!ps.tlsStarted) {
      std::string why;
      if (ncclResult_t r = ps.sock.startTls(TlsRole::kClient, st->peer, &why); r != ncclSuccess)
        return connectFailed(h, r, why);
      ps.tlsStarted = true;
      if (ps.sock.encrypted()) {
        // The handshake needs the peer's accept(), and the peer may call it only once its own
        // connect() to a third rank is done (a ring connects in a circle): queue the hello for
        // TLS's flusher instead of waiting, as a plaintext hello waits in the kernel's buffer.
        std::string detail;
        if (ps.sock.sendAll(&ps.hello, sizeof(ps.hello), st->deadline, -1, &detail) != IoStatus::kOk)
          return connectFailed(h, ncclSystemError, "sending the connection hello: " + detail);
        ps.sent = sizeof(ps.hello);
      }
    }
    while (ps.sent < sizeof(ps.hello)) {
      ssize_t n = ps.sock.trySend(reinterpret_cast<char*>(&ps.hello) + ps.sent, sizeof(ps.hello) - ps.sent);
      if (n > 0) {
        ps.sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      int err = errno;
      return connectFailed(h, errnoResult(err), "sending the connection hello: " + ps.sock.errorText(err));
    }
    if (ps.sent < sizeof(ps.hello)) all = false;
  }
  if (!all) {
    if (st->deadline.expired()) {
      return connectFailed(h, ncclRemoteError,
                           "not established within WEFT_NET_LINK_TIMEOUT_MS=" +
                               std::to_string(param::netLinkTimeoutMs()) + " ms");
    }
    return ncclSuccess;
  }
  Socket ctrl = std::move(st->socks[0].sock);
  std::vector<Socket> data;
  for (size_t i = 1; i < st->socks.size(); ++i) data.push_back(std::move(st->socks[i].sock));
  int nThreads = st->nThreads;
  {
    std::lock_guard<std::mutex> lock(gConnectMu);
    gConnecting.erase(h->connectKey);
  }
  h->connectKey = 0;
  *sendComm = new Comm(true, std::move(ctrl), std::move(data), nThreads);
  return ncclSuccess;
}

// Reads the hello of each accepted socket and files it under its connection; a complete
// connection becomes a receive Comm.
ncclResult_t socketAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t**) {
  *recvComm = nullptr;
  auto* lc = static_cast<ListenComm*>(listenComm);
  Settings s = settings();
  for (;;) {
    int fd = ::accept4(lc->sock.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EINTR || err == ECONNABORTED) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) break;
      WEFT_WARN("Socket network: accept on %s failed: %s", lc->address.c_str(), strerror(err));
      return ncclSystemError;
    }
    configureSocket(fd, s.timeoutMs);
    Incoming in;
    in.sock = Socket(fd);
    std::string why;
    if (ncclResult_t r = in.sock.startTls(TlsRole::kServer, "a peer of " + lc->address, &why); r != ncclSuccess) {
      WEFT_WARN("Socket network: %s", why.c_str());
      return r;
    }
    lc->incoming.push_back(std::move(in));
  }
  for (size_t k = 0; k < lc->incoming.size();) {
    Incoming& in = lc->incoming[k];
    bool drop = false;
    while (in.got < sizeof(in.hello)) {
      ssize_t n = in.sock.tryRecv(reinterpret_cast<char*>(&in.hello) + in.got, sizeof(in.hello) - in.got);
      if (n > 0) {
        in.got += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        drop = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        if (n < 0 && errno == EPROTO) WEFT_WARN("Socket network: %s", in.sock.errorText(EPROTO).c_str());
        break;
      }
    }
    const Hello& hl = in.hello;
    if (!drop && in.got == sizeof(hl) && !helloAcceptable(hl)) {
      WEFT_WARN("Socket network: dropping a connection to %s that did not introduce itself as Weft's",
                lc->address.c_str());
      drop = true;
    }
    if (drop || in.got < sizeof(hl)) {
      if (drop)
        lc->incoming.erase(lc->incoming.begin() + static_cast<long>(k));
      else
        ++k;
      continue;
    }
    Group& g = lc->groups[hl.connId];
    if (g.socks.empty()) g.socks.resize(hl.nData + 1);
    if (g.socks.size() != hl.nData + 1 || g.socks[hl.index].valid()) {
      WEFT_WARN("Socket network: inconsistent connection hello on %s; dropping that socket", lc->address.c_str());
    } else {
      g.socks[hl.index] = std::move(in.sock);
      ++g.have;
    }
    uint64_t id = hl.connId;
    lc->incoming.erase(lc->incoming.begin() + static_cast<long>(k));
    if (g.have == g.socks.size()) {
      Socket ctrl = std::move(g.socks[0]);
      std::vector<Socket> data;
      for (size_t i = 1; i < g.socks.size(); ++i) data.push_back(std::move(g.socks[i]));
      lc->groups.erase(id);
      *recvComm = new Comm(false, std::move(ctrl), std::move(data), s.nThreads);
      return ncclSuccess;
    }
  }
  return ncclSuccess;
}

// ---- memory registration: host memory needs none ----

char gHostRegistration;

ncclResult_t socketRegMr(void*, void*, size_t, int type, void** mhandle) {
  *mhandle = nullptr;
  if (type != NCCL_PTR_HOST) {
    WEFT_WARN("Socket network: cannot register memory of type %d (only host memory, NCCL_PTR_HOST)", type);
    return ncclInvalidArgument;
  }
  *mhandle = &gHostRegistration;
  return ncclSuccess;
}

ncclResult_t socketRegMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void** mhandle) {
  *mhandle = nullptr;
  WEFT_WARN("Socket network: DMA-BUF registration is not supported");
  return ncclInvalidArgument;
}

ncclResult_t socketDeregMr(void*, void*) { return ncclSuccess; }

// ---- data path ----

ncclResult_t socketIsend(void* sendComm, void* data, size_t size, int, void*, void*, void** request) {
  *request = nullptr;
  auto* c = static_cast<Comm*>(sendComm);
  if (!c->isSend()) {
    WEFT_WARN("Socket network: isend on a receiving connection (from %s)", c->peer().c_str());
    return ncclInvalidUsage;
  }
  if (size > kMaxMessage) {
    WEFT_WARN("Socket network: isend of %zu bytes exceeds the largest message, %zu bytes", size, kMaxMessage);
    return ncclInvalidArgument;
  }
  Request* r = nullptr;
  ncclResult_t res = c->post(data, size, &r);
  *request = r;
  return res;
}

ncclResult_t socketIrecv(void* recvComm, int n, void** data, size_t* sizes, int*, void**, void**, void** request) {
  *request = nullptr;
  auto* c = static_cast<Comm*>(recvComm);
  if (c->isSend()) {
    WEFT_WARN("Socket network: irecv on a sending connection (to %s)", c->peer().c_str());
    return ncclInvalidUsage;
  }
  if (n != 1) {
    WEFT_WARN("Socket network: irecv of %d buffers; this network takes one (maxRecvs = 1)", n);
    return ncclInvalidArgument;
  }
  Request* r = nullptr;
  ncclResult_t res = c->post(data[0], std::min(sizes[0], kMaxMessage), &r);
  *request = r;
  return res;
}

ncclResult_t socketIflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;  // host memory: what recv() wrote is already visible
  return ncclSuccess;
}

ncclResult_t socketTest(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  size_t size = 0;
  ncclResult_t res = r->comm->test(r, done, &size);
  if (*done && sizes != nullptr) *sizes = static_cast<int>(size);
  return res;
}

ncclResult_t socketCloseComm(void* comm) {
  delete static_cast<Comm*>(comm);
  return ncclSuccess;
}

ncclResult_t socketCloseListen(void* listenComm) {
  delete static_cast<ListenComm*>(listenComm);
  return ncclSuccess;
}

ncclResult_t socketGetDeviceMr(void*, void*, void**) {
  WEFT_WARN("Socket network: no device offload, getDeviceMr is not supported");
  return ncclInvalidUsage;
}

ncclResult_t socketIrecvConsumed(void*, int, void*) { return ncclSuccess; }

ncclResult_t socketMakeVDevice(int*, ncclNetVDeviceProps_v12_t*) {
  WEFT_WARN("Socket network: virtual devices (makeVDevice) are not supported");
  return ncclInvalidUsage;
}

ncclResult_t socketFinalize(void*) { return ncclSuccess; }
ncclResult_t socketSetNetAttr(void*, ncclNetAttr_v12_t*) { return ncclSuccess; }  // hints only

const ncclNet_v12_t kSocketNet = {
    "Socket",        socketInit,        socketDevices,     socketGetProperties, socketListen,
    socketConnect,   socketAccept,      socketRegMr,       socketRegMrDmaBuf,   socketDeregMr,
    socketIsend,     socketIrecv,       socketIflush,      socketTest,          socketCloseComm,
    socketCloseComm, socketCloseListen, socketGetDeviceMr, socketIrecvConsumed, socketMakeVDevice,
    socketFinalize,  socketSetNetAttr,
};

}  // namespace

const ncclNet_v12_t* socketNetTable() { return &kSocketNet; }

void makeSocketHandle(const SocketAddress& addr, void* handle) {
  Handle h{};
  h.magic = kHandleMagic;
  h.addr = addr;
  h.connectKey = 0;
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof(h));
}

}  // namespace weft::net::socketnet
