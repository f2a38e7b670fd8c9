// Weft's bootstrap with ranks as threads of this process: rendezvous of several sizes, the ring
// allgather and barrier, every way a rank can be refused, timeouts that name the missing rank,
// NCCL_COMM_ID, IPv6, abort, and how long an 8-rank rendezvous takes.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/params.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/protocol.h"
#include "bootstrap/unique_id.h"
#include "bootstrap_ranks.h"
#include "free_port.h"
#include "sockets/intake.h"
#include "sockets/interfaces.h"
#include "sockets/socket.h"

namespace weft {
namespace {

using namespace bootstrap_test;

bool ipv6LoopbackUsable() {
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 a;
  memset(&a, 0, sizeof(a));
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

// ------------------------------------------------------------------------------------------------
// Interfaces (the socket-level pieces: bootstrap_socket_test.cc)

TEST_F(BootstrapTest, UnmatchedIfnameIsAnErrorListingInterfaces) {
  env_.set("NCCL_SOCKET_IFNAME", "=no-such-interface");
  ncclUniqueId id;
  EXPECT_EQ(bootstrapGetUniqueId(&id), ncclInvalidArgument);
  NetInterface iface;
  std::string why;
  EXPECT_EQ(selectInterface(&iface, &why), ncclInvalidArgument);
  EXPECT_NE(why.find("no-such-interface"), std::string::npos) << why;
  EXPECT_NE(why.find("lo ("), std::string::npos) << why;
}

// ------------------------------------------------------------------------------------------------
// Ids

TEST_F(BootstrapTest, UniqueIdsAreDistinctAndHashStable) {
  std::vector<ncclUniqueId> ids(2);
  for (auto& id : ids) ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  EXPECT_NE(memcmp(&ids[0], &ids[1], sizeof(ncclUniqueId)), 0);
  EXPECT_NE(bootstrapIdHash(ids[0]), bootstrapIdHash(ids[1]));
  ncclUniqueId copy = ids[0];
  EXPECT_EQ(bootstrapIdHash(copy), bootstrapIdHash(ids[0]));
  bootstrap::IdLayout layout;
  ASSERT_TRUE(bootstrap::decodeId(ids[0], &layout));
  EXPECT_NE(layout.secret.w[0] | layout.secret.w[1], 0u);
  EXPECT_NE(socketAddressPort(layout.root), 0);
  // Use both ids so their roots finish instead of lingering until their timeout.
  for (auto& id : ids) {
    auto res = runRanks(allRanks(id, 1));
    EXPECT_EQ(res[0].rc, ncclSuccess) << res[0].why;
  }
}

TEST_F(BootstrapTest, ForeignIdIsRejected) {
  ncclUniqueId id;
  memset(&id, 0x5a, sizeof(id));
  std::unique_ptr<Bootstrap> bs;
  std::string why;
  EXPECT_EQ(Bootstrap::create(id, 0, 1, kTimeoutMs, &bs, &why), ncclInvalidArgument);
  EXPECT_NE(why.find("not made by ncclGetUniqueId"), std::string::npos) << why;
  ncclUniqueId good = freshId();
  EXPECT_EQ(Bootstrap::create(good, 2, 2, kTimeoutMs, &bs, &why), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(good, 0, 0, kTimeoutMs, &bs, &why), ncclInvalidArgument);
  auto res = runRanks(allRanks(good, 1));
  EXPECT_EQ(res[0].rc, ncclSuccess) << res[0].why;
}

// ------------------------------------------------------------------------------------------------
// Rendezvous, allgather, barrier

TEST_F(BootstrapTest, RendezvousOfSeveralSizes) {
  for (int n : {1, 2, 3, 8}) {
    SCOPED_TRACE("nranks=" + std::to_string(n));
    auto res = runRanks(allRanks(freshId(), n));
    for (int r = 0; r < n; r++) {
      ASSERT_EQ(res[r].rc, ncclSuccess) << res[r].why;
      EXPECT_EQ(res[r].bs->rank(), r);
      EXPECT_EQ(res[r].bs->nranks(), n);
    }
    expectAllGatherWorks(res, 1);
    expectAllGatherWorks(res, 3);
  }
}

TEST_F(BootstrapTest, AllGatherOfManySizes) {
  const int n = 4;
  auto res = runRanks(allRanks(freshId(), n));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  for (size_t ints : {size_t{1}, size_t{7}, size_t{1024}, size_t{100003}, size_t{1} << 20}) {
    SCOPED_TRACE("ints per rank=" + std::to_string(ints));
    expectAllGatherWorks(res, ints);
  }
  // Odd byte counts and zero bytes.
  std::vector<std::vector<unsigned char>> bufs(n, std::vector<unsigned char>(n * 3, 0));
  std::vector<ncclResult_t> rcs(n);
  onEveryRank(n, [&](int r) {
    std::string why;
    for (int i = 0; i < 3; i++) bufs[r][r * 3 + i] = static_cast<unsigned char>(r * 3 + i + 1);
    rcs[r] = res[r].bs->allGather(bufs[r].data(), 3, &why);
    if (rcs[r] == ncclSuccess) rcs[r] = res[r].bs->allGather(bufs[r].data(), 0, &why);
  });
  for (int r = 0; r < n; r++) {
    ASSERT_EQ(rcs[r], ncclSuccess);
    for (int i = 0; i < n * 3; i++) EXPECT_EQ(bufs[r][i], i + 1);
  }
}

TEST_F(BootstrapTest, BarrierHoldsEveryoneUntilTheLastArrives) {
  const int n = 5;
  auto res = runRanks(allRanks(freshId(), n));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  for (int round = 0; round < 3; round++) {
    std::vector<Clock::time_point> entered(n), left(n);
    std::vector<ncclResult_t> rcs(n);
    onEveryRank(n, [&](int r) {
      std::this_thread::sleep_for(std::chrono::milliseconds(((r + round) % n) * 30));
      std::string why;
      entered[r] = Clock::now();
      rcs[r] = res[r].bs->barrier(&why);
      left[r] = Clock::now();
    });
    auto lastIn = *std::max_element(entered.begin(), entered.end());
    for (int r = 0; r < n; r++) {
      EXPECT_EQ(rcs[r], ncclSuccess);
      EXPECT_GE(left[r], lastIn) << "rank " << r << " left the barrier before everyone entered";
    }
  }
}

TEST_F(BootstrapTest, MismatchedCallsAreDetected) {
  const int n = 3;
  auto res = runRanks(allRanks(freshId(), n));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  // Rank 1 asks for 8 bytes per rank where the others ask for 4: nobody may read garbage as data.
  std::vector<ncclResult_t> rcs(n);
  std::vector<std::string> whys(n);
  onEveryRank(n, [&](int r) {
    std::vector<char> buf(n * 8, 0);
    rcs[r] = res[r].bs->allGather(buf.data(), r == 1 ? 8 : 4, &whys[r]);
  });
  for (int r = 0; r < n; r++) EXPECT_NE(rcs[r], ncclSuccess) << "rank " << r;
  EXPECT_EQ(rcs[2], ncclInternalError) << whys[2];
  EXPECT_NE(whys[2].find("out of step with rank 1"), std::string::npos) << whys[2];
  EXPECT_NE(whys[2].find("allgather #1 of 8 bytes per rank"), std::string::npos) << whys[2];
}

TEST_F(BootstrapTest, ManyCommunicatorsAtOnce) {
  const int comms = 4, n = 4;
  std::vector<ncclUniqueId> ids(comms);
  for (auto& id : ids) id = freshId();
  std::vector<RankSpec> specs;
  for (int c = 0; c < comms; c++)
    for (int r = 0; r < n; r++) specs.push_back({r, n, ids[c], 0});
  auto res = runRanks(specs);
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  // Each communicator's allgather sees only its own ranks.
  std::vector<std::vector<int>> bufs(specs.size(), std::vector<int>(n, -1));
  std::vector<ncclResult_t> rcs(specs.size());
  onEveryRank(static_cast<int>(specs.size()), [&](int i) {
    int c = i / n, r = i % n;
    bufs[i][r] = c * 100 + r;
    std::string why;
    rcs[i] = res[i].bs->allGather(bufs[i].data(), sizeof(int), &why);
  });
  for (size_t i = 0; i < specs.size(); i++) {
    ASSERT_EQ(rcs[i], ncclSuccess);
    int c = static_cast<int>(i) / n;
    for (int r = 0; r < n; r++) EXPECT_EQ(bufs[i][r], c * 100 + r);
  }
}

// ------------------------------------------------------------------------------------------------
// Refusals

TEST_F(BootstrapTest, WrongSecretIsRefusedWhileTheOthersSucceed) {
  const int n = 3;
  ncclUniqueId id = freshId();
  ncclUniqueId bad = id;
  bootstrap::IdLayout layout;
  ASSERT_TRUE(bootstrap::decodeId(bad, &layout));
  layout.secret.w[1] ^= 0x1;
  bootstrap::encodeId(layout, &bad);
  // The impostor claims rank 1 before the real rank 1 shows up; the root must not let it take the slot.
  std::vector<RankSpec> specs = {{1, n, bad, 0}, {0, n, id, 0}, {1, n, id, 150}, {2, n, id, 150}};
  auto res = runRanks(specs);
  EXPECT_EQ(res[0].rc, ncclInvalidArgument) << res[0].why;
  EXPECT_NE(res[0].why.find("could not prove the communicator's secret"), std::string::npos) << res[0].why;
  std::vector<RankResult> good;
  for (size_t i = 1; i < res.size(); i++) {
    ASSERT_EQ(res[i].rc, ncclSuccess) << res[i].why;
    good.push_back(std::move(res[i]));
  }
  expectAllGatherWorks(good, 2);
}

TEST_F(BootstrapTest, NranksMismatchIsRefused) {
  const int n = 3;
  ncclUniqueId id = freshId();
  std::vector<RankSpec> specs = {{0, n, id, 0}, {3, n + 1, id, 100}, {1, n, id, 250}, {2, n, id, 250}};
  auto res = runRanks(specs);
  // Arrival order cannot tell which side is right: every rank fails, promptly, with one message
  // naming both claims.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(res[i].rc, ncclInvalidUsage) << res[i].why;
    EXPECT_NE(res[i].why.find("disagree on nranks"), std::string::npos) << res[i].why;
    EXPECT_NE(res[i].why.find("says 4"), std::string::npos) << res[i].why;
    EXPECT_NE(res[i].why.find("say 3"), std::string::npos) << res[i].why;
  }
}

TEST_F(BootstrapTest, DuplicateRankIsRefused) {
  const int n = 3;
  ncclUniqueId id = freshId();
  std::vector<RankSpec> specs = {{0, n, id, 0}, {1, n, id, 0}, {1, n, id, 150}, {2, n, id, 300}};
  auto res = runRanks(specs);
  EXPECT_EQ(res[0].rc, ncclSuccess) << res[0].why;
  EXPECT_EQ(res[3].rc, ncclSuccess) << res[3].why;
  // Exactly one of the two rank-1 claimants gets the slot.
  int ok = (res[1].rc == ncclSuccess) + (res[2].rc == ncclSuccess);
  EXPECT_EQ(ok, 1) << res[1].why << " / " << res[2].why;
  const RankResult& loser = res[1].rc == ncclSuccess ? res[2] : res[1];
  EXPECT_EQ(loser.rc, ncclInvalidUsage) << loser.why;
  EXPECT_NE(loser.why.find("rank 1 was claimed twice"), std::string::npos) << loser.why;
}

TEST_F(BootstrapTest, GarbageConnectionsDoNotDisturbTheRoot) {
  const int n = 3;
  ncclUniqueId id = freshId();
  bootstrap::IdLayout layout;
  ASSERT_TRUE(bootstrap::decodeId(id, &layout));
  // One client that connects and says nothing, one that sends junk of the right size.
  Socket silent, junk;
  std::string detail;
  ASSERT_EQ(Socket::connect(layout.root, Deadline::afterMs(5000), -1, &silent, &detail), IoStatus::kOk) << detail;
  ASSERT_EQ(Socket::connect(layout.root, Deadline::afterMs(5000), -1, &junk, &detail), IoStatus::kOk) << detail;
  std::vector<char> bytes(sizeof(bootstrap::RootHello), 'x');
  ASSERT_EQ(junk.sendAll(bytes.data(), bytes.size(), Deadline::afterMs(5000), -1, &detail), IoStatus::kOk);
  auto res = runRanks(allRanks(id, n));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  bootstrap::RootReply reply;  // junk where the intro belongs: refused before any challenge
  ASSERT_EQ(junk.recvAll(&reply, sizeof(reply), Deadline::afterMs(5000), -1, &detail), IoStatus::kOk) << detail;
  EXPECT_EQ(reply.code, bootstrap::kRootBadMagic);
}

// More silent connections than the root keeps waiting at once (4096): the root closes the oldest
// to make room, so the ranks that come after the flood still get in.
TEST_F(BootstrapTest, AFloodOfSilentConnectionsDoesNotLockTheRanksOut) {
  const int n = 3;
  const size_t kFlood = 4300;
  ncclUniqueId id = freshId();
  bootstrap::IdLayout layout;
  ASSERT_TRUE(bootstrap::decodeId(id, &layout));
  std::vector<Socket> flood(kFlood);
  std::string detail;
  for (Socket& s : flood)
    ASSERT_EQ(Socket::connect(layout.root, Deadline::afterMs(5000), -1, &s, &detail), IoStatus::kOk) << detail;
  auto res = runRanks(allRanks(id, n));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
}

// ------------------------------------------------------------------------------------------------
// Timeouts, peer death, abort

TEST_F(BootstrapTest, MissingRankTimesOutNamingIt) {
  env_.set("WEFT_TIMEOUT_MS", "1500");
  ASSERT_EQ(param::timeoutMs(), 1500);
  const int n = 5;
  ncclUniqueId id = freshId();
  std::vector<RankSpec> specs = {{0, n, id, 0}, {1, n, id, 0}, {3, n, id, 0}};
  auto t0 = Clock::now();
  auto res = runRanks(specs, param::timeoutMs());
  double ms = msSince(t0);
  for (auto& r : res) {
    EXPECT_EQ(r.rc, ncclRemoteError) << r.why;
    EXPECT_NE(r.why.find("missing ranks 2, 4"), std::string::npos) << r.why;
    EXPECT_NE(r.why.find("1500 ms"), std::string::npos) << r.why;
  }
  EXPECT_GE(ms, 1400);
  EXPECT_LT(ms, 6000);
  std::printf("[          ] missing-rank error after %.0f ms: %s\n", ms, res[0].why.c_str());
}

TEST_F(BootstrapTest, DeadPeerFailsTheRingPromptly) {
  const int n = 4;
  auto res = runRanks(allRanks(freshId(), n));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  res[2].bs.reset();  // rank 2 "dies": its sockets close
  std::vector<ncclResult_t> rcs(n, ncclSuccess);
  std::vector<std::string> whys(n);
  auto t0 = Clock::now();
  onEveryRank(n, [&](int r) {
    if (r == 2) return;
    std::vector<int> buf(n, r);
    rcs[r] = res[r].bs->allGather(buf.data(), sizeof(int), &whys[r]);
  });
  double ms = msSince(t0);
  for (int r : {0, 1, 3}) EXPECT_EQ(rcs[r], ncclRemoteError) << "rank " << r << ": " << whys[r];
  EXPECT_NE(whys[3].find("rank 3 got no data from rank 2"), std::string::npos) << whys[3];
  EXPECT_NE(whys[3].find("peer closed the connection"), std::string::npos) << whys[3];
  EXPECT_LT(ms, 5000) << "failure must not wait for the " << kTimeoutMs << " ms timeout";
  // The communicator stays failed.
  std::string why;
  int x = 0;
  EXPECT_EQ(res[3].bs->barrier(&why), ncclRemoteError);
  EXPECT_NE(why.find("earlier failure"), std::string::npos) << why;
  EXPECT_EQ(res[0].bs->allGather(&x, sizeof(x), &why), ncclRemoteError);
}

TEST_F(BootstrapTest, SilentPeerTimesOutNamingIt) {
  const int n = 3;
  auto res = runRanks(allRanks(freshId(), n), 800);
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  // Rank 1 never joins the allgather: rank 2 waits on it and gives up after 800 ms.
  std::vector<ncclResult_t> rcs(n, ncclSuccess);
  std::vector<std::string> whys(n);
  auto t0 = Clock::now();
  onEveryRank(n, [&](int r) {
    if (r == 1) return;
    std::vector<int> buf(n, r);
    rcs[r] = res[r].bs->allGather(buf.data(), sizeof(int), &whys[r]);
  });
  double ms = msSince(t0);
  EXPECT_EQ(rcs[2], ncclRemoteError);
  EXPECT_NE(whys[2].find("rank 2 got no data from rank 1"), std::string::npos) << whys[2];
  EXPECT_NE(whys[2].find("within 800 ms"), std::string::npos) << whys[2];
  EXPECT_EQ(rcs[0], ncclRemoteError) << whys[0];
  EXPECT_LT(ms, 5000);
}

TEST_F(BootstrapTest, AbortUnblocksAWaitingAllGather) {
  const int n = 2;
  auto res = runRanks(allRanks(freshId(), n));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  ncclResult_t rc = ncclSuccess;
  std::string why;
  auto t0 = Clock::now();
  std::thread waiter([&] {
    std::vector<int> buf(n * 1024, 0);
    rc = res[0].bs->allGather(buf.data(), 1024 * sizeof(int), &why);  // rank 1 never joins
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  res[0].bs->abort();
  waiter.join();
  double ms = msSince(t0);
  EXPECT_EQ(rc, ncclRemoteError);
  EXPECT_NE(why.find("aborted"), std::string::npos) << why;
  EXPECT_LT(ms, 3000);
  // Later calls fail at once, and the peer learns promptly that rank 0 is gone (here its barrier
  // meets the header of rank 0's abandoned allgather, or the closed connection behind it).
  EXPECT_EQ(res[0].bs->barrier(&why), ncclRemoteError);
  t0 = Clock::now();
  EXPECT_NE(res[1].bs->barrier(&why), ncclSuccess);
  EXPECT_NE(why.find("rank 0"), std::string::npos) << why;
  EXPECT_LT(msSince(t0), 3000);
}

TEST_F(BootstrapTest, CancelFdInterruptsSetup) {
  // Rank 1 never comes; the caller's cancel descriptor ends rank 0's wait long before the timeout.
  ncclUniqueId id = freshId();
  CancelEvent cancel;
  ASSERT_TRUE(cancel.ok());
  ncclResult_t rc = ncclSuccess;
  std::string why;
  std::unique_ptr<Bootstrap> bs;
  auto t0 = Clock::now();
  std::thread t([&] { rc = Bootstrap::create(id, 0, 2, kTimeoutMs, cancel.fd(), &bs, &why); });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  cancel.fire();
  t.join();
  EXPECT_EQ(rc, ncclRemoteError);
  EXPECT_EQ(bs, nullptr);
  EXPECT_NE(why.find("aborted"), std::string::npos) << why;
  EXPECT_LT(msSince(t0), 3000);
  // The root sees rank 0 leave and still completes when a full set arrives.
  auto res = runRanks(allRanks(id, 2));
  for (auto& r : res) EXPECT_EQ(r.rc, ncclSuccess) << r.why;
}

// ------------------------------------------------------------------------------------------------
// NCCL_COMM_ID and IPv6

TEST_F(BootstrapTest, CommIdEnvironmentRendezvous) {
  int port = freeTcpPort(AF_INET);
  ASSERT_GT(port, 0);
  env_.set("NCCL_COMM_ID", "127.0.0.1:" + std::to_string(port));
  const int n = 4;
  // Twice on the same port: the second rendezvous must get the port back from the first.
  for (int round = 0; round < 2; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    ncclUniqueId zero;
    memset(&zero, 0, sizeof(zero));
    ncclUniqueId fromApi;
    ASSERT_EQ(bootstrapGetUniqueId(&fromApi), ncclSuccess);
    std::vector<RankSpec> specs;
    // Rank 0 (which hosts the root) comes last; the others retry until it is up.
    for (int r = 0; r < n; r++) specs.push_back({r, n, r % 2 ? zero : fromApi, r == 0 ? 300 : 0});
    auto res = runRanks(specs);
    for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
    expectAllGatherWorks(res, 5);
  }
  // An id made under NCCL_COMM_ID names that address and hashes the same on every rank.
  ncclUniqueId a, b;
  ASSERT_EQ(bootstrapGetUniqueId(&a), ncclSuccess);
  ASSERT_EQ(bootstrapGetUniqueId(&b), ncclSuccess);
  EXPECT_EQ(bootstrapIdHash(a), bootstrapIdHash(b));
  bootstrap::IdLayout layout;
  ASSERT_TRUE(bootstrap::decodeId(a, &layout));
  EXPECT_EQ(socketAddressToString(layout.root), "127.0.0.1:" + std::to_string(port));
}

TEST_F(BootstrapTest, LocalIdIgnoresCommIdEnvironment) {
  int port = freeTcpPort(AF_INET);
  env_.set("NCCL_COMM_ID", "127.0.0.1:" + std::to_string(port));
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetLocalUniqueId(&id), ncclSuccess);
  bootstrap::IdLayout layout;
  ASSERT_TRUE(bootstrap::decodeId(id, &layout));
  EXPECT_NE(socketAddressPort(layout.root), port);
  auto res = runRanks(allRanks(id, 3));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
}

TEST_F(BootstrapTest, CommIdWithoutRankZeroTimesOut) {
  int port = freeTcpPort(AF_INET);
  env_.set("NCCL_COMM_ID", "127.0.0.1:" + std::to_string(port));
  ncclUniqueId zero;
  memset(&zero, 0, sizeof(zero));
  auto t0 = Clock::now();
  auto res = runRanks({{1, 2, zero, 0}}, 700);
  EXPECT_EQ(res[0].rc, ncclRemoteError);
  EXPECT_NE(res[0].why.find("could not reach the root at 127.0.0.1:" + std::to_string(port) + " within 700 ms"),
            std::string::npos)
      << res[0].why;
  EXPECT_LT(msSince(t0), 5000);
}

TEST_F(BootstrapTest, IPv6Loopback) {
  if (!ipv6LoopbackUsable()) GTEST_SKIP() << "IPv6 loopback (::1) is not available on this machine";
  env_.set("NCCL_SOCKET_IFNAME", "lo");
  env_.set("NCCL_SOCKET_FAMILY", "AF_INET6");
  ncclUniqueId id = freshId();
  bootstrap::IdLayout layout;
  ASSERT_TRUE(bootstrap::decodeId(id, &layout));
  EXPECT_EQ(layout.root.sa.sa_family, AF_INET6);
  EXPECT_EQ(socketAddressToString(layout.root).rfind("[::1]:", 0), 0u) << socketAddressToString(layout.root);
  auto res = runRanks(allRanks(id, 3));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  expectAllGatherWorks(res, 64);

  // NCCL_COMM_ID in bracket form.
  int port = freeTcpPort(AF_INET6);
  ASSERT_GT(port, 0);
  env_.set("NCCL_COMM_ID", "[::1]:" + std::to_string(port));
  ncclUniqueId zero;
  memset(&zero, 0, sizeof(zero));
  auto res2 = runRanks(allRanks(zero, 2));
  for (auto& r : res2) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  expectAllGatherWorks(res2, 4);
}

// ------------------------------------------------------------------------------------------------
// Speed

TEST_F(BootstrapTest, EightRankInitIsFast) {
  const int n = 8;
  std::vector<double> times;
  for (int rep = 0; rep < 5; rep++) {
    auto t0 = Clock::now();
    ncclUniqueId id = freshId();
    auto res = runRanks(allRanks(id, n));
    times.push_back(msSince(t0));
    for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  }
  std::sort(times.begin(), times.end());
  std::printf("[          ] 8-rank bootstrap (id + rendezvous + ring): min %.2f ms, median %.2f ms, max %.2f ms\n",
              times.front(), times[times.size() / 2], times.back());
  EXPECT_LT(times[times.size() / 2], 1000.0);
}

}  // namespace
}  // namespace weft
