// What a stranger on the network can and cannot do to a rendezvous: the secret never crosses the
// wire, a client that cannot prove it gets no rank slot under NCCL_COMM_ID with WEFT_COMM_SECRET,
// and connections to a rank's own listener (where point-to-point messages arrive) cannot delay the
// real messages. Also the SHA-256 and HMAC the proofs are made with, against published vectors.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/digest.h"
#include "bootstrap/protocol.h"
#include "bootstrap_ranks.h"
#include "free_port.h"
#include "sockets/socket.h"

namespace weft {
namespace {

using namespace bootstrap_test;

class BootstrapAuthTest : public BootstrapTest {};

std::string hex(const Digest256& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

// FIPS 180-4's examples and RFC 4231's HMAC-SHA-256 test cases 1, 2 and 6.
TEST(Digest, Sha256AndHmacMatchThePublishedVectors) {
  EXPECT_EQ(hex(sha256("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("", 0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char* two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(hex(sha256(two, strlen(two))), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(hex(sha256(million.data(), million.size())),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  std::vector<uint8_t> key1(20, 0x0b);
  ByteSpan hi[] = {{"Hi There", 8}};
  EXPECT_EQ(hex(hmacSha256(key1.data(), key1.size(), hi, 1)),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // The message split in two parts gives the same MAC as in one.
  ByteSpan jefe[] = {{"what do ya want ", 16}, {"for nothing?", 12}};
  EXPECT_EQ(hex(hmacSha256("Jefe", 4, jefe, 2)), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  std::vector<uint8_t> longKey(131, 0xaa);
  const char* msg = "Test Using Larger Than Block-Size Key - Hash Key First";
  ByteSpan m[] = {{msg, strlen(msg)}};
  EXPECT_EQ(hex(hmacSha256(longKey.data(), longKey.size(), m, 1)),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

// A rank joining a root sends only a proof: its secret's bytes appear nowhere in what it sends.
TEST_F(BootstrapAuthTest, TheSecretNeverCrossesTheWire) {
  Socket fakeRoot;
  SocketAddress any, addr;
  std::string why;
  ASSERT_TRUE(parseHostPort("127.0.0.1:" + std::to_string(freeTcpPort(AF_INET)), AddressFamily::kAny, &any, &why))
      << why;
  ASSERT_EQ(Socket::listen(any, false, &fakeRoot, &addr, &why), ncclSuccess) << why;
  bootstrap::IdLayout layout;
  memset(&layout, 0, sizeof(layout));
  layout.magic = bootstrap::kMagic;
  layout.version = bootstrap::kProtocolVersion;
  layout.kind = static_cast<uint16_t>(bootstrap::IdKind::kRootStarted);
  ASSERT_TRUE(bootstrap::randomSecret(&layout.secret));
  layout.root = addr;
  ncclUniqueId id;
  bootstrap::encodeId(layout, &id);

  std::thread rank([&] {
    std::unique_ptr<Bootstrap> bs;
    std::string rankWhy;
    (void)Bootstrap::create(id, 0, 2, 3000, &bs, &rankWhy);  // fails: this root never answers
  });
  Socket conn;
  SocketAddress from;
  ASSERT_EQ(fakeRoot.accept(Deadline::afterMs(5000), -1, &conn, &from, &why), IoStatus::kOk) << why;
  bootstrap::RootIntro intro;
  ASSERT_EQ(conn.recvAll(&intro, sizeof(intro), Deadline::afterMs(5000), -1, &why), IoStatus::kOk) << why;
  EXPECT_EQ(intro.magic, bootstrap::kMagic);
  bootstrap::RootChallenge challenge;
  memset(&challenge, 0, sizeof(challenge));
  challenge.magic = bootstrap::kMagic;
  challenge.version = bootstrap::kProtocolVersion;
  for (size_t i = 0; i < sizeof(challenge.nonce); i++) challenge.nonce[i] = static_cast<uint8_t>(i * 7);
  ASSERT_EQ(conn.sendAll(&challenge, sizeof(challenge), Deadline::afterMs(5000), -1, &why), IoStatus::kOk);
  bootstrap::RootHello hello;
  ASSERT_EQ(conn.recvAll(&hello, sizeof(hello), Deadline::afterMs(5000), -1, &why), IoStatus::kOk) << why;
  conn.close();
  rank.join();

  std::string wire(reinterpret_cast<const char*>(&hello), sizeof(hello));
  std::string secret(reinterpret_cast<const char*>(&layout.secret), sizeof(layout.secret));
  EXPECT_EQ(wire.find(secret), std::string::npos);
  for (int half = 0; half < 2; half++)
    EXPECT_EQ(wire.find(secret.substr(half * 8, 8)), std::string::npos) << "half " << half;
  EXPECT_TRUE(digestEqual(hello.proof, bootstrap::rootHelloProof(layout.secret, challenge, hello)));
  EXPECT_EQ(hello.rank, 0);
  EXPECT_EQ(hello.nranks, 2);
}

// Under NCCL_COMM_ID with WEFT_COMM_SECRET, a client that derives the secret from the address (as
// anyone can) and claims a rank first is refused; the real ranks, all of them, get in.
TEST_F(BootstrapAuthTest, CommIdWithASecretKeepsOutAClientThatOnlyKnowsTheAddress) {
  int port = freeTcpPort(AF_INET);
  ASSERT_GT(port, 0);
  const std::string commId = "127.0.0.1:" + std::to_string(port);
  env_.set("NCCL_COMM_ID", commId);
  env_.unset("WEFT_COMM_SECRET");
  bool keyed = true;
  bootstrap::IdLayout impostor;
  memset(&impostor, 0, sizeof(impostor));
  impostor.magic = bootstrap::kMagic;
  impostor.version = bootstrap::kProtocolVersion;
  impostor.kind = static_cast<uint16_t>(bootstrap::IdKind::kRootStarted);  // joins, never serves
  impostor.secret = bootstrap::secretForCommId(commId, &keyed);
  EXPECT_FALSE(keyed);
  std::string why;
  ASSERT_TRUE(parseHostPort(commId, AddressFamily::kAny, &impostor.root, &why)) << why;
  ncclUniqueId impostorId;
  bootstrap::encodeId(impostor, &impostorId);

  env_.set("WEFT_COMM_SECRET", "correct horse battery staple");
  ncclUniqueId realId;
  ASSERT_EQ(bootstrapGetUniqueId(&realId), ncclSuccess);
  const int n = 4;
  // Rank 0 serves the root; the impostor claims rank 3 as soon as it is up, the real rank 3 later.
  std::vector<RankSpec> specs = {
      {3, n, impostorId, 100}, {0, n, realId, 0}, {1, n, realId, 0}, {2, n, realId, 0}, {3, n, realId, 600}};
  auto res = runRanks(specs);
  EXPECT_EQ(res[0].rc, ncclInvalidArgument) << res[0].why;
  EXPECT_NE(res[0].why.find("could not prove the communicator's secret"), std::string::npos) << res[0].why;
  std::vector<RankResult> good;
  for (size_t i = 1; i < res.size(); i++) {
    ASSERT_EQ(res[i].rc, ncclSuccess) << res[i].why;
    good.push_back(std::move(res[i]));
  }
  expectAllGatherWorks(good, 3);
}

// Silent strangers and a junk sender at a rank's listener: the real point-to-point message is taken
// as soon as it arrives (each stranger used to hold tryRecv for up to 5 s).
TEST_F(BootstrapAuthTest, StrangersAtARankListenerDoNotDelayItsMessages) {
  const int n = 2;
  auto res = runRanks(allRanks(freshId(), n));
  for (auto& r : res) ASSERT_EQ(r.rc, ncclSuccess) << r.why;
  const SocketAddress target = res[1].bs->listenAddress();
  std::vector<Socket> strangers(4);
  std::string why;
  for (Socket& s : strangers)
    ASSERT_EQ(Socket::connect(target, Deadline::afterMs(5000), -1, &s, &why), IoStatus::kOk) << why;
  // One that sends a header claiming a huge body, one that sends a well-formed but unproven one.
  bootstrap::P2pHeader h;
  memset(&h, 0, sizeof(h));
  h.magic = bootstrap::kP2pMagic;
  h.from = 0;
  h.to = 1;
  h.tag = 7;
  h.bytes = uint64_t(1) << 40;
  Socket huge, forged;
  ASSERT_EQ(Socket::connect(target, Deadline::afterMs(5000), -1, &huge, &why), IoStatus::kOk) << why;
  ASSERT_EQ(huge.sendAll(&h, sizeof(h), Deadline::afterMs(5000), -1, &why), IoStatus::kOk) << why;
  h.bytes = 4;
  const int fake = 666;
  ASSERT_EQ(Socket::connect(target, Deadline::afterMs(5000), -1, &forged, &why), IoStatus::kOk) << why;
  ASSERT_EQ(forged.sendAll(&h, sizeof(h), Deadline::afterMs(5000), -1, &why), IoStatus::kOk) << why;
  ASSERT_EQ(forged.sendAll(&fake, sizeof(fake), Deadline::afterMs(5000), -1, &why), IoStatus::kOk) << why;

  // The real message arrives after all of them.
  const int real = 42;
  ASSERT_EQ(res[0].bs->send(1, 7, &real, sizeof(real), &why), ncclSuccess) << why;
  bool got = false;
  int value = 0;
  auto t0 = Clock::now();
  while (!got && msSince(t0) < 20000) {
    ASSERT_EQ(res[1].bs->tryRecv(0, 7, &value, sizeof(value), &got, &why), ncclSuccess) << why;
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(got);
  EXPECT_EQ(value, real) << "the forged message was delivered";
  // Generous for a loaded machine, far below one stranger's old 5 s hold.
  EXPECT_LT(msSince(t0), 2000);
}

}  // namespace
}  // namespace weft
