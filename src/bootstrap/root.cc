// The bootstrap root: one detached thread per rendezvous that collects every rank's listen address
// and hands the full table back. It serves all connections from one poll loop, so a slow or
// malicious client (or a rank with a stale id) can never hold up the ranks that are right.
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <exception>
#include <thread>
#include <vector>

#include "base/log.h"
#include "bootstrap/protocol.h"
#include "bootstrap/root.h"
#include "sockets/socket.h"

namespace weft::bootstrap {

namespace {

// Connections that have not yet said who they are. More than this at once is not a job starting
// up but something hammering the port: the oldest one is closed to make room, never the newest,
// since a real rank sends its hello as soon as it connects and is therefore never the oldest for
// long. The same happens when the process runs out of descriptors (EMFILE).
constexpr size_t kMaxPending = 4096;
// How long one connection may stay silent before it is closed: a rank's hello follows its connect
// at once, so only strangers (a port scanner, a stalled client) ever reach this.
constexpr int64_t kSilentMs = 10000;
// A refusal is a few dozen bytes into an empty socket buffer; never wait long on it.
constexpr int64_t kRefusalSendMs = 1000;

struct Pending {
  Socket sock;
  SocketAddress peer;
  RootHello hello;
  size_t got = 0;
  Deadline silentLimit;  // closed unheard after this
};

class RootService {
 public:
  RootService(Socket listener, const SocketAddress& addr, const Secret& secret, int64_t timeoutMs)
      : listener_(std::move(listener)), addr_(addr), secret_(secret), timeoutMs_(timeoutMs) {}

  void run() {
    const Deadline idle = Deadline::afterMs(timeoutMs_);
    for (;;) {
      const Deadline& limit = nranks_ < 0 ? idle : deadline_;
      if (limit.expired()) {
        giveUp();
        return;
      }
      // Oldest first (accept order), so the silent ones past their limit are at the front.
      while (!pending_.empty() && pending_.front().silentLimit.expired()) pending_.pop_front();
      const Deadline wake = pending_.empty() ? limit : limit.earlier(pending_.front().silentLimit);
      std::vector<pollfd> pfd;
      pfd.push_back({listener_.fd(), POLLIN, 0});
      for (const Pending& p : pending_) pfd.push_back({p.sock.fd(), POLLIN, 0});
      std::vector<int> rankOfFd;  // for the entries after the pending ones
      for (int r = 0; r < static_cast<int>(ranks_.size()); r++) {
        if (!ranks_[r].valid()) continue;
        pfd.push_back({ranks_[r].fd(), POLLIN, 0});
        rankOfFd.push_back(r);
      }
      int n = ::poll(pfd.data(), pfd.size(), wake.pollTimeout());
      if (n < 0 && errno != EINTR) {
        WEFT_WARN("bootstrap root at %s: poll failed: %s; giving up", socketAddressToString(addr_).c_str(),
                  strerror(errno));
        giveUp();
        return;
      }
      if (n <= 0) continue;

      // Identified ranks must stay silent until the table comes; readable means they left (a rank
      // that timed out or was killed), so their slot opens again for a retry.
      size_t base = 1 + pending_.size();
      for (size_t i = 0; i < rankOfFd.size(); i++) {
        if (pfd[base + i].revents == 0) continue;
        int r = rankOfFd[i];
        char byte;
        ssize_t got = ranks_[r].tryRecv(&byte, 1);
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
        WEFT_INFO(kLogBootstrap, "bootstrap root at %s: rank %d left before the rendezvous completed",
                  socketAddressToString(addr_).c_str(), r);
        ranks_[r].close();
        arrived_--;
      }

      // Read the pending hellos; handle (and drop from the list) those that are complete or dead.
      std::deque<Pending> still;
      for (size_t i = 0; i < pending_.size(); i++) {
        Pending& p = pending_[i];
        if (pfd[1 + i].revents != 0) {
          char* dst = reinterpret_cast<char*>(&p.hello) + p.got;
          ssize_t got = p.sock.tryRecv(dst, sizeof(p.hello) - p.got);
          if (got > 0) {
            p.got += static_cast<size_t>(got);
          } else if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            if (got < 0 && errno == EPROTO)
              WEFT_WARN("bootstrap root at %s: %s", socketAddressToString(addr_).c_str(),
                        p.sock.errorText(EPROTO).c_str());
            continue;  // it went away before saying anything useful
          }
          if (p.got == sizeof(p.hello)) {
            handleHello(std::move(p));
            continue;
          }
        }
        still.push_back(std::move(p));
      }
      pending_ = std::move(still);

      if (pfd[0].revents != 0) acceptAll();

      if (nranks_ > 0 && arrived_ == nranks_) {
        complete();
        return;
      }
    }
  }

 private:
  void acceptAll() {
    for (;;) {
      SocketAddress peer = emptySocketAddress();
      socklen_t len = sizeof(peer);
      int fd = ::accept4(listener_.fd(), &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
        if ((errno == EMFILE || errno == ENFILE) && !pending_.empty()) {
          pending_.pop_front();  // a descriptor for the newcomer, taken from the oldest stranger
          continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          WEFT_WARN("bootstrap root at %s: accept failed: %s", socketAddressToString(addr_).c_str(), strerror(errno));
        return;
      }
      if (pending_.size() >= kMaxPending) {
        if (!floodWarned_)
          WEFT_WARN(
              "bootstrap root at %s: more than %zu connections have not said who they are; closing the "
              "oldest of them to make room",
              socketAddressToString(addr_).c_str(), kMaxPending);
        floodWarned_ = true;
        pending_.pop_front();
      }
      Pending p;
      p.sock = Socket(fd);
      std::string why;
      if (p.sock.startTls(TlsRole::kServer, socketAddressToString(peer), &why) != ncclSuccess) {
        WEFT_WARN("bootstrap root at %s: %s", socketAddressToString(addr_).c_str(), why.c_str());
        continue;
      }
      p.peer = peer;
      p.silentLimit = Deadline::afterMs(kSilentMs);
      memset(&p.hello, 0, sizeof(p.hello));
      pending_.push_back(std::move(p));
    }
  }

  void refuse(const Socket& s, RootCode code, const std::string& text) {
    RootReply reply;
    memset(&reply, 0, sizeof(reply));
    reply.magic = kMagic;
    reply.code = code;
    reply.nranks = nranks_;
    reply.textLen = static_cast<uint32_t>(text.size());
    Deadline d = Deadline::afterMs(kRefusalSendMs);
    if (s.sendAll(&reply, sizeof(reply), d, -1, nullptr) == IoStatus::kOk)
      (void)s.sendAll(text.data(), text.size(), d, -1, nullptr);
  }

  void handleHello(Pending p) {
    const RootHello& h = p.hello;
    const std::string from = socketAddressToString(p.peer);
    const std::string here = socketAddressToString(addr_);
    if (h.magic != kMagic || h.version != kProtocolVersion) {
      WEFT_WARN("bootstrap root at %s: refused a connection from %s that is not a Weft rank of protocol version %u%s",
                here.c_str(), from.c_str(), unsigned(kProtocolVersion), tlsPlaintextHint(&h, sizeof(h)).c_str());
      refuse(p.sock, kRootBadMagic,
             "the bootstrap root at " + here + " speaks Weft bootstrap protocol version " +
                 std::to_string(kProtocolVersion) + "; this rank does not (mixed Weft versions?)");
      return;
    }
    if (!secretEqual(h.secret, secret_)) {
      WEFT_WARN("bootstrap root at %s: refused rank %d from %s: its unique id's secret is not this root's",
                here.c_str(), h.rank, from.c_str());
      refuse(p.sock, kRootBadSecret,
             "the unique id's secret does not match this communicator's (root at " + here +
                 "); the id is stale or belongs to another communicator");
      return;
    }
    if (h.nranks < 1) {
      refuse(p.sock, kRootBadNranks, "nranks must be at least 1, this rank says " + std::to_string(h.nranks));
      return;
    }
    if (nranks_ < 0) {
      // The first rank fixes the communicator's size and the timeout, and the clock for the others
      // starts now.
      nranks_ = h.nranks;
      ranks_.resize(nranks_);
      table_.assign(nranks_, emptySocketAddress());
      timeoutMs_ = h.timeoutMs;
      deadline_ = Deadline::afterMs(timeoutMs_);
    }
    if (!failedText_.empty()) {
      refuse(p.sock, kRootNranksMismatch, failedText_);
      return;
    }
    if (h.nranks != nranks_) {
      // Which side is right cannot be known from arrival order, so the rendezvous fails for every
      // rank, now and until the deadline, with the same message naming both claims.
      failedText_ = "ranks disagree on nranks: rank " + std::to_string(h.rank) + " says " + std::to_string(h.nranks) +
                    " but the rank(s) that reached the root at " + here + " before it say " + std::to_string(nranks_);
      WEFT_WARN("bootstrap root: %s", failedText_.c_str());
      refuse(p.sock, kRootNranksMismatch, failedText_);
      for (int r = 0; r < nranks_; r++)
        if (ranks_[r].valid()) {
          refuse(ranks_[r], kRootNranksMismatch, failedText_);
          ranks_[r].close();
        }
      arrived_ = 0;
      return;
    }
    if (h.rank < 0 || h.rank >= nranks_) {
      refuse(p.sock, kRootRankOutOfRange,
             "rank " + std::to_string(h.rank) + " is out of range for nranks=" + std::to_string(nranks_));
      return;
    }
    if (ranks_[h.rank].valid()) {
      refuse(p.sock, kRootDuplicateRank,
             "rank " + std::to_string(h.rank) + " was claimed twice: by " + socketAddressToString(table_[h.rank]) +
                 " and by " + socketAddressToString(h.listen));
      return;
    }
    if (!socketAddressValid(h.listen)) {
      refuse(p.sock, kRootBadMagic, "rank " + std::to_string(h.rank) + " sent no usable listen address");
      return;
    }
    ranks_[h.rank] = std::move(p.sock);
    table_[h.rank] = h.listen;
    arrived_++;
  }

  void complete() {
    // Late or stray connections are refused by the kernel from now on rather than left hanging.
    listener_.close();
    pending_.clear();
    RootReply reply;
    memset(&reply, 0, sizeof(reply));
    reply.magic = kMagic;
    reply.code = kRootOk;
    reply.nranks = nranks_;
    reply.textLen = static_cast<uint32_t>(table_.size() * sizeof(SocketAddress));
    // A rank that died meanwhile just fails its send; its ring neighbours will report it.
    Deadline d = Deadline::afterMs(timeoutMs_);
    for (int r = 0; r < nranks_; r++) {
      if (ranks_[r].sendAll(&reply, sizeof(reply), d, -1, nullptr) == IoStatus::kOk)
        (void)ranks_[r].sendAll(table_.data(), reply.textLen, d, -1, nullptr);
      ranks_[r].close();
    }
    WEFT_INFO(kLogBootstrap, "bootstrap root at %s: all %d ranks arrived; table sent",
              socketAddressToString(addr_).c_str(), nranks_);
  }

  void giveUp() {
    listener_.close();
    pending_.clear();
    const std::string here = socketAddressToString(addr_);
    if (arrived_ <= 0) {
      WEFT_INFO(kLogBootstrap, "bootstrap root at %s: no rank arrived within %lld ms; exiting", here.c_str(),
                static_cast<long long>(timeoutMs_));
      return;
    }
    std::vector<int> missing;
    for (int r = 0; r < nranks_; r++)
      if (!ranks_[r].valid()) missing.push_back(r);
    std::string text = "only " + std::to_string(arrived_) + " of " + std::to_string(nranks_) +
                       " ranks reached the bootstrap root at " + here + " within " + std::to_string(timeoutMs_) +
                       " ms; missing rank" + (missing.size() == 1 ? " " : "s ") +
                       formatRankList(missing.data(), missing.size());
    WEFT_WARN("bootstrap root: %s", text.c_str());
    for (int r = 0; r < nranks_; r++)
      if (ranks_[r].valid()) refuse(ranks_[r], kRootTimeout, text);
    ranks_.clear();
  }

  Socket listener_;
  SocketAddress addr_;
  Secret secret_;
  int64_t timeoutMs_;
  int nranks_ = -1;
  std::string failedText_;  // set once ranks disagreed on nranks: every rank is refused with it
  int arrived_ = 0;
  Deadline deadline_;
  std::vector<Socket> ranks_;
  std::vector<SocketAddress> table_;
  std::deque<Pending> pending_;  // in accept order
  bool floodWarned_ = false;
};

}  // namespace

ncclResult_t startRoot(Socket listener, const SocketAddress& addr, const Secret& secret, int64_t timeoutMs,
                       std::string* why) {
  try {
    auto service = std::make_unique<RootService>(std::move(listener), addr, secret, timeoutMs);
    // Detached: the root outlives the call that made the id and ends on its own once the
    // rendezvous completes or times out; nothing in it touches state owned by anyone else.
    std::thread([svc = std::move(service)]() { svc->run(); }).detach();
  } catch (const std::exception& e) {
    *why = std::string("cannot start the bootstrap root thread: ") + e.what();
    return ncclSystemError;
  }
  return ncclSuccess;
}

}  // namespace weft::bootstrap
