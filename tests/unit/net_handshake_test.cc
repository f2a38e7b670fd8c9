// What a network link's handshake says when WEFT_TIMEOUT_MS runs out (transports/net/
// net_connection.cc): the step it waits in, since "no handle arrived" for a handle that did arrive
// sends a user after the wrong rank. Two bootstrap ranks as threads of this process; the links go
// over the AcceptFirst example plugin (tests/net), whose connect completes only after the peer's
// accept, as aws-ofi-nccl's does. Each case uses a channel of its own, so its handle messages stay
// apart from the others'.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "bootstrap_ranks.h"
#include "transports/net/net_connection.h"
#include "transports/net/plugin/loader.h"

namespace {

using weft::Lane;
using weft::NetConnection;
using weft::NetConnectionSpec;
using namespace weft::bootstrap_test;

constexpr int64_t kLinkTimeoutMs = 300;

class NetHandshakeTest : public BootstrapTest {
 protected:
  void SetUp() override {
    BootstrapTest::SetUp();
    env_.set("NCCL_NET_PLUGIN", std::string(WEFT_EXAMPLE_NET_DIR) + "/libnccl-net-acceptfirst.so");
    env_.set("NCCL_NET", "AcceptFirst");
    weft::net::resetNetworksForTesting();
    std::string why;
    ASSERT_EQ(weft::net::selectNetwork(nullptr, &net_, &why), ncclSuccess) << why;
    ranks_ = runRanks(allRanks(freshId(), 2));
    for (const RankResult& r : ranks_) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  }
  void TearDown() override { weft::net::resetNetworksForTesting(); }

  // Rank 0 -> rank 1 on `channel`: the side of `rank` (the sender is rank 0).
  std::unique_ptr<NetConnection> link(int rank, int channel) {
    NetConnectionSpec s;
    s.id = weft::ConnectionId{0x51, Lane::kRing, channel, 0, 1};
    s.isSender = rank == 0;
    s.nslots = 2;
    s.slotBytes = 4096;
    s.network = net_;
    s.bootstrap = ranks_[rank].bs.get();
    s.peerHost = "host" + std::to_string(1 - rank);
    s.timeoutMs = kLinkTimeoutMs;
    return std::make_unique<NetConnection>(s);
  }

  // Tries c until it fails (true) or connects or 10 s pass (false); *why gets its error.
  static bool failsWaiting(NetConnection& c, std::string* why) {
    const auto start = Clock::now();
    weft::FifoView view;
    bool ready = false;
    while (Clock::now() - start < std::chrono::seconds(10)) {
      if (c.tryConnect(&view, &ready, why) != ncclSuccess) return true;
      if (ready) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  weft::net::Network* net_ = nullptr;
  std::vector<RankResult> ranks_;
};

TEST_F(NetHandshakeTest, ConnectWaitingForTheAcceptSaysSo) {
  auto recv = link(1, 0), send = link(0, 0);
  weft::FifoView view;
  bool ready = false;
  std::string why;
  ASSERT_EQ(recv->tryConnect(&view, &ready, &why), ncclSuccess) << why;  // listens, sends the handle
  ASSERT_FALSE(ready);
  ASSERT_TRUE(failsWaiting(*send, &why));  // the receiver never accepts again
  EXPECT_NE(why.find("AcceptFirst network's connect() has not completed within 300 ms"), std::string::npos) << why;
  EXPECT_NE(why.find("the handle from rank 1 arrived, the peer has not accepted"), std::string::npos) << why;
  EXPECT_EQ(why.find("no connection handle arrived"), std::string::npos) << why;
}

TEST_F(NetHandshakeTest, SenderWithoutAHandleSaysSo) {
  auto send = link(0, 1);
  std::string why;
  ASSERT_TRUE(failsWaiting(*send, &why));  // rank 1 never listens
  EXPECT_NE(why.find("no connection handle arrived from rank 1 within 300 ms"), std::string::npos) << why;
}

TEST_F(NetHandshakeTest, ReceiverWithoutAConnectSaysSo) {
  auto recv = link(1, 2);
  std::string why;
  ASSERT_TRUE(failsWaiting(*recv, &why));  // rank 0 never connects
  EXPECT_NE(why.find("accept() has had no connection from rank 0 within 300 ms"), std::string::npos) << why;
}

}  // namespace
