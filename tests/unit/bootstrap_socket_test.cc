// The bootstrap's socket-level pieces on their own: interface choice, address parsing, rank
// lists, cancellation, connect retries, the side-by-side intake of a ring predecessor, and large
// transfers both ways at once.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/protocol.h"
#include "free_port.h"
#include "sockets/intake.h"
#include "sockets/interfaces.h"
#include "sockets/socket.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

TEST(BootstrapSocket, InterfaceNameMatching) {
  EXPECT_TRUE(interfaceNameMatches("", "eth0"));
  EXPECT_TRUE(interfaceNameMatches("eth", "eth0"));
  EXPECT_TRUE(interfaceNameMatches("ib,eth", "eth1"));
  EXPECT_FALSE(interfaceNameMatches("ib,eth", "lo"));
  EXPECT_FALSE(interfaceNameMatches("^eth", "eth0"));
  EXPECT_TRUE(interfaceNameMatches("^eth", "ib0"));
  EXPECT_TRUE(interfaceNameMatches("=eth0", "eth0"));
  EXPECT_FALSE(interfaceNameMatches("=eth0", "eth01"));
  EXPECT_FALSE(interfaceNameMatches("eth01", "eth0"));
  EXPECT_TRUE(interfaceNameMatches("^=eth0", "eth01"));
  EXPECT_FALSE(interfaceNameMatches("^=eth0,lo", "lo"));
  EXPECT_FALSE(interfaceNameMatches("^docker,lo", "docker0"));
  EXPECT_FALSE(interfaceNameMatches("^docker,lo", "lo"));
  EXPECT_TRUE(interfaceNameMatches("^docker,lo", "enp5s0"));
  EXPECT_TRUE(interfaceNameMatches(" eth , ib ", "ib0"));
}

TEST(BootstrapSocket, DefaultInterfaceSkipsLoopbackUnlessAlone) {
  std::vector<NetInterface> all, def, lo;
  std::string why;
  ASSERT_TRUE(findInterfaces("^=", AddressFamily::kAny, &all, &why)) << why;
  ASSERT_TRUE(findInterfaces("", AddressFamily::kAny, &def, &why)) << why;
  ASSERT_FALSE(def.empty()) << "not even loopback is up";
  bool hasOther = std::any_of(all.begin(), all.end(), [](const NetInterface& i) {
    return !i.loopback && i.name.rfind("docker", 0) != 0 && i.name.rfind("lo", 0) != 0;
  });
  for (const NetInterface& i : def) {
    if (hasOther) {
      EXPECT_FALSE(i.loopback) << i.name;
      EXPECT_NE(i.name.rfind("docker", 0), 0u) << i.name;
    }
  }
  ASSERT_TRUE(findInterfaces("lo", AddressFamily::kAny, &lo, &why)) << why;
  ASSERT_FALSE(lo.empty());
  EXPECT_TRUE(lo[0].loopback);
  EXPECT_EQ(lo[0].addr.sa.sa_family, AF_INET) << "IPv4 is preferred when both families are allowed";
  std::vector<NetInterface> none;
  ASSERT_TRUE(findInterfaces("=no-such-interface", AddressFamily::kAny, &none, &why));
  EXPECT_TRUE(none.empty());
}

TEST(BootstrapSocket, HostPortParsing) {
  SocketAddress a;
  std::string why;
  ASSERT_TRUE(parseHostPort("127.0.0.1:5000", AddressFamily::kAny, &a, &why)) << why;
  EXPECT_EQ(socketAddressToString(a), "127.0.0.1:5000");
  ASSERT_TRUE(parseHostPort("[::1]:6000", AddressFamily::kAny, &a, &why)) << why;
  EXPECT_EQ(socketAddressToString(a), "[::1]:6000");
  ASSERT_TRUE(parseHostPort("localhost:7000", AddressFamily::kIPv4, &a, &why)) << why;
  EXPECT_EQ(socketAddressToString(a), "127.0.0.1:7000");
  EXPECT_FALSE(parseHostPort("127.0.0.1", AddressFamily::kAny, &a, &why));
  EXPECT_FALSE(parseHostPort("127.0.0.1:0", AddressFamily::kAny, &a, &why));
  EXPECT_FALSE(parseHostPort("127.0.0.1:70000", AddressFamily::kAny, &a, &why));
  EXPECT_FALSE(parseHostPort("::1:5000", AddressFamily::kAny, &a, &why));
  EXPECT_NE(why.find("[address]:port"), std::string::npos) << why;
  EXPECT_FALSE(parseHostPort("[::1]:5000", AddressFamily::kIPv4, &a, &why));
  EXPECT_FALSE(parseHostPort(":5000", AddressFamily::kAny, &a, &why));
}

TEST(BootstrapSocket, RankListFormatting) {
  std::vector<int> r = {0, 2, 3, 4, 7, 9, 10};
  EXPECT_EQ(bootstrap::formatRankList(r.data(), r.size()), "0, 2-4, 7, 9-10");
  std::vector<int> one = {5};
  EXPECT_EQ(bootstrap::formatRankList(one.data(), one.size()), "5");
  std::vector<int> many;
  for (int i = 0; i < 5000; i += 2) many.push_back(i);
  std::string s = bootstrap::formatRankList(many.data(), many.size(), 100);
  EXPECT_LT(s.size(), 140u);
  EXPECT_NE(s.find("2500 in all"), std::string::npos) << s;
}

TEST(BootstrapSocket, CancelEventWakesARecv) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  Socket a(sv[0]), b(sv[1]);
  CancelEvent cancel;
  ASSERT_TRUE(cancel.ok());
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel.fire();
  });
  char buf[4];
  std::string detail;
  auto t0 = Clock::now();
  EXPECT_EQ(a.recvAll(buf, sizeof(buf), Deadline::afterMs(60000), cancel.fd(), &detail), IoStatus::kAborted);
  EXPECT_LT(msSince(t0), 5000);
  t.join();
  EXPECT_TRUE(cancel.fired());
  // Still fired for later calls.
  EXPECT_EQ(a.recvAll(buf, sizeof(buf), Deadline::afterMs(60000), cancel.fd(), &detail), IoStatus::kAborted);
  EXPECT_EQ(a.recvAll(buf, sizeof(buf), Deadline::afterMs(50), -1, &detail), IoStatus::kTimeout);
  b.close();
  EXPECT_EQ(a.recvAll(buf, sizeof(buf), Deadline::afterMs(1000), -1, &detail), IoStatus::kClosed);
  EXPECT_EQ(detail, "peer closed the connection");
}

TEST(BootstrapSocket, ConnectRetriesUntilTheListenerAppears) {
  int port = freeTcpPort(AF_INET);
  ASSERT_GT(port, 0);
  SocketAddress addr;
  std::string why;
  ASSERT_TRUE(parseHostPort("127.0.0.1:" + std::to_string(port), AddressFamily::kAny, &addr, &why));
  Socket listener;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    std::string w;
    ASSERT_EQ(Socket::listen(addr, true, &listener, nullptr, &w), ncclSuccess) << w;
  });
  Socket s;
  std::string detail;
  EXPECT_EQ(Socket::connect(addr, Deadline::afterMs(10000), -1, &s, &detail), IoStatus::kOk) << detail;
  late.join();
  Socket nobody;
  int port2 = freeTcpPort(AF_INET);
  SocketAddress addr2 = addr;
  setSocketAddressPort(&addr2, static_cast<uint16_t>(port2));
  auto t0 = Clock::now();
  EXPECT_EQ(Socket::connect(addr2, Deadline::afterMs(300), -1, &nobody, &detail), IoStatus::kTimeout);
  EXPECT_NE(detail.find("refused"), std::string::npos) << detail;
  EXPECT_GE(msSince(t0), 290);
}

// The wait for a ring predecessor reads every arriving connection side by side: a stranger that
// connects and says nothing, one that sends junk and one that sends half a hello do not hold it,
// and the silent one is dropped after its own deadline.
TEST(BootstrapSocket, SilentStrangersDoNotHoldTheWaitForThePeer) {
  SocketAddress any;
  std::string why;
  ASSERT_TRUE(parseHostPort("127.0.0.1:1", AddressFamily::kAny, &any, &why)) << why;
  setSocketAddressPort(&any, 0);  // any free port
  Socket listener;
  SocketAddress addr;
  ASSERT_EQ(Socket::listen(any, false, &listener, &addr, &why), ncclSuccess) << why;
  std::string detail;
  Socket silent, junk, half, real;
  ASSERT_EQ(Socket::connect(addr, Deadline::afterMs(5000), -1, &silent, &detail), IoStatus::kOk) << detail;
  ASSERT_EQ(Socket::connect(addr, Deadline::afterMs(5000), -1, &junk, &detail), IoStatus::kOk) << detail;
  ASSERT_EQ(Socket::connect(addr, Deadline::afterMs(5000), -1, &half, &detail), IoStatus::kOk) << detail;
  const char junkBytes[8] = {'n', 'o', 't', ' ', 'w', 'e', 'f', 't'};
  ASSERT_EQ(junk.sendAll(junkBytes, sizeof junkBytes, Deadline::afterMs(1000), -1, &detail), IoStatus::kOk);
  const uint64_t want = 0x1122334455667788ull;
  ASSERT_EQ(half.sendAll(&want, 4, Deadline::afterMs(1000), -1, &detail), IoStatus::kOk);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::string d;
    ASSERT_EQ(Socket::connect(addr, Deadline::afterMs(5000), -1, &real, &d), IoStatus::kOk) << d;
    ASSERT_EQ(real.sendAll(&want, sizeof want, Deadline::afterMs(1000), -1, &d), IoStatus::kOk) << d;
  });
  IntakeOptions opts;
  opts.helloBytes = sizeof want;
  opts.strangerMs = 100;
  opts.isExpected = [&](const void* b) { return memcmp(b, &want, sizeof want) == 0; };
  Socket got;
  uint64_t hello = 0;
  int dropped = 0;
  auto t0 = Clock::now();
  EXPECT_EQ(acceptIntroduced(listener, opts, Deadline::afterMs(20000), -1, &got, &hello, &dropped, &detail),
            IoStatus::kOk)
      << detail;
  late.join();
  EXPECT_LT(msSince(t0), 3000);
  EXPECT_TRUE(got.valid());
  EXPECT_EQ(hello, want);
  // The junk at least is gone (the silent ones too, unless this thread was held up for 100 ms).
  EXPECT_GE(dropped, 1);

  // With only a stranger, the wait ends at the caller's deadline and counts the stranger.
  Socket another;
  ASSERT_EQ(Socket::connect(addr, Deadline::afterMs(5000), -1, &another, &detail), IoStatus::kOk) << detail;
  t0 = Clock::now();
  EXPECT_EQ(acceptIntroduced(listener, opts, Deadline::afterMs(1000), -1, &got, &hello, &dropped, &detail),
            IoStatus::kTimeout);
  EXPECT_GE(msSince(t0), 990);
  EXPECT_EQ(dropped, 1);
}

TEST(BootstrapSocket, SendRecvAllMovesLargeBuffersBothWays) {
  // Both ends push 16 MiB before reading: only a duplex transfer can finish this.
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  Socket a(sv[0]), b(sv[1]);
  const size_t n = 16u << 20;
  std::vector<char> sa(n, 'a'), sb(n, 'b'), ra(n), rb(n);
  IoStatus stA = IoStatus::kError, stB = IoStatus::kError;
  std::thread t([&] { stB = sendRecvAll(b, sb.data(), n, b, rb.data(), n, 10000, -1, nullptr, nullptr); });
  stA = sendRecvAll(a, sa.data(), n, a, ra.data(), n, 10000, -1, nullptr, nullptr);
  t.join();
  EXPECT_EQ(stA, IoStatus::kOk);
  EXPECT_EQ(stB, IoStatus::kOk);
  EXPECT_EQ(ra, sb);
  EXPECT_EQ(rb, sa);
}
}  // namespace
}  // namespace weft
