// The built-in IB network over real verbs: message sizes with one and several QPs, many
// outstanding requests, a peer that goes away, a message larger than its receive, strangers on
// the side channel, registrations, and device and GID selection. Without an RDMA device every test
// skips; the lab (tests/ib/lab) runs this binary inside a VM with Soft-RoCE, where none may skip.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/net_test_util.h"
#include "transports/net/ib/ib_connect.h"
#include "transports/net/ib/ib_devices.h"
#include "transports/net/ib/ib_net.h"
#include "transports/net/ib/ib_select.h"
#include "transports/net/plugin/adapter.h"

namespace {

using weft::net::Network;
using weft::nettest::Pair;
using weft::nettest::ScopedEnv;
namespace ib = weft::net::ib;

constexpr size_t kMiB = 1 << 20;

class IbNetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.set("NCCL_SOCKET_IFNAME", "lo");  // the side channel
    for (const char* v : {"NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_RANGE", "NCCL_IB_ADDR_FAMILY",
                          "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_IB_DISABLE"})
      env_.unset(v);
    ib::rediscoverForTesting();
    if (ib::devices().empty()) GTEST_SKIP() << "no RDMA device here (the IB lab runs these tests in a VM)";
  }
  void TearDown() override { ib::rediscoverForTesting(); }

  std::unique_ptr<Network> open(int qps = 1, bool split = false) {
    env_.set("NCCL_IB_QPS_PER_CONNECTION", std::to_string(qps));
    env_.set("NCCL_IB_SPLIT_DATA_ON_QPS", split ? "1" : "0");
    std::string why;
    auto n = weft::net::adaptPlugin(12, ib::ibNetTable(), "built-in", &why);
    EXPECT_NE(n, nullptr) << why;
    return n;
  }
  // How many devices discovery finds under the current variables, and its report.
  size_t rediscover(std::string* report) {
    ib::rediscoverForTesting();
    std::vector<std::string> lines;
    size_t n = ib::devices(&lines).size();
    report->clear();
    for (const std::string& l : lines) *report += l + "\n";
    return n;
  }
  ScopedEnv env_;
};

using weft::nettest::waitForFailure;

TEST_F(IbNetTest, AllSizesWithOneAndSeveralQps) {
  const std::vector<size_t> sizes = {0, 1, 48, 64, 65, 4096, 16 * 1024, 16 * 1024 + 1, 200 * 1024 + 3, kMiB, 16 * kMiB};
  for (auto [qps, split] : {std::pair{1, false}, std::pair{2, true}, std::pair{3, false}, std::pair{4, true}}) {
    SCOPED_TRACE("QPs " + std::to_string(qps) + (split ? ", split" : ", one QP per message"));
    auto net = open(qps, split);
    ASSERT_NE(net, nullptr);
    EXPECT_STREQ(net->name(), "IB");
    Pair p;
    ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
    for (size_t s : sizes) EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {s}, 0, true)) << s << " bytes";
    // A receive larger than the message reports the size that was sent.
    EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {5, 100000}, 4096, true));
    weft::nettest::closePair(net.get(), &p);
  }
}

TEST_F(IbNetTest, ManyOutstandingRequests) {
  auto net = open(2, false);
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<size_t> sizes;
  for (int i = 0; i < 100; ++i) sizes.push_back(i % 4 == 0 ? kMiB : (i % 4 == 1 ? 128 * 1024 : size_t(i) * 37));
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, sizes, 0, true));

  // 32 requests per connection; the 33rd receive is "not now", not an error, and a send waits for
  // a posted receive.
  std::vector<char> out(64), in(64 * 32);
  void *smh = nullptr, *rmh = nullptr;
  ASSERT_EQ(net->regMr(p.send, out.data(), out.size(), weft::net::kPtrHost, &smh), ncclSuccess);
  ASSERT_EQ(net->regMr(p.recv, in.data(), in.size(), weft::net::kPtrHost, &rmh), ncclSuccess);
  void* early = reinterpret_cast<void*>(1);
  ASSERT_EQ(net->isend(p.send, out.data(), out.size(), 0, smh, &early), ncclSuccess);
  EXPECT_EQ(early, nullptr) << "a send went out before any receive was posted";
  std::vector<void*> rreqs, sreqs;
  for (int i = 0; i < 32; ++i) {
    void* r = nullptr;
    ASSERT_EQ(net->irecv(p.recv, in.data() + 64 * i, 64, 0, rmh, &r), ncclSuccess);
    ASSERT_NE(r, nullptr) << i;
    rreqs.push_back(r);
  }
  void* extra = reinterpret_cast<void*>(1);
  EXPECT_EQ(net->irecv(p.recv, in.data(), 64, 0, rmh, &extra), ncclSuccess);
  EXPECT_EQ(extra, nullptr);
  auto start = weft::nettest::Clock::now();
  while (sreqs.size() < 32) {
    void* r = nullptr;
    ASSERT_EQ(net->isend(p.send, out.data(), out.size(), 0, smh, &r), ncclSuccess);
    if (r != nullptr) sreqs.push_back(r);
    ASSERT_FALSE(weft::nettest::pastSeconds(start, 20)) << sreqs.size() << " sends posted";
  }
  for (int i = 0; i < 32; ++i) {
    int rdone = 0, sdone = 0;
    size_t size = 0;
    while (!rdone || !sdone) {
      if (!rdone) ASSERT_EQ(net->test(rreqs[size_t(i)], &rdone, &size), ncclSuccess);
      if (!sdone) ASSERT_EQ(net->test(sreqs[size_t(i)], &sdone, &size), ncclSuccess);
      ASSERT_FALSE(weft::nettest::pastSeconds(start, 40));
    }
  }
  net->deregMr(p.send, smh);
  net->deregMr(p.recv, rmh);
  weft::nettest::closePair(net.get(), &p);
}

TEST_F(IbNetTest, SenderGoesAway) {
  auto net = open();
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<char> in(kMiB);
  void* rmh = nullptr;
  void* rreq = nullptr;
  ASSERT_EQ(net->regMr(p.recv, in.data(), in.size(), weft::net::kPtrHost, &rmh), ncclSuccess);
  ASSERT_EQ(net->irecv(p.recv, in.data(), in.size(), 0, rmh, &rreq), ncclSuccess);
  ASSERT_NE(rreq, nullptr);
  ASSERT_EQ(net->closeSend(p.send), ncclSuccess);
  p.send = nullptr;
  ncclResult_t r = waitForFailure(net.get(), rreq, 20);
  EXPECT_EQ(r, ncclRemoteError);
  void* again = nullptr;  // the connection stays failed
  EXPECT_NE(net->irecv(p.recv, in.data(), in.size(), 0, rmh, &again), ncclSuccess);
  net->deregMr(p.recv, rmh);
  weft::nettest::closePair(net.get(), &p);
}

TEST_F(IbNetTest, ReceiverGoesAway) {
  auto net = open();
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<char> out(kMiB, 'y'), in(kMiB);
  void *smh = nullptr, *rmh = nullptr, *rreq = nullptr;
  ASSERT_EQ(net->regMr(p.send, out.data(), out.size(), weft::net::kPtrHost, &smh), ncclSuccess);
  ASSERT_EQ(net->regMr(p.recv, in.data(), in.size(), weft::net::kPtrHost, &rmh), ncclSuccess);
  ASSERT_EQ(net->irecv(p.recv, in.data(), in.size(), 0, rmh, &rreq), ncclSuccess);
  net->deregMr(p.recv, rmh);
  ASSERT_EQ(net->closeRecv(p.recv), ncclSuccess);
  p.recv = nullptr;
  // Whether the FIFO entry arrived before the close or not, the sender must fail, not hang.
  ncclResult_t r = ncclSuccess;
  void* sreq = nullptr;
  auto start = weft::nettest::Clock::now();
  while (r == ncclSuccess && !weft::nettest::pastSeconds(start, 30)) {
    if (sreq == nullptr) {
      r = net->isend(p.send, out.data(), out.size(), 0, smh, &sreq);
    } else {
      r = waitForFailure(net.get(), sreq, 30);
      break;
    }
  }
  EXPECT_TRUE(r == ncclRemoteError || r == ncclSystemError) << r;
  net->deregMr(p.send, smh);
  weft::nettest::closePair(net.get(), &p);
}

TEST_F(IbNetTest, MessageLargerThanTheReceiveFails) {
  auto net = open();
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<char> out(1000), in(10);
  void *smh = nullptr, *rmh = nullptr, *rreq = nullptr, *sreq = nullptr;
  ASSERT_EQ(net->regMr(p.send, out.data(), out.size(), weft::net::kPtrHost, &smh), ncclSuccess);
  ASSERT_EQ(net->regMr(p.recv, in.data(), in.size(), weft::net::kPtrHost, &rmh), ncclSuccess);
  ASSERT_EQ(net->irecv(p.recv, in.data(), in.size(), 0, rmh, &rreq), ncclSuccess);
  ncclResult_t r = ncclSuccess;
  auto start = weft::nettest::Clock::now();
  while (r == ncclSuccess && sreq == nullptr && !weft::nettest::pastSeconds(start, 20))
    r = net->isend(p.send, out.data(), out.size(), 0, smh, &sreq);
  EXPECT_NE(r, ncclSuccess);
  EXPECT_EQ(sreq, nullptr);
  net->deregMr(p.send, smh);
  net->deregMr(p.recv, rmh);
  weft::nettest::closePair(net.get(), &p);
}

TEST_F(IbNetTest, StrangersOnTheSideChannelAreIgnored) {
  auto net = open();
  ASSERT_NE(net, nullptr);
  Pair p;
  char handle[weft::net::kHandleBytes] = {};
  ASSERT_EQ(net->listen(0, handle, &p.listen), ncclSuccess);
  weft::SocketAddress addr{};
  ASSERT_TRUE(ib::sideChannelAddress(handle, &addr));
  // One stranger sends garbage of the right size, one sends nothing at all.
  int loud = ::socket(addr.sa.sa_family, SOCK_STREAM, 0), quiet = ::socket(addr.sa.sa_family, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(loud, &addr.sa, weft::socketAddressLength(addr)), 0);
  ASSERT_EQ(::connect(quiet, &addr.sa, weft::socketAddressLength(addr)), 0);
  std::vector<char> garbage(sizeof(ib::QpInfo), 0x5a);
  ASSERT_EQ(::send(loud, garbage.data(), garbage.size(), 0), ssize_t(garbage.size()));
  for (int i = 0; i < 10; ++i) ASSERT_EQ(net->accept(p.listen, &p.recv), ncclSuccess);
  EXPECT_EQ(p.recv, nullptr);
  auto start = weft::nettest::Clock::now();
  while (p.send == nullptr || p.recv == nullptr) {
    if (p.send == nullptr) ASSERT_EQ(net->connect(0, handle, &p.send), ncclSuccess);
    if (p.recv == nullptr) ASSERT_EQ(net->accept(p.listen, &p.recv), ncclSuccess);
    ASSERT_FALSE(weft::nettest::pastSeconds(start, 20));
  }
  EXPECT_TRUE(weft::nettest::transfer(net.get(), p, {4096}, 0, true));
  ::close(loud);
  ::close(quiet);
  weft::nettest::closePair(net.get(), &p);
}

TEST_F(IbNetTest, ForeignHandleIsRefused) {
  auto net = open();
  ASSERT_NE(net, nullptr);
  char handle[weft::net::kHandleBytes] = {};
  memset(handle, 0x11, sizeof(handle));
  void* send = nullptr;
  EXPECT_EQ(net->connect(0, handle, &send), ncclInvalidArgument);
  EXPECT_EQ(send, nullptr);
}

TEST_F(IbNetTest, PropertiesDescribeThePort) {
  auto net = open();
  ASSERT_NE(net, nullptr);
  weft::net::Properties props;
  ASSERT_EQ(net->getProperties(0, &props), ncclSuccess);
  EXPECT_FALSE(props.name.empty());
  EXPECT_GE(props.port, 1);
  EXPECT_GT(props.speedMbps, 0);
  EXPECT_EQ(props.ptrSupport, weft::net::kPtrHost);
  EXPECT_EQ(props.maxRecvs, 1);
  EXPECT_NE(props.guid, 0u);
}

TEST_F(IbNetTest, RegistrationsShareAndOutliveEachOther) {
  auto net = open();
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<char> buf(64 * 1024);
  void *whole = nullptr, *part = nullptr;
  ASSERT_EQ(net->regMr(p.send, buf.data(), buf.size(), weft::net::kPtrHost, &whole), ncclSuccess);
  ASSERT_EQ(net->regMr(p.send, buf.data() + 100, 1000, weft::net::kPtrHost, &part), ncclSuccess);
  EXPECT_EQ(whole, part) << "a range inside a registration must share it";
  EXPECT_EQ(net->deregMr(p.send, whole), ncclSuccess);
  // The other handle still works.
  std::vector<char> in(1000);
  void *rmh = nullptr, *rreq = nullptr, *sreq = nullptr;
  ASSERT_EQ(net->regMr(p.recv, in.data(), in.size(), weft::net::kPtrHost, &rmh), ncclSuccess);
  ASSERT_EQ(net->irecv(p.recv, in.data(), in.size(), 0, rmh, &rreq), ncclSuccess);
  memset(buf.data() + 100, 0x42, 1000);
  auto start = weft::nettest::Clock::now();
  while (sreq == nullptr) {
    ASSERT_EQ(net->isend(p.send, buf.data() + 100, 1000, 0, part, &sreq), ncclSuccess);
    ASSERT_FALSE(weft::nettest::pastSeconds(start, 20));
  }
  int sdone = 0, rdone = 0;
  size_t size = 0;
  while (!sdone || !rdone) {
    if (!sdone) ASSERT_EQ(net->test(sreq, &sdone, &size), ncclSuccess);
    if (!rdone) ASSERT_EQ(net->test(rreq, &rdone, &size), ncclSuccess);
    ASSERT_FALSE(weft::nettest::pastSeconds(start, 20));
  }
  EXPECT_EQ(std::vector<char>(1000, 0x42), in);
  EXPECT_EQ(net->deregMr(p.send, part), ncclSuccess);
  EXPECT_EQ(net->deregMr(p.recv, rmh), ncclSuccess);
  weft::nettest::closePair(net.get(), &p);
}

// deregMr while a transfer is in flight: the memory stays registered until the request completes.
TEST_F(IbNetTest, DeregistrationWaitsForRequestsInFlight) {
  auto net = open();
  ASSERT_NE(net, nullptr);
  Pair p;
  ASSERT_TRUE(weft::nettest::connectPair(net.get(), 0, &p));
  std::vector<char> out(4 * kMiB, 0x17), in(4 * kMiB);
  void *smh = nullptr, *rmh = nullptr, *rreq = nullptr, *sreq = nullptr;
  ASSERT_EQ(net->regMr(p.send, out.data(), out.size(), weft::net::kPtrHost, &smh), ncclSuccess);
  ASSERT_EQ(net->regMr(p.recv, in.data(), in.size(), weft::net::kPtrHost, &rmh), ncclSuccess);
  ASSERT_EQ(net->irecv(p.recv, in.data(), in.size(), 0, rmh, &rreq), ncclSuccess);
  ASSERT_NE(rreq, nullptr);
  EXPECT_EQ(net->deregMr(p.recv, rmh), ncclSuccess);
  auto start = weft::nettest::Clock::now();
  while (sreq == nullptr) {
    ASSERT_EQ(net->isend(p.send, out.data(), out.size(), 0, smh, &sreq), ncclSuccess);
    ASSERT_FALSE(weft::nettest::pastSeconds(start, 20));
  }
  EXPECT_EQ(net->deregMr(p.send, smh), ncclSuccess);
  int sdone = 0, rdone = 0;
  size_t size = 0;
  while (!sdone || !rdone) {
    if (!sdone) ASSERT_EQ(net->test(sreq, &sdone, &size), ncclSuccess);
    if (!rdone) ASSERT_EQ(net->test(rreq, &rdone, &size), ncclSuccess);
    ASSERT_FALSE(weft::nettest::pastSeconds(start, 30));
  }
  EXPECT_EQ(size, out.size());
  EXPECT_EQ(in, out);
  weft::nettest::closePair(net.get(), &p);
}

TEST_F(IbNetTest, HcaSelection) {
  std::string report;
  const std::string name = ib::devices()[0]->name;
  const size_t all = ib::devices().size();
  size_t others = 0;
  for (const ib::Device* d : ib::devices()) others += d->name.compare(0, 2, name, 0, 2) != 0 ? 1 : 0;
  env_.set("NCCL_IB_HCA", "^" + name.substr(0, 2));
  EXPECT_EQ(rediscover(&report), others) << report;
  EXPECT_NE(report.find("not admitted by NCCL_IB_HCA"), std::string::npos) << report;
  env_.set("NCCL_IB_HCA", "=" + name + ":1");
  EXPECT_EQ(rediscover(&report), 1u) << report;
  env_.set("NCCL_IB_HCA", name + ":2");
  EXPECT_EQ(rediscover(&report), 0u) << report;
  env_.set("NCCL_IB_HCA", name.substr(0, 2));
  EXPECT_EQ(rediscover(&report), all) << report;
  env_.set("NCCL_IB_HCA", "=" + name.substr(0, 2));
  EXPECT_EQ(rediscover(&report), 0u) << report;
  env_.set("NCCL_IB_DISABLE", "1");
  env_.unset("NCCL_IB_HCA");
  EXPECT_EQ(rediscover(&report), 0u) << report;
  EXPECT_NE(report.find("NCCL_IB_DISABLE"), std::string::npos) << report;
}

TEST_F(IbNetTest, GidSelection) {
  std::string report;
  ib::Device* d = ib::devices()[0];
  if (d->linkLayer != IBV_LINK_LAYER_ETHERNET) GTEST_SKIP() << d->label() << " is InfiniBand: GIDs are not chosen";
  // The default: the RoCE v2 GID of the interface's IPv4 address.
  const int chosen = d->gidIndex;
  const std::string ip = ib::gidToString(d->gid.raw);
  EXPECT_NE(ip.find('.'), std::string::npos) << "default GID " << ip << " is not IPv4";
  env_.set("NCCL_IB_GID_INDEX", std::to_string(chosen));
  ASSERT_EQ(rediscover(&report), 1u) << report;
  EXPECT_EQ(ib::devices()[0]->gidIndex, chosen);
  env_.unset("NCCL_IB_GID_INDEX");
  env_.set("NCCL_IB_ADDR_RANGE", ip + "/24");
  ASSERT_EQ(rediscover(&report), 1u) << report;
  EXPECT_EQ(ib::devices()[0]->gidIndex, chosen);
  env_.set("NCCL_IB_ADDR_RANGE", "192.0.2.0/24");
  EXPECT_EQ(rediscover(&report), 0u) << report;
  EXPECT_NE(report.find("no GID of family AF_INET in 192.0.2.0/24"), std::string::npos) << report;
  env_.unset("NCCL_IB_ADDR_RANGE");
  env_.set("NCCL_IB_GID_INDEX", "250");
  EXPECT_EQ(rediscover(&report), 0u) << report;
  EXPECT_NE(report.find("NCCL_IB_GID_INDEX=250"), std::string::npos) << report;  // empty or beyond the table
}

}  // namespace
