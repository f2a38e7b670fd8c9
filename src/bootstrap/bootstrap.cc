// Joining a rendezvous and the out-of-band ring that communicator setup runs its allgathers and
// barriers on. Each rank listens on its own socket, tells the root where, gets everyone's address
// back, then connects to rank+1 and accepts rank-1. Every wait is bounded by the communicator's
// timeout and interruptible by abort(), and every failure names the ranks involved.
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/p2p_inbox.h"
#include "bootstrap/protocol.h"
#include "bootstrap/root.h"
#include "sockets/intake.h"
#include "sockets/interfaces.h"
#include "sockets/socket.h"
#include "sockets/tls.h"

namespace weft {

namespace {

using namespace weft::bootstrap;

// How much longer than the root a rank waits for the root's answer. The root starts its clock at
// the first rank's arrival, which is never later than ours, so with this slack a rank hears the
// root's own verdict (which lists the missing ranks) instead of timing out blind.
int64_t replyGraceMs(int64_t timeoutMs) { return 1000 + timeoutMs / 10; }

std::string rankText(int r) { return "rank " + std::to_string(r); }

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(int rank, int nranks, int64_t timeoutMs) : rank_(rank), nranks_(nranks), timeoutMs_(timeoutMs) {}

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  ncclResult_t allGather(void* data, size_t bytesPerRank, std::string* why) override {
    return ringAllGather(data, bytesPerRank, false, why);
  }

  ncclResult_t barrier(std::string* why) override {
    std::vector<char> bytes(nranks_, 0);
    return ringAllGather(bytes.data(), 1, true, why);
  }

  ncclResult_t send(int peer, uint64_t tag, const void* data, size_t bytes, std::string* why) override {
    return sendWithin(peer, tag, data, bytes, timeoutMs_, why);
  }
  ncclResult_t sendWithin(int peer, uint64_t tag, const void* data, size_t bytes, int64_t timeoutMs,
                          std::string* why) override;
  ncclResult_t tryRecv(int peer, uint64_t tag, void* data, size_t bytes, bool* got, std::string* why) override;

  SocketAddress listenAddress() const override { return table_.empty() ? emptySocketAddress() : table_[rank_]; }

  void abort() override {
    aborted_.store(true, std::memory_order_release);
    cancel_.fire();
    // Our neighbours see the connection end at once, fail their own call, and pass the failure on
    // around the ring: the whole job learns promptly that this rank is gone.
    next_.shutdownBoth();
    prev_.shutdownBoth();
  }

  // cancelFd: the caller's descriptor that interrupts setup (-1: none; abort() needs the object).
  ncclResult_t init(const Secret& secret, const SocketAddress& root, bool serveRoot, bool fromCommIdEnv, int cancelFd,
                    std::string* why);

 private:
  ncclResult_t fail(ncclResult_t rc, const std::string& msg, std::string* why) {
    if (why) *why = msg;
    return rc;
  }
  ncclResult_t joinRoot(const SocketAddress& root, const SocketAddress& myListen, Deadline connectDeadline,
                        std::vector<SocketAddress>* table, std::string* why);
  ncclResult_t connectRing(const Socket& listener, const std::vector<SocketAddress>& table, std::string* why);
  ncclResult_t ringAllGather(void* data, size_t bytesPerRank, bool isBarrier, std::string* why);
  // After a failed transfer the byte streams are out of step; refuse further use, and shut the
  // ring down so that the neighbours fail now instead of at their timeout.
  void breakRing(const std::string& msg) {
    broken_ = msg;
    next_.shutdownBoth();
    prev_.shutdownBoth();
  }

  const int rank_;
  const int nranks_;
  const int64_t timeoutMs_;
  Secret secret_{};
  CancelEvent cancel_;
  std::atomic<bool> aborted_{false};
  Socket next_;  // to rank+1: this rank only sends on it
  Socket prev_;  // from rank-1: this rank only receives on it
  std::vector<SocketAddress> table_;
  // Kept after setup: point-to-point messages arrive here, one connection each.
  Socket listener_;
  std::mutex p2pMutex_;
  std::unique_ptr<P2pInbox> inbox_;  // made with the listener, once the secret is known
  P2pMailbox mailbox_;
  std::string broken_;
  uint64_t opSeq_ = 0;
  int setupCancelFd_ = -1;      // what interrupts waits during init()
  bool fromCommIdEnv_ = false;  // the rendezvous came from NCCL_COMM_ID (for error hints)
};

// Sleeps up to ms, returning false early if cancelFd fires.
bool sleepUnlessCancelled(int cancelFd, int ms) {
  if (cancelFd < 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return true;
  }
  pollfd p = {cancelFd, POLLIN, 0};
  return ::poll(&p, 1, ms) <= 0;
}

ncclResult_t TcpBootstrap::init(const Secret& secret, const SocketAddress& root, bool serveRoot, bool fromCommIdEnv,
                                int cancelFd, std::string* why) {
  const auto t0 = std::chrono::steady_clock::now();
  secret_ = secret;
  fromCommIdEnv_ = fromCommIdEnv;
  const std::string me = rankText(rank_);
  if (!cancel_.ok()) return fail(ncclSystemError, "bootstrap: " + me + ": eventfd: " + strerror(errno), why);
  setupCancelFd_ = cancelFd >= 0 ? cancelFd : cancel_.fd();
  const Deadline deadline = Deadline::afterMs(timeoutMs_);

  NetInterface iface;
  std::string detail;
  ncclResult_t rc = selectInterface(&iface, &detail);
  if (rc != ncclSuccess) return fail(rc, "bootstrap: " + me + ": " + detail, why);
  Socket listener;
  SocketAddress myListen;
  rc = Socket::listen(iface.addr, false, &listener, &myListen, &detail);
  if (rc != ncclSuccess) return fail(rc, "bootstrap: " + me + " cannot listen: " + detail, why);

  if (serveRoot) {
    // NCCL_COMM_ID: this rank hosts the root on the agreed address. The previous communicator's
    // root on the same port may still be finishing, so a busy port is retried until the deadline.
    Socket rootListener;
    SocketAddress bound;
    int backoffMs = 1;
    for (;;) {
      int err = 0;
      rc = Socket::listen(root, /*reuseAddr=*/true, &rootListener, &bound, &detail, &err);
      if (rc == ncclSuccess) break;
      if (err != EADDRINUSE || deadline.expired())
        return fail(rc, "bootstrap: " + me + " cannot serve the NCCL_COMM_ID root: " + detail, why);
      if (!sleepUnlessCancelled(setupCancelFd_, backoffMs))
        return fail(ncclRemoteError, "bootstrap: " + me + " was aborted while waiting to serve the NCCL_COMM_ID root",
                    why);
      backoffMs = std::min(backoffMs * 2, 100);
    }
    rc = startRoot(std::move(rootListener), bound, secret_, timeoutMs_, &detail);
    if (rc != ncclSuccess) return fail(rc, "bootstrap: " + me + ": " + detail, why);
  }

  std::vector<SocketAddress> table;
  rc = joinRoot(root, myListen, deadline, &table, why);
  if (rc != ncclSuccess) return rc;
  table_ = std::move(table);

  rc = connectRing(listener, table_, why);
  if (rc != ncclSuccess) return rc;
  listener_ = std::move(listener);
  inbox_ = std::make_unique<P2pInbox>(rank_, nranks_, secret_);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  WEFT_INFO(kLogBootstrap, "bootstrap: rank %d/%d ready in %.1f ms (root %s, interface %s, listening on %s)", rank_,
            nranks_, ms, socketAddressToString(root).c_str(), iface.name.c_str(),
            socketAddressToString(myListen).c_str());
  return ncclSuccess;
}

ncclResult_t TcpBootstrap::joinRoot(const SocketAddress& root, const SocketAddress& myListen, Deadline connectDeadline,
                                    std::vector<SocketAddress>* table, std::string* why) {
  const std::string me = rankText(rank_);
  const std::string rootText = socketAddressToString(root);
  RootHello hello;
  memset(&hello, 0, sizeof(hello));
  hello.magic = kMagic;
  hello.version = kProtocolVersion;
  hello.rank = rank_;
  hello.nranks = nranks_;
  hello.timeoutMs = timeoutMs_;
  hello.listen = myListen;
  std::string detail;
  for (;;) {
    Socket s;
    IoStatus st = Socket::connect(root, connectDeadline, setupCancelFd_, &s, &detail);
    if (st == IoStatus::kTimeout)
      return fail(ncclRemoteError,
                  "bootstrap: " + me + " could not reach the root at " + rootText + " within " +
                      std::to_string(timeoutMs_) + " ms (" + detail + ")",
                  why);
    if (st != IoStatus::kOk)
      return fail(ioStatusResult(st), "bootstrap: " + me + " cannot connect to the root at " + rootText + ": " + detail,
                  why);
    // The rank says which protocol it speaks; the root answers with a nonce that this rank's proof
    // of the secret must cover.
    const RootIntro intro{kMagic, kProtocolVersion, 0};
    RootChallenge challenge;
    memset(&challenge, 0, sizeof(challenge));
    st = s.sendAll(&intro, sizeof(intro), connectDeadline, setupCancelFd_, &detail);
    if (st == IoStatus::kOk) st = s.recvAll(&challenge, sizeof(challenge), connectDeadline, setupCancelFd_, &detail);
    if (st == IoStatus::kOk && (challenge.magic != kMagic || challenge.version != kProtocolVersion))
      return fail(ncclInvalidUsage,
                  "bootstrap: " + me + ": the root at " + rootText +
                      " is not a Weft bootstrap root of protocol version " + std::to_string(kProtocolVersion) +
                      " (mixed Weft versions, or another service on that port?)",
                  why);
    if (st == IoStatus::kOk) {
      hello.proof = rootHelloProof(secret_, challenge, hello);
      st = s.sendAll(&hello, sizeof(hello), connectDeadline, setupCancelFd_, &detail);
    }
    RootReply reply;
    memset(&reply, 0, sizeof(reply));
    if (st == IoStatus::kOk) {
      const Deadline replyDeadline = Deadline::afterMs(timeoutMs_ <= 0 ? 0 : timeoutMs_ + replyGraceMs(timeoutMs_));
      st = s.recvAll(&reply, sizeof(reply), replyDeadline, setupCancelFd_, &detail);
      if (st == IoStatus::kTimeout)
        return fail(ncclRemoteError,
                    "bootstrap: " + me + " got no answer from the root at " + rootText + " within " +
                        std::to_string(timeoutMs_ + replyGraceMs(timeoutMs_)) + " ms",
                    why);
    }
    if (st == IoStatus::kClosed && !connectDeadline.expired()) {
      // The connection was dropped before any answer: a root that had just finished (we sat in
      // its backlog) or one restarting on a fixed NCCL_COMM_ID port. Try again.
      if (!sleepUnlessCancelled(setupCancelFd_, 5))
        return fail(ncclRemoteError, "bootstrap: " + me + " was aborted while joining the root at " + rootText, why);
      continue;
    }
    if (st != IoStatus::kOk)
      return fail(ioStatusResult(st),
                  "bootstrap: " + me + " lost its connection to the root at " + rootText + " (" + detail + ")", why);
    if (std::string problem = rootReplyProblem(reply, nranks_); !problem.empty())
      return fail(ncclRemoteError, "bootstrap: " + me + ": the root at " + rootText + " " + problem, why);
    std::string text;
    std::vector<SocketAddress> addrs;
    void* dst = nullptr;
    if (reply.code == kRootOk) {
      addrs.resize(nranks_);
      dst = addrs.data();
    } else {
      text.resize(reply.textLen);
      dst = text.data();
    }
    st = s.recvAll(dst, reply.textLen, Deadline::afterMs(timeoutMs_), setupCancelFd_, &detail);
    if (st != IoStatus::kOk)
      return fail(ioStatusResult(st),
                  "bootstrap: " + me + " lost its connection to the root at " + rootText + " (" + detail + ")", why);
    if (reply.code == kRootOk) {
      *table = std::move(addrs);
      return ncclSuccess;
    }
    return rootRefusal(reply.code, text, "bootstrap: " + me, nranks_, rootText, fromCommIdEnv_, why);
  }
}

ncclResult_t TcpBootstrap::connectRing(const Socket& listener, const std::vector<SocketAddress>& table,
                                       std::string* why) {
  if (nranks_ == 1) return ncclSuccess;
  const std::string me = rankText(rank_);
  const int next = (rank_ + 1) % nranks_;
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  const Deadline deadline = Deadline::afterMs(timeoutMs_);
  std::string detail;

  // Connect first, accept second: connect completes in the peer's listen backlog whether or not it
  // is accepting yet, so no ordering between ranks is needed.
  IoStatus st = Socket::connect(table[next], deadline, setupCancelFd_, &next_, &detail);
  if (st == IoStatus::kTimeout)
    return fail(ncclRemoteError,
                "bootstrap: " + me + " could not connect to " + rankText(next) + " at " +
                    socketAddressToString(table[next]) + " within " + std::to_string(timeoutMs_) + " ms (" + detail +
                    ")",
                why);
  if (st != IoStatus::kOk)
    return fail(ioStatusResult(st),
                "bootstrap: " + me + " cannot connect to " + rankText(next) + " at " +
                    socketAddressToString(table[next]) + ": " + detail,
                why);
  RingHello hello;
  memset(&hello, 0, sizeof(hello));
  hello.magic = kMagic;
  hello.rank = rank_;
  hello.proof = ringHelloProof(secret_, rank_, table[next]);
  st = next_.sendAll(&hello, sizeof(hello), deadline, setupCancelFd_, &detail);
  if (st != IoStatus::kOk)
    return fail(ioStatusResult(st),
                "bootstrap: " + me + " cannot introduce itself to " + rankText(next) + " (" + detail + ")", why);

  // Strangers are read side by side with the predecessor and dropped (acceptIntroduced): one that
  // connects and stays silent must not hold this rank's init, and with it every other rank's.
  IntakeOptions intake;
  intake.helloBytes = sizeof(RingHello);
  intake.strangerMs = std::min<int64_t>(timeoutMs_ <= 0 ? 10000 : timeoutMs_, 10000);
  intake.isExpected = [&](const void* bytes) {
    RingHello got;
    memcpy(&got, bytes, sizeof(got));
    return ringHelloExpected(got, prev, secret_, table[rank_]);
  };
  RingHello got;
  int dropped = 0;
  st = acceptIntroduced(listener, intake, deadline, setupCancelFd_, &prev_, &got, &dropped, &detail);
  if (st == IoStatus::kOk) return ncclSuccess;
  if (st == IoStatus::kAborted)
    return fail(ncclRemoteError, "bootstrap: " + me + " was aborted while waiting for " + rankText(prev), why);
  const std::string strangers = dropped > 0 ? " (dropped " + std::to_string(dropped) +
                                                  " other connections that did not introduce themselves)"
                                            : "";
  if (st == IoStatus::kTimeout)
    return fail(ncclRemoteError,
                "bootstrap: " + me + " got no connection from " + rankText(prev) + " within " +
                    std::to_string(timeoutMs_) + " ms" + strangers,
                why);
  return fail(ioStatusResult(st), "bootstrap: " + me + " waiting for " + rankText(prev) + ": " + detail + strangers,
              why);
}

ncclResult_t TcpBootstrap::sendWithin(int peer, uint64_t tag, const void* data, size_t bytes, int64_t timeoutMs,
                                      std::string* why) {
  const std::string head = "bootstrap message from " + rankText(rank_) + " to " + rankText(peer);
  if (peer < 0 || peer >= nranks_) return fail(ncclInvalidArgument, head + ": no such rank", why);
  if (bytes > kP2pMaxBytes) return fail(ncclInvalidArgument, head + ": too large", why);
  if (aborted_.load(std::memory_order_acquire))
    return fail(ncclRemoteError, head + ": the communicator was aborted", why);
  const Deadline deadline = Deadline::afterMs(timeoutMs);
  // timeoutMs bounds the connect: a short attempt gives up on a peer that refuses connections
  // (gone). Once connected, the message gets the bootstrap's whole timeout to go out: under TLS,
  // sendAll queues it until the peer answers the handshake, which it does only when it next looks
  // at its inbox, and a queue that outlived a short deadline would drop a message this call had
  // reported sent.
  const Deadline delivery = Deadline::afterMs(std::max(timeoutMs, timeoutMs_));
  std::string detail;
  Socket s;
  IoStatus st = Socket::connect(table_[peer], deadline, cancel_.fd(), &s, &detail);
  P2pHeader h;
  memset(&h, 0, sizeof(h));
  h.magic = kP2pMagic;
  h.from = rank_;
  h.to = peer;
  h.tag = tag;
  h.bytes = bytes;
  h.proof = p2pProof(secret_, h, data);
  if (st == IoStatus::kOk) st = s.sendAll(&h, sizeof h, delivery, cancel_.fd(), &detail);
  if (st == IoStatus::kOk && bytes > 0) st = s.sendAll(data, bytes, delivery, cancel_.fd(), &detail);
  if (st != IoStatus::kOk)
    return fail(ioStatusResult(st), head + " at " + socketAddressToString(table_[peer]) + " failed: " + detail, why);
  return ncclSuccess;
}

ncclResult_t TcpBootstrap::tryRecv(int peer, uint64_t tag, void* data, size_t bytes, bool* got, std::string* why) {
  *got = false;
  std::lock_guard<std::mutex> lock(p2pMutex_);
  if (aborted_.load(std::memory_order_acquire))
    return fail(ncclRemoteError, "bootstrap: " + rankText(rank_) + ": the communicator was aborted", why);
  if (inbox_) inbox_->poll(listener_, &mailbox_);
  auto it = mailbox_.find({peer, tag});
  if (it == mailbox_.end()) return ncclSuccess;
  if (it->second.size() != bytes) {
    std::string msg = "bootstrap: " + rankText(rank_) + " expected " + std::to_string(bytes) + " bytes from " +
                      rankText(peer) + " (tag " + std::to_string(tag) + ") but got " +
                      std::to_string(it->second.size());
    mailbox_.erase(it);
    return fail(ncclInternalError, msg, why);
  }
  if (bytes > 0) memcpy(data, it->second.data(), bytes);
  mailbox_.erase(it);
  *got = true;
  return ncclSuccess;
}

ncclResult_t TcpBootstrap::ringAllGather(void* data, size_t bytesPerRank, bool isBarrier, std::string* why) {
  const std::string head = std::string("bootstrap ") + (isBarrier ? "barrier" : "allgather") + ": " + rankText(rank_);
  if (aborted_.load(std::memory_order_acquire))
    return fail(ncclRemoteError, head + ": the communicator was aborted", why);
  if (!broken_.empty())
    return fail(ncclRemoteError, head + " cannot continue after an earlier failure: " + broken_, why);
  if (nranks_ == 1) return ncclSuccess;
  if (data == nullptr && bytesPerRank > 0) return fail(ncclInvalidArgument, head + ": null buffer", why);

  char* base = static_cast<char*>(data);
  const int next = (rank_ + 1) % nranks_;
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  // Each operation opens with a header, so ranks whose calls disagree (a size mismatch, a barrier
  // against an allgather, leftovers of an aborted call) fail with a message instead of silently
  // reading each other's bytes as data.
  const uint64_t seq = ++opSeq_;
  OpHeader mine{kOpMagic, isBarrier ? 1u : 0u, seq, bytesPerRank};
  OpHeader theirs{};
  // Step -1 exchanges the headers; step s forwards the block that arrived in step s-1 (our own at
  // s=0) while receiving the next.
  for (int s = -1; s < nranks_ - 1; s++) {
    const int sendIdx = (rank_ - s + nranks_) % nranks_;
    const int recvIdx = (rank_ - s - 1 + nranks_) % nranks_;
    IoDirection dir = IoDirection::kNone;
    std::string detail;
    IoStatus st = s < 0 ? sendRecvAll(next_, &mine, sizeof(mine), prev_, &theirs, sizeof(theirs), timeoutMs_,
                                      cancel_.fd(), &dir, &detail)
                        : sendRecvAll(next_, base + sendIdx * bytesPerRank, bytesPerRank, prev_,
                                      base + recvIdx * bytesPerRank, bytesPerRank, timeoutMs_, cancel_.fd(), &dir,
                                      &detail);
    if (st == IoStatus::kOk && s < 0 && !opHeadersMatch(theirs, mine)) {
      std::string msg = head + " is out of step with " + rankText(prev) + " (" + socketAddressToString(table_[prev]) +
                        "): this rank is in " + describeOp(mine) + ", that rank sent " + describeOp(theirs);
      breakRing(msg);
      return fail(ncclInternalError, msg, why);
    }
    if (st == IoStatus::kOk) continue;
    std::string msg;
    const bool recvSide = dir != IoDirection::kSend;
    const int peer = recvSide ? prev : next;
    const std::string peerText = rankText(peer) + " (" + socketAddressToString(table_[peer]) + ")";
    if (st == IoStatus::kAborted || aborted_.load(std::memory_order_acquire)) {
      msg = head + " was aborted while exchanging data with " + peerText;
    } else if (st == IoStatus::kTimeout) {
      msg = recvSide ? head + " got no data from " + peerText + " within " + std::to_string(timeoutMs_) + " ms"
                     : head + " could not send to " + peerText + ": it took no data for " + std::to_string(timeoutMs_) +
                           " ms";
    } else if (st == IoStatus::kClosed) {
      msg = recvSide ? head + " got no data from " + peerText + " (" + detail + ")"
                     : head + " could not send to " + peerText + " (" + detail + ")";
    } else {
      msg = head + (recvSide ? " receiving from " : " sending to ") + peerText + ": " + detail;
    }
    breakRing(msg);
    return fail(st == IoStatus::kError ? ncclSystemError : ncclRemoteError, msg, why);
  }
  return ncclSuccess;
}

// Once per process: a job that meets through NCCL_COMM_ID without WEFT_COMM_SECRET admits anyone who
// can reach the port, since its secret is computed from the address alone. Under TLS it does not:
// a client without the pre-shared key cannot finish a handshake with any rank or the root.
void warnIfOpen(const std::string& commId, bool userKeyed) {
  static std::atomic<bool> warned{false};
  if (userKeyed || tlsEnabled() || warned.exchange(true)) return;
  WEFT_WARN(
      "bootstrap: NCCL_COMM_ID=%s without WEFT_COMM_SECRET: anyone who can reach that port can join this job as one "
      "of its ranks; set WEFT_COMM_SECRET to the same secret on every rank, or turn on TLS (docs/security.md)",
      commId.c_str());
}

}  // namespace

ncclResult_t Bootstrap::create(const ncclUniqueId& id, int rank, int nranks, int64_t timeoutMs,
                               std::unique_ptr<Bootstrap>* out, std::string* why) {
  return create(id, rank, nranks, timeoutMs, -1, out, why);
}

ncclResult_t Bootstrap::create(const ncclUniqueId& id, int rank, int nranks, int64_t timeoutMs, int cancelFd,
                               std::unique_ptr<Bootstrap>* out, std::string* why) {
  std::string scratch;
  if (!why) why = &scratch;
  if (!out) {
    *why = "bootstrap: no place for the result";
    return ncclInvalidArgument;
  }
  out->reset();
  if (nranks < 1 || nranks > kMaxRanks) {
    *why = "bootstrap: nranks must be between 1 and " + std::to_string(kMaxRanks) + " (got " + std::to_string(nranks) +
           ")";
    return ncclInvalidArgument;
  }
  if (rank < 0 || rank >= nranks) {
    *why = "bootstrap: rank " + std::to_string(rank) + " is out of range for nranks=" + std::to_string(nranks);
    return ncclInvalidArgument;
  }

  // Which rendezvous: an id whose root is already running wins (ncclCommSplit's ids, or an id made
  // before NCCL_COMM_ID was set); otherwise NCCL_COMM_ID; otherwise the id must be an env-style one.
  IdLayout layout;
  const bool idValid = decodeId(id, &layout);
  const std::string commId = param::commId();
  Secret secret{};
  SocketAddress root;
  bool serveRoot = false;
  bool fromEnv = false;
  if (idValid && layout.kind == static_cast<uint16_t>(IdKind::kRootStarted)) {
    secret = layout.secret;
    root = layout.root;
  } else if (!commId.empty()) {
    AddressFamily family;
    (void)parseAddressFamily(param::socketFamily(), &family);
    std::string detail;
    if (!parseHostPort(commId, family, &root, &detail)) {
      *why = "bootstrap: NCCL_COMM_ID: " + detail;
      return ncclInvalidArgument;
    }
    bool userKeyed = false;
    secret = secretForCommId(commId, &userKeyed);
    serveRoot = rank == 0;
    fromEnv = true;
    warnIfOpen(commId, userKeyed);
  } else if (idValid) {
    // Made under NCCL_COMM_ID by ncclGetUniqueId, joined here without it: the id still says where.
    secret = layout.secret;
    root = layout.root;
    serveRoot = rank == 0;
  } else {
    *why =
        "bootstrap: the unique id was not made by ncclGetUniqueId of this Weft version (and NCCL_COMM_ID is not set)";
    return ncclInvalidArgument;
  }

  auto bs = std::make_unique<TcpBootstrap>(rank, nranks, timeoutMs);
  ncclResult_t rc = bs->init(secret, root, serveRoot, fromEnv, cancelFd, why);
  if (rc != ncclSuccess) return rc;
  *out = std::move(bs);
  return ncclSuccess;
}

}  // namespace weft
