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
#include "bootstrap/rendezvous.h"
#include "bootstrap/root.h"
#include "sockets/random.h"
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
  RootIntro intro;
  size_t introGot = 0;
  RootChallenge challenge;  // sent once the intro is complete and right
  RootHello hello;
  size_t got = 0;
  Deadline silentLimit;  // closed unheard after this
};

class RootService {
 public:
  RootService(Socket listener, const SocketAddress& addr, const Secret& secret, int64_t timeoutMs)
      : listener_(std::move(listener)), addr_(addr), rdv_(secret, socketAddressToString(addr)), timeoutMs_(timeoutMs) {}

  void run() {
    const Deadline idle = Deadline::afterMs(timeoutMs_);
    for (;;) {
      const Deadline& limit = rdv_.started() ? deadline_ : idle;
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
        rdv_.leave(r);
      }

      // Read the pending hellos; handle (and drop from the list) those that are complete or dead.
      std::deque<Pending> still;
      for (size_t i = 0; i < pending_.size(); i++) {
        Pending& p = pending_[i];
        if (pfd[1 + i].revents != 0) {
          const bool intro = p.introGot < sizeof(p.intro);
          char* dst = intro ? reinterpret_cast<char*>(&p.intro) + p.introGot
                            : reinterpret_cast<char*>(&p.hello) + p.got;
          ssize_t got = p.sock.tryRecv(dst, intro ? sizeof(p.intro) - p.introGot : sizeof(p.hello) - p.got);
          if (got > 0) {
            (intro ? p.introGot : p.got) += static_cast<size_t>(got);
            if (intro && p.introGot == sizeof(p.intro) && !challenge(p)) continue;
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

      if (rdv_.complete()) {
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
      memset(&p.intro, 0, sizeof(p.intro));
      pending_.push_back(std::move(p));
    }
  }

  // A complete intro: a Weft rank of this version gets its challenge; anything else a refusal.
  // False when the connection is finished with.
  bool challenge(Pending& p) {
    const std::string here = socketAddressToString(addr_);
    if (p.intro.magic != kMagic || p.intro.version != kProtocolVersion) {
      WEFT_WARN("bootstrap root at %s: refused a connection from %s that is not a Weft rank of protocol version %u%s",
                here.c_str(), socketAddressToString(p.peer).c_str(), unsigned(kProtocolVersion),
                tlsPlaintextHint(&p.intro, sizeof(p.intro)).c_str());
      refuse(p.sock, kRootBadMagic,
             "the bootstrap root at " + here + " speaks Weft bootstrap protocol version " +
                 std::to_string(kProtocolVersion) + "; this rank does not (mixed Weft versions?)");
      return false;
    }
    memset(&p.challenge, 0, sizeof(p.challenge));
    p.challenge.magic = kMagic;
    p.challenge.version = kProtocolVersion;
    // The socket's send buffer is empty, so these 24 bytes go out at once (under TLS, once the
    // handshake is done) or never, when the client has already left: the bound never holds the loop.
    return randomBytes(p.challenge.nonce, sizeof(p.challenge.nonce)) &&
           p.sock.sendAll(&p.challenge, sizeof(p.challenge), Deadline::afterMs(kRefusalSendMs), -1, nullptr) ==
               IoStatus::kOk;
  }

  void refuse(const Socket& s, RootCode code, const std::string& text) {
    RootReply reply;
    memset(&reply, 0, sizeof(reply));
    reply.magic = kMagic;
    reply.code = code;
    reply.nranks = rdv_.nranks();
    reply.textLen = static_cast<uint32_t>(text.size());
    Deadline d = Deadline::afterMs(kRefusalSendMs);
    if (s.sendAll(&reply, sizeof(reply), d, -1, nullptr) == IoStatus::kOk)
      (void)s.sendAll(text.data(), text.size(), d, -1, nullptr);
  }

  void handleHello(Pending p) {
    const bool wasStarted = rdv_.started();
    Rendezvous::Verdict v = rdv_.admit(p.hello, p.challenge, socketAddressToString(p.peer));
    // Plaintext bytes where TLS was expected (or the reverse) look like a bad magic: say so.
    const std::string hint = v.code == kRootBadMagic ? tlsPlaintextHint(&p.hello, sizeof(p.hello)) : "";
    if (!v.warn.empty())
      WEFT_WARN("bootstrap root at %s: %s%s", socketAddressToString(addr_).c_str(), v.warn.c_str(), hint.c_str());
    if (!wasStarted && rdv_.started()) {
      // The first rank fixed the communicator's size and the timeout; the clock for the others
      // starts now.
      ranks_.resize(rdv_.nranks());
      timeoutMs_ = rdv_.timeoutMs();
      deadline_ = Deadline::afterMs(timeoutMs_);
    }
    switch (v.action) {
      case Rendezvous::Action::kAdmit: ranks_[p.hello.rank] = std::move(p.sock); return;
      case Rendezvous::Action::kRefuse: refuse(p.sock, v.code, v.text); return;
      case Rendezvous::Action::kFailAll:
        refuse(p.sock, v.code, v.text);
        for (Socket& s : ranks_)
          if (s.valid()) {
            refuse(s, v.code, v.text);
            s.close();
          }
        return;
    }
  }

  void complete() {
    // Late or stray connections are refused by the kernel from now on rather than left hanging.
    listener_.close();
    pending_.clear();
    RootReply reply;
    memset(&reply, 0, sizeof(reply));
    reply.magic = kMagic;
    reply.code = kRootOk;
    reply.nranks = rdv_.nranks();
    reply.textLen = static_cast<uint32_t>(rdv_.table().size() * sizeof(SocketAddress));
    // A rank that died meanwhile just fails its send; its ring neighbours will report it.
    Deadline d = Deadline::afterMs(timeoutMs_);
    for (int r = 0; r < rdv_.nranks(); r++) {
      if (ranks_[r].sendAll(&reply, sizeof(reply), d, -1, nullptr) == IoStatus::kOk)
        (void)ranks_[r].sendAll(rdv_.table().data(), reply.textLen, d, -1, nullptr);
      ranks_[r].close();
    }
    WEFT_INFO(kLogBootstrap, "bootstrap root at %s: all %d ranks arrived; table sent",
              socketAddressToString(addr_).c_str(), rdv_.nranks());
  }

  void giveUp() {
    listener_.close();
    pending_.clear();
    const std::string here = socketAddressToString(addr_);
    if (rdv_.arrived() <= 0) {
      WEFT_INFO(kLogBootstrap, "bootstrap root at %s: no rank arrived within %lld ms; exiting", here.c_str(),
                static_cast<long long>(timeoutMs_));
      return;
    }
    std::vector<int> missing = rdv_.missing();
    std::string text = "only " + std::to_string(rdv_.arrived()) + " of " + std::to_string(rdv_.nranks()) +
                       " ranks reached the bootstrap root at " + here + " within " + std::to_string(timeoutMs_) +
                       " ms; missing rank" + (missing.size() == 1 ? " " : "s ") +
                       formatRankList(missing.data(), missing.size());
    WEFT_WARN("bootstrap root: %s", text.c_str());
    for (Socket& s : ranks_)
      if (s.valid()) refuse(s, kRootTimeout, text);
    ranks_.clear();
  }

  Socket listener_;
  SocketAddress addr_;
  Rendezvous rdv_;  // who has arrived, and the verdict on each hello
  int64_t timeoutMs_;
  Deadline deadline_;
  std::vector<Socket> ranks_;    // rank r's connection while rdv_ holds its slot
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
