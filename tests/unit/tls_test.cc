// TLS over Weft's sockets, with real sockets and threads: the Socket network's bytes on the wire
// (read through a relay this test controls), the bootstrap under TLS, handshakes that must fail
// clearly (another key, a plaintext peer on either side) and ncclSetEncryption's argument checks.
// A socket takes the process's setting when it is made, so one process can play both sides of a
// disagreement by changing the setting between the connect and the accept.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"
#include "nccl.h"
#include "net_test_util.h"
#include "sockets/socket.h"
#include "sockets/tls.h"
#include "transports/net/plugin/adapter.h"
#include "transports/net/socket/socket_net.h"

namespace {

using weft::Deadline;
using weft::IoStatus;
using weft::Socket;
using weft::SocketAddress;
using Clock = std::chrono::steady_clock;

const char kKeyA[] = "weft-tls-unit-test-key-A-0123456789abcdef";
const char kKeyB[] = "weft-tls-unit-test-key-B-0123456789abcdef";
const char kPattern[] = "WEFT-KNOWN-PLAINTEXT-PATTERN-";

void setKey(const char* key) {
  std::string why;
  ASSERT_EQ(weft::tlsSetKey(key, &why), ncclSuccess) << why;
}

class TlsTest : public ::testing::Test {
 protected:
  void TearDown() override { setKey(nullptr); }
};

SocketAddress loopback(uint16_t port) {
  SocketAddress a = weft::emptySocketAddress();
  a.v4.sin_family = AF_INET;
  a.v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.v4.sin_port = htons(port);
  return a;
}

// A TCP relay on loopback: every connection it accepts is joined to `target` and the bytes are
// passed on both ways and kept. It uses plain descriptors, never weft::Socket, so it sees exactly
// what travels on the wire.
class Relay {
 public:
  explicit Relay(const SocketAddress& target) : target_(target) {
    listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    SocketAddress a = loopback(0);
    EXPECT_EQ(::bind(listenFd_, &a.sa, sizeof(a.v4)), 0);
    EXPECT_EQ(::listen(listenFd_, 64), 0);
    socklen_t len = sizeof(addr_);
    addr_ = weft::emptySocketAddress();
    EXPECT_EQ(getsockname(listenFd_, &addr_.sa, &len), 0);
    thread_ = std::thread([this] { run(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_) ::close(fd);
    ::close(listenFd_);
  }
  SocketAddress address() const { return addr_; }
  std::string captured() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  void run() {
    while (!stop_) {
      std::vector<pollfd> p{{listenFd_, POLLIN, 0}};
      for (int fd : fds_) p.push_back({fd, POLLIN, 0});
      if (::poll(p.data(), p.size(), 20) <= 0) continue;
      if (p[0].revents & POLLIN) {
        int in = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
        int out = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (in >= 0 && out >= 0 && ::connect(out, &target_.sa, sizeof(target_.v4)) == 0) {
          fds_.push_back(in);
          fds_.push_back(out);  // pairs: fds_[2k] <-> fds_[2k+1]
        }
        continue;
      }
      for (size_t i = 0; i < fds_.size(); ++i) {
        if (!(p[i + 1].revents & (POLLIN | POLLHUP))) continue;
        char buf[65536];
        ssize_t n = ::recv(fds_[i], buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0) continue;
        {
          std::lock_guard<std::mutex> lock(mu_);
          seen_.append(buf, static_cast<size_t>(n));
        }
        (void)::send(fds_[i ^ 1], buf, static_cast<size_t>(n), MSG_NOSIGNAL);
      }
    }
  }

  SocketAddress target_;
  SocketAddress addr_;
  int listenFd_ = -1;
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string seen_;
  std::thread thread_;
};

// Sends `out` over the pair's send side and checks that it arrives intact.
::testing::AssertionResult sendOne(weft::net::Network* n, const weft::nettest::Pair& p, const std::string& out) {
  std::string in(out.size(), '\0');
  void* sreq = nullptr;
  void* rreq = nullptr;
  bool sdone = false, rdone = false;
  auto start = Clock::now();
  while (!sdone || !rdone) {
    if (!sreq && n->isend(p.send, const_cast<char*>(out.data()), out.size(), 0, nullptr, &sreq) != ncclSuccess)
      return ::testing::AssertionFailure() << "isend failed";
    if (!rreq && n->irecv(p.recv, in.data(), in.size(), 0, nullptr, &rreq) != ncclSuccess)
      return ::testing::AssertionFailure() << "irecv failed";
    int done = 0;
    size_t size = 0;
    if (sreq && !sdone) {
      if (n->test(sreq, &done, &size) != ncclSuccess) return ::testing::AssertionFailure() << "send test failed";
      sdone = done != 0;
    }
    if (rreq && !rdone) {
      if (n->test(rreq, &done, &size) != ncclSuccess) return ::testing::AssertionFailure() << "recv test failed";
      rdone = done != 0;
    }
    if (Clock::now() - start > std::chrono::seconds(30)) return ::testing::AssertionFailure() << "no transfer in 30 s";
  }
  if (in != out) return ::testing::AssertionFailure() << "the message arrived corrupted";
  return ::testing::AssertionSuccess();
}

// One message with the pattern inline on the control socket and one large enough for the data
// sockets, through the relay; returns what the relay saw.
std::string sendThroughRelay() {
  weft::nettest::ScopedEnv env;
  env.set("NCCL_SOCKET_IFNAME", "lo");
  env.set("NCCL_SOCKET_NTHREADS", "1");
  env.set("NCCL_NSOCKS_PERTHREAD", "2");
  std::string why;
  auto net = weft::net::adaptPlugin(12, weft::net::socketnet::socketNetTable(), "built-in", &why);
  EXPECT_NE(net, nullptr) << why;
  if (!net) return "";
  weft::nettest::Pair p;
  char handle[weft::net::kHandleBytes] = {};
  EXPECT_EQ(net->listen(0, handle, &p.listen), ncclSuccess);
  SocketAddress target;
  memcpy(&target, handle + sizeof(uint64_t), sizeof(target));  // the handle: magic, then the address
  Relay relay(target);
  weft::net::socketnet::makeSocketHandle(relay.address(), handle);
  auto start = Clock::now();
  while (!p.send || !p.recv) {
    if (!p.send) EXPECT_EQ(net->connect(0, handle, &p.send), ncclSuccess);
    if (!p.recv) EXPECT_EQ(net->accept(p.listen, &p.recv), ncclSuccess);
    if (Clock::now() - start > std::chrono::seconds(20)) {
      ADD_FAILURE() << "no connection through the relay in 20 s";
      return "";
    }
  }
  std::string small, large;
  while (small.size() < 200) small += kPattern;
  while (large.size() < (4u << 20)) large += kPattern;
  EXPECT_TRUE(sendOne(net.get(), p, small));
  EXPECT_TRUE(sendOne(net.get(), p, large));
  weft::nettest::closePair(net.get(), &p);
  return relay.captured();
}

TEST_F(TlsTest, SocketNetworkBytesOnTheWireAreNotPlaintext) {
  // The control run shows that the relay does see what travels: in plaintext the pattern is there.
  setKey(nullptr);
  std::string plain = sendThroughRelay();
  EXPECT_NE(plain.find(kPattern), std::string::npos) << "the relay saw " << plain.size() << " bytes";
  setKey(kKeyA);
  std::string wire = sendThroughRelay();
  EXPECT_GT(wire.size(), 4u << 20) << "the encrypted messages did not pass the relay";
  EXPECT_EQ(wire.find(kPattern), std::string::npos) << "plaintext on the wire under TLS";
  EXPECT_EQ(wire.find("WEFT-KNOWN"), std::string::npos);
}

TEST_F(TlsTest, BootstrapRingRootAndMessagesWorkUnderTls) {
  setKey(kKeyA);
  ncclUniqueId id;
  ASSERT_EQ(weft::bootstrapGetUniqueId(&id), ncclSuccess);
  const int n = 4;
  std::vector<std::unique_ptr<weft::Bootstrap>> bs(n);
  std::vector<std::string> whys(n);
  std::vector<ncclResult_t> rcs(n, ncclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      rcs[r] = weft::Bootstrap::create(id, r, n, 20000, &bs[r], &whys[r]);
      if (rcs[r] != ncclSuccess) return;
      std::vector<int> all(n, -1);
      all[r] = r * 10;
      rcs[r] = bs[r]->allGather(all.data(), sizeof(int), &whys[r]);
      for (int i = 0; rcs[r] == ncclSuccess && i < n; ++i)
        if (all[i] != i * 10) rcs[r] = ncclInternalError, whys[r] = "allgather gave wrong data";
      // A point-to-point message around the ring: connect, send and close, like the transport's
      // handle exchange.
      int token = 100 + r, got = -1;
      bool have = false;
      if (rcs[r] == ncclSuccess) rcs[r] = bs[r]->send((r + 1) % n, 7, &token, sizeof(token), &whys[r]);
      auto start = Clock::now();
      while (rcs[r] == ncclSuccess && !have && Clock::now() - start < std::chrono::seconds(20))
        rcs[r] = bs[r]->tryRecv((r + n - 1) % n, 7, &got, sizeof(got), &have, &whys[r]);
      if (rcs[r] == ncclSuccess && (!have || got != 100 + (r + n - 1) % n))
        rcs[r] = ncclInternalError, whys[r] = "the point-to-point message did not arrive intact";
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(rcs[r], ncclSuccess) << "rank " << r << ": " << whys[r];
}

// A handle sent in a short attempt (sendWithin, as the network transport's handshake does) to a
// peer that answers the TLS handshake only much later, when it next looks at its inbox: the call
// reports the message sent, so it must arrive then. (It used to be dropped when the attempt's
// bound ran out before the handshake.)
TEST_F(TlsTest, AShortSendReportedSentArrivesWhenThePeerLooksLater) {
  setKey(kKeyA);
  ncclUniqueId id;
  ASSERT_EQ(weft::bootstrapGetUniqueId(&id), ncclSuccess);
  std::vector<std::unique_ptr<weft::Bootstrap>> bs(2);
  std::vector<std::string> whys(2);
  std::vector<ncclResult_t> rcs(2, ncclInternalError);
  std::atomic<bool> sent{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      rcs[r] = weft::Bootstrap::create(id, r, 2, 20000, &bs[r], &whys[r]);
      if (rcs[r] == ncclSuccess) rcs[r] = bs[r]->barrier(&whys[r]);
      if (rcs[r] != ncclSuccess) return;
      if (r == 1) {
        const int handle = 4242;
        rcs[r] = bs[r]->sendWithin(0, 9, &handle, sizeof handle, 10, &whys[r]);
        sent = true;
        return;
      }
      while (!sent) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // long past the 10 ms bound
      int got = -1;
      bool have = false;
      auto start = Clock::now();
      while (rcs[r] == ncclSuccess && !have && Clock::now() - start < std::chrono::seconds(10)) {
        rcs[r] = bs[r]->tryRecv(1, 9, &got, sizeof got, &have, &whys[r]);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (rcs[r] == ncclSuccess && (!have || got != 4242))
        rcs[r] = ncclInternalError, whys[r] = "the message reported sent never arrived";
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) EXPECT_EQ(rcs[r], ncclSuccess) << "rank " << r << ": " << whys[r];
}

// A listener on loopback and one connection to it, made with the setting in force at each step.
struct Link {
  Socket listener, client, server;
  SocketAddress addr;
};

void connectClient(Link* l) {
  std::string why;
  ASSERT_EQ(Socket::listen(loopback(0), false, &l->listener, &l->addr, &why), ncclSuccess) << why;
  ASSERT_EQ(Socket::connect(l->addr, Deadline::afterMs(5000), -1, &l->client, &why), IoStatus::kOk) << why;
}

void acceptServer(Link* l) {
  std::string why;
  ASSERT_EQ(l->listener.accept(Deadline::afterMs(5000), -1, &l->server, nullptr, &why), IoStatus::kOk) << why;
}

// The server reads a hello and closes; the client waits for an answer. Both must fail, fast, and
// the client's message must name the server's address.
void expectBothFail(Link* l, const char* clientWords, const char* serverWords) {
  std::string serverWhy;
  IoStatus serverSt = IoStatus::kOk;
  auto start = Clock::now();
  std::thread server([&] {
    char buf[64];
    serverSt = l->server.recvAll(buf, sizeof(buf), Deadline::afterMs(8000), -1, &serverWhy);
    l->server.close();
  });
  std::string why;
  char hello[64] = "hello";
  IoStatus st = l->client.sendAll(hello, sizeof(hello), Deadline::afterMs(8000), -1, &why);
  if (st == IoStatus::kOk) st = l->client.recvAll(hello, sizeof(hello), Deadline::afterMs(8000), -1, &why);
  server.join();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(st, IoStatus::kError) << why;
  EXPECT_NE(why.find(clientWords), std::string::npos) << why;
  EXPECT_NE(serverSt, IoStatus::kOk);
  EXPECT_NE(serverWhy.find(serverWords), std::string::npos) << serverWhy;
  EXPECT_LT(seconds, 5.0) << "a failed handshake must not wait for the deadline";
  std::printf("client: %s\nserver: %s\n", why.c_str(), serverWhy.c_str());
}

TEST_F(TlsTest, AnotherKeyFailsTheHandshakeOnBothSides) {
  Link l;
  setKey(kKeyA);
  connectClient(&l);
  setKey(kKeyB);
  acceptServer(&l);
  expectBothFail(&l, ("TLS handshake with " + weft::socketAddressToString(l.addr)).c_str(), "TLS handshake with");
}

TEST_F(TlsTest, PlaintextClientOfATlsServerFailsClearly) {
  Link l;
  setKey(nullptr);
  connectClient(&l);
  setKey(kKeyA);
  acceptServer(&l);
  std::string serverWhy;
  char buf[64];
  // The plaintext hello is no TLS record: the server refuses it at once.
  std::string why;
  char hello[64] = "hello";
  ASSERT_EQ(l.client.sendAll(hello, sizeof(hello), Deadline::afterMs(5000), -1, &why), IoStatus::kOk) << why;
  EXPECT_EQ(l.server.recvAll(buf, sizeof(buf), Deadline::afterMs(5000), -1, &serverWhy), IoStatus::kError);
  EXPECT_NE(serverWhy.find("TLS handshake with"), std::string::npos) << serverWhy;
  EXPECT_NE(serverWhy.find("same key"), std::string::npos) << serverWhy;
  // The server's alert tells the plaintext client what is wrong.
  l.server.close();
  IoStatus st = l.client.recvAll(buf, sizeof(buf), Deadline::afterMs(5000), -1, &why);
  EXPECT_EQ(st, IoStatus::kError);
  EXPECT_NE(why.find("the peer sent TLS: it has encryption on, this process has it off"), std::string::npos) << why;
}

TEST_F(TlsTest, TlsClientOfAPlaintextServerFailsClearly) {
  Link l;
  setKey(kKeyA);
  connectClient(&l);
  setKey(nullptr);
  acceptServer(&l);
  std::string why;
  char buf[64];
  // The plaintext server reads the ClientHello as its peer's hello (a TLS record: 0x16, 3, ...).
  ASSERT_EQ(l.server.recvAll(buf, 5, Deadline::afterMs(5000), -1, &why), IoStatus::kOk) << why;
  EXPECT_EQ(buf[0], 0x16);
  EXPECT_NE(weft::tlsPlaintextHint(buf, 5), "");
  EXPECT_EQ(weft::tlsPlaintextHint("WeftHelo", 8), "");
  l.server.close();
  IoStatus st = l.client.recvAll(buf, sizeof(buf), Deadline::afterMs(5000), -1, &why);
  // The server closed (or reset) the connection in the middle of the handshake: a TLS failure that
  // names the server, not a peer that is merely gone (which the bootstrap would retry).
  EXPECT_EQ(st, IoStatus::kError);
  EXPECT_NE(why.find("TLS handshake with " + weft::socketAddressToString(l.addr) + " (this side connected) failed"),
            std::string::npos)
      << why;
}

TEST_F(TlsTest, SetEncryptionChecksItsArguments) {
  ncclEncryptionConfig_t c = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  EXPECT_EQ(c.size, sizeof(ncclEncryptionConfig_t));
  EXPECT_EQ(c.mode, NCCL_ENCRYPTION_MODE_NONE);
  EXPECT_EQ(ncclSetEncryption(&c), ncclSuccess);
  EXPECT_FALSE(weft::tlsEnabled());

  ncclEncryptionConfig_t raw;
  memset(&raw, 0, sizeof(raw));
  EXPECT_EQ(ncclSetEncryption(&raw), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("NCCL_ENCRYPTION_CONFIG_INITIALIZER"), std::string::npos);

  c.mode = 7;
  EXPECT_EQ(ncclSetEncryption(&c), ncclInvalidArgument);
  c.mode = NCCL_ENCRYPTION_MODE_PSK;
  c.psk = nullptr;
  EXPECT_EQ(ncclSetEncryption(&c), ncclInvalidArgument);
  c.psk = "too short";
  EXPECT_EQ(ncclSetEncryption(&c), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("at least 32"), std::string::npos);
  EXPECT_FALSE(weft::tlsEnabled());

  c.psk = kKeyA;
  ASSERT_EQ(ncclSetEncryption(&c), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_TRUE(weft::tlsEnabled());
  EXPECT_EQ(ncclSetEncryption(nullptr), ncclSuccess);
  EXPECT_FALSE(weft::tlsEnabled());
}

}  // namespace

// The bootstrap's first exchange: the client queues its message before the handshake is done
// (Socket::sendAll hands it to the flusher), then waits for the answer, which the server sends
// only once that message has arrived. Whichever receive call completes the handshake must send
// what is queued before it returns: a call that completed it and found nothing to read left the
// message queued while its caller went to poll() for an answer that could never come (a joiner
// that timed out at a bootstrap root that never saw its intro, about once in 200 TLS jobs under
// load). Here the client spins on receive calls while the server's flight arrives, so that in
// many rounds the handshake completes part-way through one call; after every call the queue must
// be empty once the handshake is done (16 bytes always fit the socket's buffer).
TEST_F(TlsTest, AReceiveThatCompletesTheHandshakeSendsWhatWasQueued) {
  setKey(kKeyA);
  std::shared_ptr<weft::TlsContext> ctx;
  std::string why;
  ASSERT_EQ(weft::tlsCurrent(&ctx, &why), ncclSuccess) << why;
  const int kRounds = 40;  // about half the rounds hit it without the fix
  int stuck = 0;
  for (int i = 0; i < kRounds; ++i) {
    Socket listener, server;
    SocketAddress addr;
    ASSERT_EQ(Socket::listen(loopback(0), false, &listener, &addr, &why), ncclSuccess) << why;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(::connect(fd, &addr.sa, sizeof(addr.v4)), 0);
    ASSERT_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    ASSERT_EQ(listener.accept(Deadline::afterMs(5000), -1, &server, nullptr, &why), IoStatus::kOk) << why;
    std::shared_ptr<weft::TlsLink> link;
    ASSERT_EQ(weft::TlsLink::create(ctx, fd, weft::TlsRole::kClient, "the test's server", &link, &why), ncclSuccess)
        << why;
    char intro[16] = "intro";
    {
      std::lock_guard<std::mutex> lock(link->mutex());
      ASSERT_EQ(link->sendLocked(nullptr, 0), -1);  // the ClientHello; the answer has not come
      link->queueLocked(intro, sizeof(intro), Deadline::afterMs(2000));
    }
    std::thread serverThread([&] {
      char got[16];
      std::string serverWhy;
      if (server.recvAll(got, sizeof(got), Deadline::afterMs(2000), -1, &serverWhy) == IoStatus::kOk)
        (void)server.sendAll(got, sizeof(got), Deadline::afterMs(2000), -1, &serverWhy);
    });
    char answer[16] = {};
    size_t got = 0;
    bool stuckThisRound = false;
    const auto until = Clock::now() + std::chrono::seconds(2);
    // No ASSERT from here on: the server thread must be joined however the round ends.
    while (got < sizeof(answer) && Clock::now() < until) {
      std::lock_guard<std::mutex> lock(link->mutex());
      ssize_t n = link->recvLocked(answer + got, sizeof(answer) - got);
      if (n > 0) got += static_cast<size_t>(n);
      if (n <= 0 && errno != EAGAIN) {
        ADD_FAILURE() << "round " << i << ": " << link->error();
        break;
      }
      if (link->handshakeDone() && link->queuedLocked() && !stuckThisRound) {
        stuckThisRound = true;
        ++stuck;
        // Send it now, so that the server's wait ends and the round finishes like the others.
        EXPECT_TRUE(link->flushLocked()) << link->error();
      }
    }
    serverThread.join();
    EXPECT_STREQ(answer, "intro") << "round " << i;
    link.reset();
    ::close(fd);
  }
  EXPECT_EQ(stuck, 0) << "in " << stuck << " of " << kRounds
                      << " rounds a receive completed the handshake and left the queued message unsent";
}
