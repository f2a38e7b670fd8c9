// The bootstrap's decisions on bytes alone: the root's verdicts on hellos (Rendezvous), a rank's
// checks of the root's reply and of the headers peers send. The same functions are fuzzed
// (tests/fuzz); inputs the fuzzers found to break them are kept here.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/protocol.h"
#include "bootstrap/rendezvous.h"
#include "sockets/address.h"

namespace weft::bootstrap {
namespace {

const Secret kSecret{{0x0123456789abcdefull, 0xfedcba9876543210ull}};

SocketAddress loopback(uint16_t port) {
  SocketAddress a = emptySocketAddress();
  a.v4.sin_family = AF_INET;
  a.v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.v4.sin_port = htons(port);
  return a;
}

// The challenge every hello here answers (the root sends a fresh one per connection).
const RootChallenge kChallenge{kMagic, kProtocolVersion, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};

// A hello proven with kSecret (prove() again after changing a field: the proof covers them all).
RootHello prove(RootHello h, const Secret& secret = kSecret) {
  h.proof = rootHelloProof(secret, kChallenge, h);
  return h;
}

RootHello hello(int rank, int nranks, uint16_t port = 5000) {
  RootHello h;
  memset(&h, 0, sizeof(h));
  h.magic = kMagic;
  h.version = kProtocolVersion;
  h.rank = rank;
  h.nranks = nranks;
  h.timeoutMs = 30000;
  h.listen = loopback(port);
  return prove(h);
}

using Action = Rendezvous::Action;

TEST(Rendezvous, EveryRankOnceCompletesTheTable) {
  Rendezvous rdv(kSecret, "root");
  EXPECT_FALSE(rdv.started());
  EXPECT_EQ(rdv.admit(hello(1, 2, 5001), kChallenge, "a").action, Action::kAdmit);
  EXPECT_TRUE(rdv.started());
  EXPECT_EQ(rdv.nranks(), 2);
  EXPECT_FALSE(rdv.complete());
  EXPECT_EQ(rdv.missing(), std::vector<int>{0});
  EXPECT_EQ(rdv.admit(hello(0, 2, 5000), kChallenge, "b").action, Action::kAdmit);
  EXPECT_TRUE(rdv.complete());
  EXPECT_EQ(socketAddressPort(rdv.table()[0]), 5000);
  EXPECT_EQ(socketAddressPort(rdv.table()[1]), 5001);
}

TEST(Rendezvous, RefusesStrangersDuplicatesAndRanksOutOfRange) {
  Rendezvous rdv(kSecret, "root");
  Secret other = kSecret;
  other.w[1] ^= 1;
  RootHello foreign = prove(hello(0, 2), other);
  Rendezvous::Verdict v = rdv.admit(foreign, kChallenge, "x");
  EXPECT_EQ(v.action, Action::kRefuse);
  EXPECT_EQ(v.code, kRootBadSecret);
  EXPECT_FALSE(rdv.started()) << "a stranger must not fix the communicator's size";
  RootHello old = hello(0, 2);
  old.version = kProtocolVersion + 1;
  EXPECT_EQ(rdv.admit(old, kChallenge, "x").code, kRootBadMagic);
  EXPECT_EQ(rdv.admit(hello(0, 0), kChallenge, "x").code, kRootBadNranks);
  EXPECT_EQ(rdv.admit(hello(0, 2), kChallenge, "x").action, Action::kAdmit);
  v = rdv.admit(hello(0, 2, 6000), kChallenge, "y");
  EXPECT_EQ(v.code, kRootDuplicateRank);
  EXPECT_NE(v.text.find("claimed twice"), std::string::npos) << v.text;
  EXPECT_EQ(rdv.admit(hello(2, 2), kChallenge, "z").code, kRootRankOutOfRange);
  EXPECT_EQ(rdv.admit(hello(-1, 2), kChallenge, "z").code, kRootRankOutOfRange);
  RootHello noAddress = hello(1, 2);
  noAddress.listen = emptySocketAddress();
  noAddress = prove(noAddress);
  EXPECT_EQ(rdv.admit(noAddress, kChallenge, "z").code, kRootBadMagic);
  EXPECT_EQ(rdv.arrived(), 1);
}

// The first hello sized the root's tables by its nranks, whatever it was: INT_MAX asked for 60 GB
// of addresses, which kills the process that hosts the root (the fuzz target bootstrap_root
// slowed to one input a second on such hellos). A table must fit one reply, so an nranks beyond
// that is refused before anything is sized by it.
TEST(Rendezvous, NranksBeyondWhatOneReplyHoldsIsRefused) {
  Rendezvous rdv(kSecret, "root");
  for (int nranks : {kMaxRanks + 1, 2147483647}) {
    Rendezvous::Verdict v = rdv.admit(hello(0, nranks), kChallenge, "x");
    EXPECT_EQ(v.action, Action::kRefuse);
    EXPECT_EQ(v.code, kRootBadNranks);
    EXPECT_NE(v.text.find(std::to_string(kMaxRanks)), std::string::npos) << v.text;
    EXPECT_FALSE(rdv.started());
  }
  EXPECT_LE(uint64_t(kMaxRanks) * sizeof(SocketAddress), kMaxReplyText);
}

TEST(Rendezvous, DisagreementOnNranksFailsEveryRankFromThenOn) {
  Rendezvous rdv(kSecret, "root");
  EXPECT_EQ(rdv.admit(hello(0, 3), kChallenge, "a").action, Action::kAdmit);
  Rendezvous::Verdict v = rdv.admit(hello(1, 4), kChallenge, "b");
  EXPECT_EQ(v.action, Action::kFailAll);
  EXPECT_EQ(v.code, kRootNranksMismatch);
  EXPECT_NE(v.text.find("says 4"), std::string::npos) << v.text;
  EXPECT_EQ(rdv.arrived(), 0);
  v = rdv.admit(hello(1, 3), kChallenge, "c");
  EXPECT_EQ(v.action, Action::kRefuse);
  EXPECT_EQ(v.code, kRootNranksMismatch);
}

TEST(Rendezvous, ARankThatLeftMayComeBack) {
  Rendezvous rdv(kSecret, "root");
  EXPECT_EQ(rdv.admit(hello(1, 2, 5001), kChallenge, "a").action, Action::kAdmit);
  rdv.leave(1);
  EXPECT_EQ(rdv.arrived(), 0);
  rdv.leave(1);  // twice, or a rank never admitted: nothing changes
  rdv.leave(7);
  EXPECT_EQ(rdv.arrived(), 0);
  EXPECT_EQ(rdv.admit(hello(1, 2, 5002), kChallenge, "a").action, Action::kAdmit);
  EXPECT_EQ(socketAddressPort(rdv.table()[1]), 5002);
}

TEST(BootstrapProtocol, RankChecksTheRootsReply) {
  RootReply r{};
  r.magic = kMagic;
  r.code = kRootOk;
  r.nranks = 2;
  r.textLen = 2 * sizeof(SocketAddress);
  EXPECT_EQ(rootReplyProblem(r, 2), "");
  EXPECT_NE(rootReplyProblem(r, 3), "");
  r.textLen = kMaxReplyText + 1;
  EXPECT_NE(rootReplyProblem(r, 2), "");
  r.code = kRootBadSecret;
  r.textLen = 10;
  EXPECT_EQ(rootReplyProblem(r, 2), "");
  r.magic = 0;
  EXPECT_NE(rootReplyProblem(r, 2), "");

  std::string why;
  EXPECT_EQ(rootRefusal(kRootBadSecret, "stale id", "bootstrap: rank 1", 2, "root", true, &why), ncclInvalidArgument);
  EXPECT_NE(why.find("NCCL_COMM_ID"), std::string::npos) << why;
  EXPECT_EQ(rootRefusal(kRootTimeout, "only 1 of 2", "bootstrap: rank 1", 2, "root", false, &why), ncclRemoteError);
  EXPECT_EQ(rootRefusal(kRootDuplicateRank, "twice", "bootstrap: rank 1", 2, "root", false, &why), ncclInvalidUsage);
  EXPECT_EQ(rootRefusal(1234, "?", "bootstrap: rank 1", 2, "root", false, &why), ncclRemoteError);
  EXPECT_NE(why.find("unknown refusal code 1234"), std::string::npos) << why;
}

TEST(BootstrapProtocol, PeersHeadersAreChecked) {
  const SocketAddress self = loopback(6000);
  RingHello ring{kMagic, 3, ringHelloProof(kSecret, 3, self)};
  EXPECT_TRUE(ringHelloExpected(ring, 3, kSecret, self));
  EXPECT_FALSE(ringHelloExpected(ring, 2, kSecret, self));
  EXPECT_FALSE(ringHelloExpected(ring, 3, kSecret, loopback(6001)));  // a proof for another edge
  P2pHeader p2p{kP2pMagic, 1, 0, 0, 7, 64, {}};
  EXPECT_TRUE(p2pHeaderAcceptable(p2p, 0, 2));
  EXPECT_FALSE(p2pHeaderAcceptable(p2p, 1, 2));  // addressed to rank 0
  EXPECT_FALSE(p2pHeaderAcceptable(p2p, 0, 1));  // from no rank of one
  p2p.bytes = kP2pMaxBytes + 1;
  EXPECT_FALSE(p2pHeaderAcceptable(p2p, 0, 2));
  OpHeader a{kOpMagic, 0, 1, 64}, b{kOpMagic, 1, 1, 64};
  EXPECT_TRUE(opHeadersMatch(a, a));
  EXPECT_FALSE(opHeadersMatch(a, b));
  EXPECT_EQ(describeOp(b), "barrier #1 of 64 bytes per rank");
}

}  // namespace
}  // namespace weft::bootstrap
