#include "transports/net/socket/socket_comm.h"

#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/log.h"
#include "base/params.h"
#include "transports/net/socket/socket_net.h"

namespace weft::net::socketnet {

namespace {

std::string peerOf(int fd) {
  SocketAddress a = emptySocketAddress();
  socklen_t len = sizeof(a);
  if (getpeername(fd, &a.sa, &len) != 0) return "<unknown peer>";
  return socketAddressToString(a);
}

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

// The proxy's doorbell, and whether it wants rings: event mode is on while no executor polls the
// network itself, so the proxy sleeps until a ring rather than poll (see proxy.cc). Process-wide:
// one proxy per process.
std::atomic<RankBlock*> gBell{nullptr};
std::atomic<bool> gEventMode{false};

void setBell(RankBlock* bell) { gBell.store(bell, std::memory_order_release); }
void setEventMode(bool on) { gEventMode.store(on, std::memory_order_seq_cst); }
const ProgressEvents kProgressEvents{setBell, setEventMode};

bool eventMode() { return gEventMode.load(std::memory_order_seq_cst); }

// After a request moved: wake the proxy if it sleeps waiting for the network.
void ringProgress() {
  if (!eventMode()) return;
  if (RankBlock* bell = gBell.load(std::memory_order_acquire)) ringIfSleeping(bell);
}

}  // namespace

const ProgressEvents* socketProgressEvents() { return &kProgressEvents; }

ncclResult_t errnoResult(int err) {
  switch (err) {
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case ETIMEDOUT:
    case ECONNREFUSED:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ECONNABORTED: return ncclRemoteError;
    default: return ncclSystemError;
  }
}

void configureSocket(int fd, int64_t timeoutMs) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // Keepalive finds a peer whose host vanished while the link is idle; TCP_USER_TIMEOUT bounds
  // how long sent data may stay unacknowledged. Together: idle/2 + 3 probes spread over the rest.
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  int idle = std::max<int>(1, static_cast<int>(timeoutMs / 2000));
  int intvl = std::max<int>(1, static_cast<int>(timeoutMs / 6000));
  int cnt = 3;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
  unsigned int userTimeout = static_cast<unsigned int>(timeoutMs);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof(userTimeout));
}

// ---------------------------------------------------------------------------------------------
// Worker

Worker::Worker(Comm* comm, bool send) : comm_(comm), send_(send) { eventFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

Worker::~Worker() {
  stop();
  if (eventFd_ >= 0) ::close(eventFd_);
}

int Worker::addSocket(const Socket* sock) {
  socks_.push_back(sock);
  queues_.emplace_back();
  return static_cast<int>(socks_.size()) - 1;
}

void Worker::start() {
  thread_ = std::thread([this] { run(); });
}

void Worker::wake() {
  uint64_t one = 1;
  ssize_t r = ::write(eventFd_, &one, sizeof(one));
  (void)r;  // the counter only saturates if the thread is already due to wake
}

void Worker::post(int slot, char* ptr, size_t len, Request* req) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming_.push_back(Chunk{slot, ptr, len, 0, req});
  }
  wake();
}

void Worker::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  wake();
  thread_.join();
}

bool Worker::progress(std::deque<Chunk>& q, const Socket& sock, bool* moved) {
  while (!q.empty()) {
    Chunk& c = q.front();
    ssize_t n = send_ ? sock.trySend(c.ptr + c.done, c.len - c.done) : sock.tryRecv(c.ptr + c.done, c.len - c.done);
    if (n > 0) {
      c.done += static_cast<size_t>(n);
      *moved = true;
      if (c.done == c.len) {
        c.req->pendingChunks.fetch_sub(1, std::memory_order_acq_rel);
        q.pop_front();
        ringProgress();
      }
      continue;
    }
    if (n == 0) {
      comm_->fail(ncclRemoteError, "the peer closed the connection (data socket)");
      return false;
    }
    int err = errno;
    if (err == EINTR) continue;
    if (wouldBlock(err)) return true;
    comm_->fail(errnoResult(err), std::string(send_ ? "send" : "recv") + " on a data socket: " + sock.errorText(err));
    return false;
  }
  return true;
}

void Worker::run() {
  std::vector<pollfd> pfds;
  while (!stop_.load(std::memory_order_acquire)) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const Chunk& c : incoming_) queues_[c.slot].push_back(c);
      incoming_.clear();
    }
    bool failed = comm_->failure() != ncclSuccess;
    bool moved = false;
    if (failed) {
      // Nothing may touch the user's buffers any more: test() returns the error once every worker
      // has passed this point.
      for (auto& q : queues_) q.clear();
      quiesced_.store(true, std::memory_order_release);
    } else {
      for (size_t s = 0; s < socks_.size(); ++s) {
        if (!queues_[s].empty() && !progress(queues_[s], *socks_[s], &moved)) break;
      }
    }
    if (moved) continue;
    pfds.clear();
    pfds.push_back({eventFd_, POLLIN, 0});
    // The first worker of a receiving connection also watches the control socket while a receive
    // waits for its header there and the proxy sleeps (see Comm::armControlWatch).
    const bool watchCtrl = !failed && ctrlWatch_ != nullptr && ctrlWatch_->armed.load(std::memory_order_acquire);
    if (watchCtrl) pfds.push_back({ctrlWatch_->sock->fd(), ctrlWatch_->sock->waitEvents(POLLIN), 0});
    if (!failed) {
      for (size_t s = 0; s < socks_.size(); ++s) {
        if (!queues_[s].empty())
          pfds.push_back({socks_[s]->fd(), socks_[s]->waitEvents(static_cast<short>(send_ ? POLLOUT : POLLIN)), 0});
      }
    }
    // Bounded so that a lost wake-up could only delay, never hang, this thread.
    int r = ::poll(pfds.data(), pfds.size(), 1000);
    if (r > 0 && (pfds[0].revents & POLLIN)) {
      uint64_t v;
      ssize_t n = ::read(eventFd_, &v, sizeof(v));
      (void)n;
    }
    // A readable control socket: the proxy reads it (it keeps the message order). Ring once; the
    // socket is watched again only when a receive re-arms the watch.
    if (r > 0 && watchCtrl && pfds[1].revents != 0 && ctrlWatch_->armed.exchange(false)) ringProgress();
  }
}

// ---------------------------------------------------------------------------------------------
// Comm

Comm::Comm(bool send, Socket ctrl, std::vector<Socket> data, int nThreads)
    : send_(send), ctrl_(std::move(ctrl)), data_(std::move(data)),
      inlineLimit_(static_cast<size_t>(param::socketInlineBytes())), delayedAcks_(!send && param::socketDelayedAcks()) {
  peer_ = peerOf(ctrl_.fd());
  for (Request& r : reqs_) r.comm = this;
  int nWorkers = std::clamp<int>(nThreads, 1, static_cast<int>(data_.size()));
  for (int w = 0; w < nWorkers; ++w) workers_.push_back(std::make_unique<Worker>(this, send_));
  for (size_t s = 0; s < data_.size(); ++s) {
    int w = static_cast<int>(s % workers_.size());
    socketOwner_.emplace_back(w, workers_[w]->addSocket(&data_[s]));
  }
  if (!send_) {
    ctrlWatch_.sock = &ctrl_;
    workers_[0]->watchControl(&ctrlWatch_);
  }
  for (auto& w : workers_) w->start();
}

void Comm::armControlWatch() {
  // Only in event mode: otherwise an executor polls the control socket, and a watching worker
  // would only add a thread switch per message.
  if (!eventMode()) return;
  if (!ctrlWatch_.armed.exchange(true, std::memory_order_acq_rel)) workers_[0]->wake();
}

Comm::~Comm() {
  for (auto& w : workers_) w->stop();
  if (send_ && failure() == ncclSuccess) {
    // Over TLS a socket's hello may still wait for the receiver's handshake (socket_net.cc queues
    // it); the receiver's accept needs every hello, so let them go out before the sockets do.
    Deadline d = Deadline::afterMs(param::netLinkTimeoutMs());
    bool all = ctrl_.finishQueued(d);
    for (const Socket& s : data_) all = s.finishQueued(d) && all;
    if (!all) WEFT_INFO(kLogNet, "Socket network: connection to %s closed before TLS sent all", peer_.c_str());
  }
}

void Comm::fail(ncclResult_t code, const std::string& what, bool quiet) {
  {
    std::lock_guard<std::mutex> lock(failMu_);
    if (failCode_.load(std::memory_order_acquire) != ncclSuccess) return;
    failText_ = what;
    failCode_.store(code, std::memory_order_release);
  }
  if (quiet)
    WEFT_INFO(kLogNet, "Socket network: connection %s %s ended: %s", send_ ? "to" : "from", peer_.c_str(),
              what.c_str());
  else
    WEFT_WARN("Socket network: connection %s %s failed: %s", send_ ? "to" : "from", peer_.c_str(), what.c_str());
  ::shutdown(ctrl_.fd(), SHUT_RDWR);
  for (Socket& s : data_) ::shutdown(s.fd(), SHUT_RDWR);
  for (auto& w : workers_) w->wake();
  ringProgress();  // the proxy's next test() reports it
}

void Comm::waitWorkersQuiesced() {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (auto& w : workers_) {
    while (!w->quiesced()) {
      w->wake();
      if (std::chrono::steady_clock::now() > until) {
        WEFT_WARN("Socket network: a helper thread of the connection %s %s did not stop within 5 s",
                  send_ ? "to" : "from", peer_.c_str());
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

void Comm::postChunks(Request* req) {
  size_t n = data_.size();
  size_t chunk = std::max(kMinChunk, (req->size + n - 1) / n);
  size_t nChunks = (req->size + chunk - 1) / chunk;
  req->pendingChunks.store(static_cast<int>(nChunks), std::memory_order_release);
  for (size_t i = 0; i < nChunks; ++i) {
    size_t off = i * chunk;
    size_t len = std::min(chunk, req->size - off);
    auto [w, slot] = socketOwner_[(nextSocket_ + i) % n];
    workers_[w]->post(slot, req->data + off, len, req);
  }
  nextSocket_ = (nextSocket_ + nChunks) % n;
}

ncclResult_t Comm::post(void* data, size_t size, Request** request) {
  *request = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (ncclResult_t f = failure(); f != ncclSuccess) return f;
  Request* req = nullptr;
  for (Request& r : reqs_) {
    if (!r.inUse) {
      req = &r;
      break;
    }
  }
  if (req == nullptr) return ncclSuccess;  // all in flight: the caller tries again later
  req->inUse = true;
  req->data = static_cast<char*>(data);
  req->capacity = size;
  req->size = send_ ? size : 0;
  req->inlinePayload = send_ && size <= inlineLimit_;
  req->header = send_ ? (size | (req->inlinePayload ? kInlineFlag : 0)) : 0;
  req->ctrlDone = 0;
  req->ctrlFinished = false;
  req->pendingChunks.store(0, std::memory_order_relaxed);
  if (send_ && !req->inlinePayload) postChunks(req);
  ctrlQueue_.push_back(req);
  *request = req;
  // A send goes out now, from the caller's thread. A receive waits for its first test: trying it
  // here would be a recv call that, for a receive posted ahead, almost always finds nothing.
  if (send_) (void)progressControl(nullptr);  // a failure here is reported by test()
  return ncclSuccess;
}

ncclResult_t Comm::progressControl(const Request* until) {
  int fd = ctrl_.fd();
  while (!ctrlQueue_.empty() && (until == nullptr || !until->ctrlFinished)) {
    if (ncclResult_t f = failure(); f != ncclSuccess) return f;
    Request* r = ctrlQueue_.front();
    if (send_) {
      size_t payload = r->inlinePayload ? r->size : 0;
      size_t total = sizeof(r->header) + payload;
      while (r->ctrlDone < total) {
        iovec iov[2];
        int cnt = 0;
        if (r->ctrlDone < sizeof(r->header)) {
          iov[cnt++] = {reinterpret_cast<char*>(&r->header) + r->ctrlDone, sizeof(r->header) - r->ctrlDone};
          if (payload > 0) iov[cnt++] = {r->data, payload};
        } else {
          size_t off = r->ctrlDone - sizeof(r->header);
          iov[cnt++] = {r->data + off, payload - off};
        }
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = cnt;
        ssize_t n;
        if (ctrl_.encrypted()) {
          // TLS has no gather write, and a record for the header and another for the payload
          // would cost a small message twice: both go out from one staging copy.
          if (tlsStaged_ != r) {
            tlsStage_.assign(reinterpret_cast<const char*>(&r->header), sizeof(r->header));
            tlsStage_.append(r->data, payload);
            tlsStaged_ = r;
          }
          n = ctrl_.trySend(tlsStage_.data() + r->ctrlDone, total - r->ctrlDone);
        } else {
          n = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        if (n < 0) {
          int err = errno;
          if (err == EINTR) continue;
          if (wouldBlock(err)) return ncclSuccess;
          fail(errnoResult(err), std::string("send on the control socket: ") + ctrl_.errorText(err));
          return failure();
        }
        r->ctrlDone += static_cast<size_t>(n);
      }
      tlsStaged_ = nullptr;  // request slots are reused: never match a finished one
    } else {
      while (r->ctrlDone < sizeof(r->header) || (r->inlinePayload && r->ctrlDone < sizeof(r->header) + r->size)) {
        char* dst;
        size_t want;
        if (r->ctrlDone < sizeof(r->header)) {
          dst = reinterpret_cast<char*>(&r->header) + r->ctrlDone;
          want = sizeof(r->header) - r->ctrlDone;
        } else {
          size_t off = r->ctrlDone - sizeof(r->header);
          dst = r->data + off;
          want = r->size - off;
        }
        ssize_t n = readControl(dst, want);
        if (n == 0 && r->ctrlDone == 0) {
          // A clean close between messages: the sender is done (its communicator went away after
          // its last send completed). Messages already announced still arrive on the data
          // sockets; only receives that no message will ever fill fail (see test()).
          peerClosed_ = true;
          return ncclSuccess;
        }
        if (n == 0) {
          fail(ncclRemoteError, "the peer closed the connection");
          return failure();
        }
        if (n < 0) {
          int err = errno;
          if (err == EINTR) continue;
          if (wouldBlock(err)) {
            armControlWatch();
            return ncclSuccess;
          }
          fail(errnoResult(err), std::string("recv on the control socket: ") + ctrl_.errorText(err));
          return failure();
        }
        bool headerWasIncomplete = r->ctrlDone < sizeof(r->header);
        r->ctrlDone += static_cast<size_t>(n);
        if (headerWasIncomplete && r->ctrlDone == sizeof(r->header)) {
          r->size = r->header & ~kInlineFlag;
          r->inlinePayload = (r->header & kInlineFlag) != 0;
          if (r->size > r->capacity) {
            fail(ncclInvalidUsage, "the peer sent a message of " + std::to_string(r->size) +
                                       " bytes, larger than the receive posted for it (" + std::to_string(r->capacity) +
                                       " bytes)");
            return failure();
          }
          if (!r->inlinePayload) postChunks(r);
          chooseAcks(r->inlinePayload ? r->size : 0);
        }
      }
    }
    r->ctrlFinished = true;
    ctrlQueue_.pop_front();
  }
  return ncclSuccess;
}

void Comm::chooseAcks(size_t inlineBytes) {
  if (!delayedAcks_) return;
  // The kernel acknowledges each small segment it reads on a one-way connection (no reply data to
  // carry the ACK), and that pure ACK's trip through the stack cost about 1.2 us of a 6 us one-way
  // exchange over loopback here (36-byte ping-pong on two connections). With TCP_QUICKACK=0 it
  // waits for a second segment or its delayed-ACK timer instead. It leaves that mode by itself when
  // the timer fires, so it is set again every kRearmAcks small messages. A stream of larger
  // messages gets immediate ACKs back: there the sender's window needs them.
  const bool small = inlineBytes <= kReadAhead;
  int quick = -1;
  if (small && (ackMode_ != AckMode::kDelayed || ++smallSinceArm_ >= kRearmAcks)) {
    quick = 0;
    ackMode_ = AckMode::kDelayed;
    smallSinceArm_ = 0;
  } else if (!small && ackMode_ == AckMode::kDelayed) {
    quick = 1;
    ackMode_ = AckMode::kQuick;
  }
  if (quick >= 0) (void)setsockopt(ctrl_.fd(), IPPROTO_TCP, TCP_QUICKACK, &quick, sizeof(quick));
}

ssize_t Comm::readControl(char* dst, size_t want) {
  if (aheadBegin_ == aheadEnd_) {
    // Nothing read ahead. A want this large is an inline payload's rest: read it in place.
    if (want >= kReadAhead) return ctrl_.tryRecv(dst, want);
    if (ahead_ == nullptr) ahead_ = std::make_unique<char[]>(kReadAhead);
    ssize_t n = ctrl_.tryRecv(ahead_.get(), kReadAhead);
    if (n <= 0) return n;
    aheadBegin_ = 0;
    aheadEnd_ = static_cast<size_t>(n);
  }
  // Bytes beyond this request stay here for the next one. A receive is read only when tested, and
  // reading takes from here first, so no receive waits on the socket (or its watch, in event
  // mode) while its bytes sit here.
  const size_t n = std::min(want, aheadEnd_ - aheadBegin_);
  std::memcpy(dst, ahead_.get() + aheadBegin_, n);
  aheadBegin_ += n;
  return static_cast<ssize_t>(n);
}

ncclResult_t Comm::test(Request* req, int* done, size_t* size) {
  *done = 0;
  std::unique_lock<std::mutex> lock(mu_);
  if (!req->inUse) {
    WEFT_WARN("Socket network: test() of a request that is not in flight (connection %s %s)", send_ ? "to" : "from",
              peer_.c_str());
    return ncclInvalidUsage;
  }
  // Up to this request: reading on for the next message would mostly be a recv that finds nothing
  // yet, paid before the caller gets this one.
  (void)progressControl(req);
  if (req->ctrlFinished && req->pendingChunks.load(std::memory_order_acquire) == 0) {
    *done = 1;
    if (size != nullptr) *size = req->size;
    req->inUse = false;
    return ncclSuccess;
  }
  ncclResult_t f = failure();
  if (f == ncclSuccess && peerClosed_ && !req->ctrlFinished) {
    // No message will come for this receive. Fail it once the messages before it have landed,
    // since failing shuts the data sockets down.
    for (const Request& r : reqs_)
      if (r.inUse && r.ctrlFinished && r.pendingChunks.load(std::memory_order_acquire) > 0) return ncclSuccess;
    fail(ncclRemoteError, "the peer closed the connection", /*quiet=*/true);
    f = failure();
  }
  if (f == ncclSuccess) return ncclSuccess;
  lock.unlock();
  waitWorkersQuiesced();
  lock.lock();
  req->inUse = false;
  return f;
}

}  // namespace weft::net::socketnet
