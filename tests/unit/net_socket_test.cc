// The built-in Socket network over real loopback TCP, reached through the same adapter as
// external plugins: message sizes, several helper threads and sockets, many outstanding
// requests, a peer that goes away, unreachable peers, and interface selection.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sockets/interfaces.h"
#include "sockets/socket.h"
#include "tests/unit/net_test_util.h"
#include "transports/net/plugin/adapter.h"
#include "transports/net/socket/socket_comm.h"
#include "transports/net/socket/socket_handle.h"
#include "transports/net/socket/socket_net.h"

namespace {

using weft::net::Network;
using weft::nettest::Pair;
using weft::nettest::ScopedEnv;

constexpr size_t kMiB = 1 << 20;

std::unique_ptr<Network> socketNetwork() {
  std::string why;
  auto n = weft::net::adaptPlugin(12, weft::net::socketnet::socketNetTable(), "built-in", &why);
  EXPECT_NE(n, nullptr) << why;
  return n;
}

class SocketNetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.set("NCCL_SOCKET_IFNAME", "lo");
    env_.unset("NCCL_SOCKET_FAMILY");
    env_.unset("NCCL_SOCKET_NTHREADS");
    env_.unset("NCCL_NSOCKS_PERTHREAD");
    // Both paths in one stream: at 256 KiB, the 1 MiB and larger messages below go over the
    // helper threads' data sockets and the rest inline on the control socket (the default
    // carries Weft's own messages inline).
    env_.set("WEFT_SOCKET_INLINE_BYTES", "262144");
  }
  std::unique_ptr<Network> open(int threads, int socks) {
    env_.set("NCCL_SOCKET_NTHREADS", std::to_string(threads));
    env_.set("NCCL_NSOCKS_PERTHREAD", std::to_string(socks));
    return socketNetwork();  // init re-reads the parameters
  }
  ScopedEnv env_;
};

TEST_F(SocketNetTest, AllSizesWithSeveralThreadsAndSockets) {
  const std::vector<size_t> sizes = {0, 1, 48, 4096, kMiB, 64 * kMiB, 16 * 1024, 16 * 1024 + 1, 200 * 1024 + 3};
  for (auto [threads, socks] : {std::pair{1, 1}, std::pair{2, 2}, std::pair{4, 4}, std::pair{16, 4}}) {
    SCOPED_TRACE("threads " + std::to_string(threads) + " x sockets " + std::to_string(socks));
    auto net = open(threads, socks);
    ASSERT_NE(net, nullptr);
    EXPECT_STREQ(net->name(), "Socket");
    EXPECT_EQ(net->abiVersion(), 12);
    Pair p;
    ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
    for (size_t s : sizes) EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {s})) << s << " bytes";
    // A receive larger than the message reports the size that was sent.
    EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {5, 100000}, 4096));
    weft::nettest::closePair(net.get(), &p);
  }
}

TEST_F(SocketNetTest, ManyOutstandingRequests) {
  auto net = open(2, 2);
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<size_t> sizes;
  for (int i = 0; i < 100; ++i) sizes.push_back(i % 4 == 0 ? kMiB : (i % 4 == 1 ? 128 * 1024 : size_t(i) * 37));
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, sizes));

  // The network takes 32 requests per connection; the 33rd is "not now", not an error.
  std::vector<char> buf(64);
  std::vector<void*> reqs;
  for (int i = 0; i < 32; ++i) {
    void* r = nullptr;
    ASSERT_EQ(net->isend(p.send, buf.data(), buf.size(), 0, nullptr, &r), ncclSuccess);
    ASSERT_NE(r, nullptr) << i;
    reqs.push_back(r);
  }
  void* extra = reinterpret_cast<void*>(1);
  EXPECT_EQ(net->isend(p.send, buf.data(), buf.size(), 0, nullptr, &extra), ncclSuccess);
  EXPECT_EQ(extra, nullptr);
  std::vector<char> in(64);
  for (int i = 0; i < 32; ++i) {
    void* rr = nullptr;
    ASSERT_EQ(net->irecv(p.recv, in.data(), in.size(), 0, nullptr, &rr), ncclSuccess);
    ASSERT_NE(rr, nullptr);
    int done = 0, sdone = 0;
    size_t size = 0;
    auto start = weft::nettest::Clock::now();
    while (!done || !sdone) {
      if (!done) ASSERT_EQ(net->test(rr, &done, &size), ncclSuccess);
      if (!sdone) ASSERT_EQ(net->test(reqs[i], &sdone, &size), ncclSuccess);
      ASSERT_FALSE(weft::nettest::pastSeconds(start, 20));
    }
  }
  weft::nettest::closePair(net.get(), &p);
}

using weft::nettest::waitForFailure;

TEST_F(SocketNetTest, SenderGoesAwayMidTransfer) {
  auto net = open(2, 2);
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<char> out(64 * kMiB, 'x'), in(64 * kMiB);
  void* sreq = nullptr;
  void* rreq = nullptr;
  ASSERT_EQ(net->isend(p.send, out.data(), out.size(), 0, nullptr, &sreq), ncclSuccess);
  int done = 0;
  size_t size = 0;
  ASSERT_EQ(net->test(sreq, &done, &size), ncclSuccess);  // the size header and the first chunks go
  // Nobody receives yet, so the socket buffers (a few MiB) stop the sender well short of 64 MiB,
  // however fast the machine: it goes away with most of the message unsent. (With the receive
  // posted first, a fast loopback could finish the transfer before the close.)
  ASSERT_EQ(net->closeSend(p.send), ncclSuccess);
  p.send = nullptr;
  ncclResult_t r = net->irecv(p.recv, in.data(), in.size(), 0, nullptr, &rreq);
  if (r == ncclSuccess) {
    ASSERT_NE(rreq, nullptr);
    r = waitForFailure(net.get(), rreq, 20);
  }
  EXPECT_TRUE(r == ncclRemoteError || r == ncclSystemError) << r;
  // The connection stays failed: later receives are refused at once.
  void* again = nullptr;
  EXPECT_NE(net->irecv(p.recv, in.data(), in.size(), 0, nullptr, &again), ncclSuccess);
  weft::nettest::closePair(net.get(), &p);
}

TEST_F(SocketNetTest, ReceiverGoesAwayMidTransfer) {
  auto net = open(1, 2);
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<char> out(64 * kMiB, 'y');
  void* sreq = nullptr;
  ASSERT_EQ(net->isend(p.send, out.data(), out.size(), 0, nullptr, &sreq), ncclSuccess);
  ASSERT_EQ(net->closeRecv(p.recv), ncclSuccess);  // 64 MiB cannot all sit in kernel buffers
  p.recv = nullptr;
  ncclResult_t r = waitForFailure(net.get(), sreq, 20);
  EXPECT_TRUE(r == ncclRemoteError || r == ncclSystemError) << r;
  weft::nettest::closePair(net.get(), &p);
}

TEST_F(SocketNetTest, MessageLargerThanTheReceiveFails) {
  auto net = open(1, 1);
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<char> out(1000), in(10);
  void* sreq = nullptr;
  void* rreq = nullptr;
  ASSERT_EQ(net->isend(p.send, out.data(), out.size(), 0, nullptr, &sreq), ncclSuccess);
  ASSERT_EQ(net->irecv(p.recv, in.data(), in.size(), 0, nullptr, &rreq), ncclSuccess);
  EXPECT_EQ(waitForFailure(net.get(), rreq, 20), ncclInvalidUsage);
  weft::nettest::closePair(net.get(), &p);
}

// TCP_QUICKACK as getsockopt reports it on a receiving comm's control socket: 1 while the kernel
// acknowledges each segment at once, 0 while it delays ACKs.
int quickAck(void* recvComm) {
  int v = -1;
  socklen_t len = sizeof(v);
  int fd = static_cast<weft::net::socketnet::Comm*>(recvComm)->controlFd();
  EXPECT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &v, &len), 0);
  return v;
}

// Small messages let the kernel delay its ACKs (one pure ACK per message cost a sixth of a
// loopback one-way exchange); a large inline payload gets immediate ACKs back, and the delayed mode,
// which the kernel leaves when its delayed-ACK timer fires, is set again every kRearmAcks messages.
TEST_F(SocketNetTest, SmallMessagesDelayAcksLargeOnesDoNot) {
  using weft::net::socketnet::kRearmAcks;
  auto net = open(1, 1);
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  EXPECT_EQ(quickAck(p.recv), 1);  // a one-way connection: the kernel's default
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {48, 8}));
  EXPECT_EQ(quickAck(p.recv), 0);
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {64 * 1024}));  // inline: on the control socket
  EXPECT_EQ(quickAck(p.recv), 1);
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {8}));
  EXPECT_EQ(quickAck(p.recv), 0);
  // As if the kernel had left delayed mode: the comm sets it again after kRearmAcks messages.
  int one = 1;
  auto* comm = static_cast<weft::net::socketnet::Comm*>(p.recv);
  ASSERT_EQ(setsockopt(comm->controlFd(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one)), 0);
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, std::vector<size_t>(kRearmAcks - 1, 8)));
  EXPECT_EQ(quickAck(p.recv), 1);
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {8}));
  EXPECT_EQ(quickAck(p.recv), 0);
  weft::nettest::closePair(net.get(), &p);

  env_.set("WEFT_SOCKET_DELAYED_ACKS", "0");
  net = open(1, 1);
  ASSERT_NE(net, nullptr);
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {48, 8}));
  EXPECT_EQ(quickAck(p.recv), 1);
  weft::nettest::closePair(net.get(), &p);
}

// connect() until it returns a comm or fails; the elapsed time comes back in *ms.
ncclResult_t connectUntilDone(Network* net, void* handle, void** comm, int64_t* ms) {
  auto start = weft::nettest::Clock::now();
  ncclResult_t r = ncclSuccess;
  while (*comm == nullptr && !weft::nettest::pastSeconds(start, 30)) {
    r = net->connect(0, handle, comm);
    if (r != ncclSuccess) break;
  }
  *ms = std::chrono::duration_cast<std::chrono::milliseconds>(weft::nettest::Clock::now() - start).count();
  return r;
}

TEST_F(SocketNetTest, ConnectToAClosedListenerFails) {
  auto net = open(1, 1);
  ASSERT_NE(net, nullptr);
  char handle[weft::net::kHandleBytes];
  void* listen = nullptr;
  ASSERT_EQ(net->listen(0, handle, &listen), ncclSuccess);
  ASSERT_EQ(net->closeListen(listen), ncclSuccess);
  void* comm = nullptr;
  int64_t ms = 0;
  EXPECT_EQ(connectUntilDone(net.get(), handle, &comm, &ms), ncclRemoteError);
  EXPECT_EQ(comm, nullptr);
}

// A handle crosses the bootstrap from the peer. Bytes after the address once held a pointer that
// connect() followed whenever it was not null, so a peer could make this process read (and free)
// memory anywhere. Now they hold a key that must name a connect() of this process.
TEST_F(SocketNetTest, ConnectRefusesAHandleWithAConnectionItDidNotStart) {
  static_assert(offsetof(weft::net::socketnet::Handle, connectKey) == 40, "the bytes a peer controls");
  auto net = open(1, 1);
  ASSERT_NE(net, nullptr);
  char handle[weft::net::kHandleBytes];
  void* listen = nullptr;
  ASSERT_EQ(net->listen(0, handle, &listen), ncclSuccess);
  const uint64_t garbage = 0x00000000deadbee8ull;
  memcpy(handle + 40, &garbage, sizeof(garbage));
  void* comm = nullptr;
  EXPECT_EQ(net->connect(0, handle, &comm), ncclInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  // The same handle as listen() wrote it still connects.
  memset(handle + 40, 0, sizeof(garbage));
  int64_t ms = 0;
  ASSERT_EQ(connectUntilDone(net.get(), handle, &comm, &ms), ncclSuccess);
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(net->closeSend(comm), ncclSuccess);
  EXPECT_EQ(net->closeListen(listen), ncclSuccess);
}

TEST_F(SocketNetTest, ConnectToAPeerThatNeverAnswersTimesOut) {
  env_.set("WEFT_NET_LINK_TIMEOUT_MS", "500");
  auto net = open(1, 1);
  ASSERT_NE(net, nullptr);
  // A listener that never accepts, with its backlog already full: further SYNs are dropped.
  weft::Socket listener;
  weft::SocketAddress addr = weft::emptySocketAddress();
  addr.v4.sin_family = AF_INET;
  addr.v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  weft::SocketAddress bound;
  std::string why;
  ASSERT_EQ(weft::Socket::listen(addr, false, &listener, &bound, &why), ncclSuccess) << why;
  ASSERT_EQ(::listen(listener.fd(), 0), 0);
  std::vector<weft::Socket> fillers;
  for (int i = 0; i < 4; ++i) {
    weft::Socket s;
    std::string detail;
    // Some of these may themselves hang in SYN-SENT; a short deadline is enough.
    (void)weft::Socket::connect(bound, weft::Deadline::afterMs(200), -1, &s, &detail);
    fillers.push_back(std::move(s));
  }
  char handle[weft::net::kHandleBytes];
  weft::net::socketnet::makeSocketHandle(bound, handle);
  void* comm = nullptr;
  int64_t ms = 0;
  ncclResult_t r = connectUntilDone(net.get(), handle, &comm, &ms);
  EXPECT_EQ(r, ncclRemoteError);
  EXPECT_EQ(comm, nullptr);
  EXPECT_LT(ms, 10000);
}

std::vector<std::string> deviceNames(Network* net) {
  int ndev = 0;
  EXPECT_EQ(net->devices(&ndev), ncclSuccess);
  std::vector<std::string> names;
  for (int d = 0; d < ndev; ++d) {
    weft::net::Properties props;
    EXPECT_EQ(net->getProperties(d, &props), ncclSuccess);
    EXPECT_EQ(props.ptrSupport, weft::net::kPtrHost);
    EXPECT_EQ(props.maxRecvs, 1);
    names.push_back(props.name);
  }
  return names;
}

TEST_F(SocketNetTest, InterfacesFollowIfnameAndFamily) {
  auto net = socketNetwork();
  ASSERT_NE(net, nullptr);
  EXPECT_EQ(deviceNames(net.get()), std::vector<std::string>{"lo"});

  env_.set("NCCL_SOCKET_IFNAME", "=lo");
  net = socketNetwork();
  EXPECT_EQ(deviceNames(net.get()), std::vector<std::string>{"lo"});

  env_.set("NCCL_SOCKET_IFNAME", "=l");  // exact names: "l" is no interface
  net = socketNetwork();
  EXPECT_TRUE(deviceNames(net.get()).empty());
  char handle[weft::net::kHandleBytes];
  void* listen = nullptr;
  EXPECT_EQ(net->listen(0, handle, &listen), ncclInvalidArgument);

  env_.set("NCCL_SOCKET_IFNAME", "^lo");
  net = socketNetwork();
  for (const std::string& n : deviceNames(net.get())) EXPECT_NE(n, "lo");

  // IPv6 over ::1, when this host has it.
  std::vector<weft::NetInterface> v6;
  std::string why;
  ASSERT_TRUE(weft::findInterfaces("=lo", weft::AddressFamily::kIPv6, &v6, &why)) << why;
  if (v6.empty()) GTEST_SKIP() << "no IPv6 on lo";
  env_.set("NCCL_SOCKET_IFNAME", "=lo");
  env_.set("NCCL_SOCKET_FAMILY", "AF_INET6");
  net = open(2, 1);
  ASSERT_EQ(deviceNames(net.get()), std::vector<std::string>{"lo"});
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {kMiB, 3}));
  weft::nettest::closePair(net.get(), &p);
}

}  // namespace
