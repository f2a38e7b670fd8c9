// An example external network plugin for the loader tests: one TCP socket per connection over
// 127.0.0.1, built against nothing but transports/net/net_abi.h.
//
// Built four ways (tests/net/CMakeLists.txt):
//   libnccl-net-example.so     exports ncclNetPlugin_v8 only (the loader must fall back to it)
//   libnccl-net-examplenew.so  WEFT_EXAMPLE_NEWEST: exports ncclNetPlugin_v8 and ncclNetPlugin_v12
//   libnccl-net-failinit.so    WEFT_EXAMPLE_FAIL_INIT: init reports ncclSystemError
//   libnccl-net-acceptfirst.so WEFT_EXAMPLE_CONNECT_AFTER_ACCEPT (and _NEWEST), "AcceptFirst":
//                              connect completes only once the peer's accept has taken the
//                              connection, as in aws-ofi-nccl, whose connect waits for the answer
//                              its peer's accept sends. accept writes one byte back on the new
//                              socket and connect returns a null comm until it has read it, so the
//                              order holds between processes too.
// The v12 build opens a NetPlugin profiler event per send that has a profiler handle.
// Closing a connection appends "<send|recv> api=v<N> bytes=<count>" to the file named by
// WEFT_EXAMPLE_NET_STATS, N being the ABI version whose functions moved the bytes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "transports/net/net_abi.h"

namespace {

constexpr int kMaxRequests = 8;
#ifdef WEFT_EXAMPLE_CONNECT_AFTER_ACCEPT
constexpr bool kConnectAfterAccept = true;
const char kName[] = "AcceptFirst";
#else
constexpr bool kConnectAfterAccept = false;
const char kName[] = "Example";
#endif

struct Comm;
struct Request {
  Comm* comm = nullptr;
  bool used = false;
  bool complete = false;
  char* data = nullptr;
  size_t size = 0;  // send: bytes to send; recv: capacity until the header arrives
  uint64_t header = 0;
  size_t done = 0;        // bytes of header + payload moved
  void* event = nullptr;  // its NetPlugin profiler event (v12 sends with a profiler handle)
};

// The profiler callback the v12 init got: each send the core gives a profiler handle opens a
// NetPlugin event under it (id kProfilerId, data a text), updated and stopped when it completes.
ncclProfilerCallback_t gProfiler = nullptr;
constexpr int64_t kProfilerId = 0x57454654;  // "WEFT"
char gSentText[] = "example-net-sent";

struct Comm {
  int fd = -1;
  bool send = false;
  int api = 0;
  unsigned long long bytes = 0;
  bool failed = false;
  Request reqs[kMaxRequests];
  std::deque<Request*> queue;
};

struct Handle {
  sockaddr_in addr;
  int connectFd;  // the connecting side's socket in progress, plus one (0 = not started)
};

ncclDebugLogger_t gLog = nullptr;

#define EXAMPLE_WARN(...)                                                                \
  do {                                                                                   \
    if (gLog) gLog(NCCL_LOG_WARN, NCCL_LOG_SUBSYS_NET, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

ncclResult_t initCommon(ncclDebugLogger_t log) {
  gLog = log;
#ifdef WEFT_EXAMPLE_FAIL_INIT
  EXAMPLE_WARN("example network: failing init on purpose");
  return ncclSystemError;
#else
  return ncclSuccess;
#endif
}

ncclResult_t devices(int* ndev) {
  *ndev = 1;
  return ncclSuccess;
}

template <typename Props>
ncclResult_t fillProps(int dev, Props* p) {
  if (dev != 0) return ncclInvalidArgument;
  memset(p, 0, sizeof(*p));
  static char name[] = "lo";
  p->name = name;
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = 1000;
  p->maxComms = 1024;
  p->maxRecvs = 1;
  return ncclSuccess;
}

ncclResult_t listenCommon(int dev, void* handle, void** listenComm) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ncclSystemError;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return ncclSystemError;
  }
  Handle h{};
  h.addr = a;
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof(h));
  *listenComm = new int(fd);
  return ncclSuccess;
}

Comm* newComm(int fd, bool send) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  Comm* c = new Comm;
  c->fd = fd;
  c->send = send;
  for (Request& r : c->reqs) r.comm = c;
  return c;
}

ncclResult_t connectCommon(void* handle, void** sendComm) {
  *sendComm = nullptr;
  Handle* h = static_cast<Handle*>(handle);
  if (h->connectFd == 0) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ncclSystemError;
    if (connect(fd, reinterpret_cast<sockaddr*>(&h->addr), sizeof(h->addr)) != 0 && errno != EINPROGRESS) {
      close(fd);
      return ncclRemoteError;
    }
    h->connectFd = fd + 1;
  }
  int fd = h->connectFd - 1;
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) return ncclSuccess;  // not yet: called again
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    h->connectFd = 0;
    close(fd);
    return ncclRemoteError;
  }
  if (kConnectAfterAccept) {
    // The kernel completes the TCP handshake on its own; the byte says the peer's accept ran.
    char ack = 0;
    ssize_t n = recv(fd, &ack, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return ncclSuccess;
    if (n != 1) {
      h->connectFd = 0;
      close(fd);
      EXAMPLE_WARN("example network: the peer closed the connection before accepting it");
      return ncclRemoteError;
    }
  }
  h->connectFd = 0;
  *sendComm = newComm(fd, true);
  return ncclSuccess;
}

ncclResult_t acceptCommon(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  int fd = accept4(*static_cast<int*>(listenComm), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? ncclSuccess : ncclSystemError;
  if (kConnectAfterAccept) {
    // A new socket's send buffer is empty, so the one byte goes at once or the socket is broken.
    const char ack = 1;
    if (send(fd, &ack, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
      close(fd);
      return ncclSystemError;
    }
  }
  *recvComm = newComm(fd, false);
  return ncclSuccess;
}

ncclResult_t regMr(void*, void*, size_t, int type, void** mhandle) {
  *mhandle = nullptr;
  return type == NCCL_PTR_HOST ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t regMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) { return ncclInvalidArgument; }
ncclResult_t deregMr(void*, void*) { return ncclSuccess; }

ncclResult_t post(void* comm, int api, void* data, size_t size, void** request) {
  *request = nullptr;
  Comm* c = static_cast<Comm*>(comm);
  if (c->failed) return ncclRemoteError;
  c->api = api;
  for (Request& r : c->reqs) {
    if (r.used) continue;
    r.used = true;
    r.complete = false;
    r.data = static_cast<char*>(data);
    r.size = size;
    r.header = size;
    r.done = 0;
    c->queue.push_back(&r);
    *request = &r;
    return ncclSuccess;
  }
  return ncclSuccess;
}

// Moves the oldest requests' header and payload, without blocking.
ncclResult_t progress(Comm* c) {
  while (!c->queue.empty()) {
    Request* r = c->queue.front();
    while (r->done < sizeof(r->header) + r->size) {
      char* p;
      size_t want;
      if (r->done < sizeof(r->header)) {
        p = reinterpret_cast<char*>(&r->header) + r->done;
        want = sizeof(r->header) - r->done;
      } else {
        p = r->data + (r->done - sizeof(r->header));
        want = r->size - (r->done - sizeof(r->header));
      }
      ssize_t n = c->send ? ::send(c->fd, p, want, MSG_DONTWAIT | MSG_NOSIGNAL) : ::recv(c->fd, p, want, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return ncclSuccess;
      if (n <= 0) {
        c->failed = true;
        EXAMPLE_WARN("example network: connection lost");
        return ncclRemoteError;
      }
      bool inHeader = r->done < sizeof(r->header);
      r->done += static_cast<size_t>(n);
      if (!inHeader) c->bytes += static_cast<unsigned long long>(n);
      if (!c->send && inHeader && r->done == sizeof(r->header)) {
        if (r->header > r->size) {
          c->failed = true;
          EXAMPLE_WARN("example network: message of %llu bytes for a %zu-byte receive",
                       static_cast<unsigned long long>(r->header), r->size);
          return ncclInvalidUsage;
        }
        r->size = r->header;
      }
    }
    r->complete = true;
    c->queue.pop_front();
  }
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* size) {
  Request* r = static_cast<Request*>(request);
  *done = 0;
  ncclResult_t res = progress(r->comm);
  if (r->complete) {
    *done = 1;
    if (r->event != nullptr) {
      gProfiler(&r->event, 2, nullptr, kProfilerId, gSentText);  // update
      gProfiler(&r->event, 1, nullptr, kProfilerId, nullptr);    // stop
      r->event = nullptr;
    }
    if (size) *size = static_cast<int>(r->size);
    r->used = false;
    return ncclSuccess;
  }
  return res;
}

ncclResult_t closeComm(void* comm) {
  Comm* c = static_cast<Comm*>(comm);
  if (const char* path = getenv("WEFT_EXAMPLE_NET_STATS")) {
    if (FILE* f = fopen(path, "a")) {
      fprintf(f, "%s api=v%d bytes=%llu\n", c->send ? "send" : "recv", c->api, c->bytes);
      fclose(f);
    }
  }
  close(c->fd);
  delete c;
  return ncclSuccess;
}

ncclResult_t closeListen(void* listenComm) {
  close(*static_cast<int*>(listenComm));
  delete static_cast<int*>(listenComm);
  return ncclSuccess;
}

ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;
  return ncclSuccess;
}
ncclResult_t getDeviceMr(void*, void*, void**) { return ncclInvalidUsage; }
ncclResult_t irecvConsumed(void*, int, void*) { return ncclSuccess; }

// ---- version 8 entry points ----
ncclResult_t initV8(ncclDebugLogger_t log) { return initCommon(log); }
ncclResult_t propsV8(int dev, ncclNetProperties_v8_t* p) { return fillProps(dev, p); }
ncclResult_t listenV8(int dev, void* handle, void** lc) { return listenCommon(dev, handle, lc); }
ncclResult_t connectV8(int, void* handle, void** sc, ncclNetDeviceHandle_v8_t**) { return connectCommon(handle, sc); }
ncclResult_t acceptV8(void* lc, void** rc, ncclNetDeviceHandle_v8_t**) { return acceptCommon(lc, rc); }
ncclResult_t isendV8(void* sc, void* data, int size, int, void*, void** req) {
  return post(sc, 8, data, static_cast<size_t>(size), req);
}
ncclResult_t irecvV8(void* rc, int n, void** data, int* sizes, int*, void**, void** req) {
  if (n != 1) return ncclInvalidArgument;
  return post(rc, 8, data[0], static_cast<size_t>(sizes[0]), req);
}

#ifdef WEFT_EXAMPLE_NEWEST
// ---- version 12 entry points ----
int gContext;
char gSendText[] = "example-net-send";
ncclResult_t initV12(void** ctx, uint64_t, ncclNetCommConfig_v12_t*, ncclDebugLogger_t log,
                     ncclProfilerCallback_t profiler) {
  *ctx = &gContext;
  gProfiler = profiler;
  return initCommon(log);
}
ncclResult_t propsV12(int dev, ncclNetProperties_v12_t* p) { return fillProps(dev, p); }
ncclResult_t listenV12(void* ctx, int dev, void* handle, void** lc) {
  return ctx == &gContext ? listenCommon(dev, handle, lc) : ncclInvalidArgument;
}
ncclResult_t connectV12(void* ctx, int, void* handle, void** sc, ncclNetDeviceHandle_v12_t**) {
  return ctx == &gContext ? connectCommon(handle, sc) : ncclInvalidArgument;
}
ncclResult_t acceptV12(void* lc, void** rc, ncclNetDeviceHandle_v12_t**) { return acceptCommon(lc, rc); }
ncclResult_t isendV12(void* sc, void* data, size_t size, int, void*, void* phandle, void** req) {
  ncclResult_t r = post(sc, 12, data, size, req);
  if (r == ncclSuccess && *req != nullptr && phandle != nullptr && gProfiler != nullptr)
    gProfiler(&static_cast<Request*>(*req)->event, 0, phandle, kProfilerId, gSendText);  // start
  return r;
}
ncclResult_t irecvV12(void* rc, int n, void** data, size_t* sizes, int*, void**, void**, void** req) {
  if (n != 1) return ncclInvalidArgument;
  return post(rc, 12, data[0], sizes[0], req);
}
ncclResult_t makeVDevice(int*, ncclNetVDeviceProps_v12_t*) { return ncclInvalidUsage; }
ncclResult_t finalize(void*) { return ncclSuccess; }
ncclResult_t setNetAttr(void*, ncclNetAttr_v12_t*) { return ncclSuccess; }
#endif

}  // namespace

// extern "C" without braces also gives these const tables external linkage.
extern "C" __attribute__((visibility("default"))) const ncclNet_v8_t ncclNetPlugin_v8 = {
    kName,   initV8,  devices, propsV8, listenV8,  connectV8, acceptV8,    regMr,       regMrDmaBuf,   deregMr,
    isendV8, irecvV8, iflush,  test,    closeComm, closeComm, closeListen, getDeviceMr, irecvConsumed,
};
#ifdef WEFT_EXAMPLE_NEWEST
extern "C" __attribute__((visibility("default"))) const ncclNet_v12_t ncclNetPlugin_v12 = {
    kName,       initV12,     devices,       propsV12,    listenV12, connectV12, acceptV12, regMr,
    regMrDmaBuf, deregMr,     isendV12,      irecvV12,    iflush,    test,       closeComm, closeComm,
    closeListen, getDeviceMr, irecvConsumed, makeVDevice, finalize,  setNetAttr,
};
#endif
