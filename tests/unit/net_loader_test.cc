// The network loader with real dlopen of the example plugins (tests/net): by path and by name,
// the newest exported ABI version, the v8 fallback, a failing init, NCCL_NET selection, and the
// build whose connect waits for the peer's accept.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/net_test_util.h"
#include "transports/net/plugin/loader.h"
#include "weft/build_config.h"

namespace {

using weft::net::Network;
using weft::nettest::ScopedEnv;

const std::string kPluginDir = WEFT_EXAMPLE_NET_DIR;

bool reportMentions(const std::string& a, const std::string& b = "") {
  for (const std::string& line : weft::net::networkReport()) {
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return true;
  }
  return false;
}

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class NetLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.set("NCCL_SOCKET_IFNAME", "lo");
    env_.unset("NCCL_NET");
    env_.unset("NCCL_NET_PLUGIN");
    stats_ = ::testing::TempDir() + "weft_example_net_stats_" + std::to_string(getpid());
    std::remove(stats_.c_str());
    env_.set("WEFT_EXAMPLE_NET_STATS", stats_);
    weft::net::resetNetworksForTesting();
  }
  void TearDown() override {
    weft::net::resetNetworksForTesting();
    std::remove(stats_.c_str());
  }
  Network* select(const char* netName = nullptr) {
    Network* n = nullptr;
    std::string why;
    EXPECT_EQ(weft::net::selectNetwork(netName, &n, &why), ncclSuccess) << why;
    return n;
  }
  // One 1 MiB message and a small one through n; both ends closed afterwards.
  void exercise(Network* n) {
    weft::nettest::Pair p;
    ASSERT_TRUE(weft::nettest::connectPair(n, 0, &p));
    EXPECT_TRUE(weft::nettest::transfer(n, p, {1 << 20, 100}));
    weft::nettest::closePair(n, &p);
  }
  ScopedEnv env_;
  std::string stats_;
};

TEST_F(NetLoaderTest, PluginByPathFallsBackToV8) {
  env_.set("NCCL_NET_PLUGIN", kPluginDir + "/libnccl-net-example.so");
  Network* n = select();
  ASSERT_NE(n, nullptr);
  EXPECT_STREQ(n->name(), "Example");
  EXPECT_EQ(n->abiVersion(), 8);
  exercise(n);
  std::string stats = readFile(stats_);
  EXPECT_NE(stats.find("send api=v8 bytes=1048676"), std::string::npos) << stats;
  EXPECT_NE(stats.find("recv api=v8 bytes=1048676"), std::string::npos) << stats;
}

TEST_F(NetLoaderTest, PluginByNamePrefersTheNewestVersion) {
  env_.set("NCCL_NET_PLUGIN", "examplenew");  // libnccl-net-examplenew.so, found through the run path
  Network* n = select();
  ASSERT_NE(n, nullptr);
  EXPECT_STREQ(n->name(), "Example");
  EXPECT_EQ(n->abiVersion(), 12);
  exercise(n);
  std::string stats = readFile(stats_);
  EXPECT_NE(stats.find("send api=v12 bytes=1048676"), std::string::npos) << stats;
  EXPECT_NE(stats.find("recv api=v12 bytes=1048676"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("api=v8"), std::string::npos) << stats;
}

TEST_F(NetLoaderTest, FailingInitFallsBackToBuiltinsWithTheReason) {
  env_.set("NCCL_NET_PLUGIN", "failinit");
  Network* n = select();
  ASSERT_NE(n, nullptr);
  EXPECT_STREQ(n->name(), "Socket");
  EXPECT_TRUE(reportMentions("libnccl-net-failinit.so", "init failed"));
  // Asking for the failed plugin by name says what happened to it.
  env_.set("NCCL_NET", "Example");
  Network* none = nullptr;
  std::string why;
  EXPECT_EQ(weft::net::selectNetwork(nullptr, &none, &why), ncclInvalidArgument);
  EXPECT_NE(why.find("init failed"), std::string::npos) << why;
}

TEST_F(NetLoaderTest, MissingPluginTriesBothNamesAndFallsBack) {
  env_.set("NCCL_NET_PLUGIN", "nosuchnet");
  Network* n = select();
  ASSERT_NE(n, nullptr);
  EXPECT_STREQ(n->name(), "Socket");
  EXPECT_TRUE(reportMentions("libnccl-net-nosuchnet.so", "librccl-net-nosuchnet.so"));
}

TEST_F(NetLoaderTest, UnsetAndNoneUseTheBuiltinSocket) {
  Network* n = select();  // no libnccl-net.so on this system: silently built-in
  ASSERT_NE(n, nullptr);
  EXPECT_STREQ(n->name(), "Socket");
  EXPECT_EQ(n->abiVersion(), 12);
  EXPECT_TRUE(reportMentions("libnccl-net.so not found"));
  exercise(n);

  weft::net::resetNetworksForTesting();
  env_.set("NCCL_NET_PLUGIN", "NONE");
  n = select();
  ASSERT_NE(n, nullptr);
  EXPECT_STREQ(n->name(), "Socket");
  EXPECT_TRUE(reportMentions("no external plugin"));
}

TEST_F(NetLoaderTest, NcclNetPicksByNameCaseInsensitively) {
  env_.set("NCCL_NET_PLUGIN", kPluginDir + "/libnccl-net-example.so");
  EXPECT_STREQ(select()->name(), "Example");  // the plugin comes first
  env_.set("NCCL_NET", "socket");
  EXPECT_STREQ(select()->name(), "Socket");
  env_.set("NCCL_NET", "EXAMPLE");
  EXPECT_STREQ(select()->name(), "Example");
  // The communicator's netName wins over NCCL_NET.
  EXPECT_STREQ(select("sOcKeT")->name(), "Socket");
}

TEST_F(NetLoaderTest, UnknownNameListsTheChoices) {
  env_.set("NCCL_NET_PLUGIN", kPluginDir + "/libnccl-net-example.so");
  env_.set("NCCL_NET", "Carrier-Pigeon");
  Network* n = nullptr;
  std::string why;
  EXPECT_EQ(weft::net::selectNetwork(nullptr, &n, &why), ncclInvalidArgument);
  EXPECT_EQ(n, nullptr);
  EXPECT_NE(why.find("NCCL_NET=Carrier-Pigeon"), std::string::npos) << why;
  EXPECT_NE(why.find("Example"), std::string::npos) << why;
  EXPECT_NE(why.find("Socket"), std::string::npos) << why;

  EXPECT_EQ(weft::net::selectNetwork("Tin-Can", &n, &why), ncclInvalidArgument);
  EXPECT_NE(why.find("netName Tin-Can"), std::string::npos) << why;
}

// This machine has no RDMA device (the IB lab, tests/ib/lab, covers the network itself): asking
// for IB must say why it has none and point at IB's settings, not the Socket network's.
TEST_F(NetLoaderTest, IbWithoutADeviceSaysWhy) {
  env_.set("NCCL_NET", "ib");
  Network* n = nullptr;
  std::string why;
  ncclResult_t r = weft::net::selectNetwork(nullptr, &n, &why);
  if (r == ncclSuccess) GTEST_SKIP() << "this machine has an active RDMA port";
#if WEFT_HAVE_VERBS
  EXPECT_EQ(r, ncclSystemError) << why;
  EXPECT_NE(why.find("NCCL_NET=ib: that network has no usable device"), std::string::npos) << why;
  EXPECT_NE(why.find("NCCL_IB_HCA"), std::string::npos) << why;
  EXPECT_EQ(why.find("NCCL_SOCKET_IFNAME"), std::string::npos) << why;
  env_.set("NCCL_IB_DISABLE", "1");
  weft::net::resetNetworksForTesting();
  EXPECT_EQ(weft::net::selectNetwork(nullptr, &n, &why), ncclSystemError);
  EXPECT_NE(why.find("disabled by NCCL_IB_DISABLE=1"), std::string::npos) << why;
#else
  EXPECT_EQ(r, ncclInvalidUsage);
  EXPECT_NE(why.find("built without libibverbs headers"), std::string::npos) << why;
#endif
  // With no NCCL_NET, the Socket network is chosen.
  env_.unset("NCCL_NET");
  weft::net::resetNetworksForTesting();
  ASSERT_EQ(weft::net::selectNetwork(nullptr, &n, &why), ncclSuccess) << why;
  EXPECT_STREQ(n->name(), "Socket");
}

TEST_F(NetLoaderTest, FirstUseFromManyThreadsLoadsOnce) {
  env_.set("NCCL_NET_PLUGIN", kPluginDir + "/libnccl-net-examplenew.so");
  std::vector<Network*> got(8, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&got, i] {
      std::string why;
      (void)weft::net::selectNetwork(nullptr, &got[i], &why);
    });
  }
  for (auto& t : threads) t.join();
  for (Network* n : got) EXPECT_EQ(n, got[0]);
  ASSERT_NE(got[0], nullptr);
  EXPECT_EQ(got[0]->abiVersion(), 12);
  int loaded = 0;
  for (const std::string& line : weft::net::networkReport()) loaded += line.find("Example: loaded") == 0;
  EXPECT_EQ(loaded, 1);
}

// The AcceptFirst build orders its handshake as aws-ofi-nccl does (tests/net/checks runs Weft on
// it): connect gives no comm, however often it is called, until the peer's accept has taken the
// connection; then the pair moves data like any other.
TEST_F(NetLoaderTest, AcceptFirstConnectCompletesOnlyAfterTheAccept) {
  env_.set("NCCL_NET_PLUGIN", kPluginDir + "/libnccl-net-acceptfirst.so");
  env_.set("NCCL_NET", "AcceptFirst");
  Network* n = select();
  ASSERT_NE(n, nullptr);
  EXPECT_STREQ(n->name(), "AcceptFirst");
  weft::nettest::Pair p;
  char handle[weft::net::kHandleBytes] = {};
  ASSERT_EQ(n->listen(0, handle, &p.listen), ncclSuccess);
  for (int i = 0; i < 200; ++i) {  // 100 ms: ample for the TCP handshake over loopback
    ASSERT_EQ(n->connect(0, handle, &p.send), ncclSuccess);
    ASSERT_EQ(p.send, nullptr) << "connect completed before any accept, after " << i << " calls";
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  auto start = weft::nettest::Clock::now();
  while (p.recv == nullptr && !weft::nettest::pastSeconds(start, 10))
    ASSERT_EQ(n->accept(p.listen, &p.recv), ncclSuccess);
  ASSERT_NE(p.recv, nullptr) << "accept found no connection";
  while (p.send == nullptr && !weft::nettest::pastSeconds(start, 10))
    ASSERT_EQ(n->connect(0, handle, &p.send), ncclSuccess);
  ASSERT_NE(p.send, nullptr) << "connect did not complete after the accept";
  EXPECT_TRUE(weft::nettest::transfer(n, p, {1 << 20, 100, 0}));
  weft::nettest::closePair(n, &p);
  EXPECT_NE(readFile(stats_).find("recv api=v12 bytes=1048676"), std::string::npos) << readFile(stats_);
}

}  // namespace
