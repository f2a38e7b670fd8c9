// What Weft's bootstrap puts in a ncclUniqueId and on the wire between ranks and the root. Shared
// by unique_id.cc (makes ids), root.cc (serves a rendezvous) and bootstrap.cc (joins one); the
// functions are in protocol.cc. All
// ranks of a job run the same Weft build, so structs are sent as raw bytes (padding zeroed).
#pragma once
#include <cstdint>
#include <string>

#include "nccl.h"
#include "sockets/socket.h"

namespace weft::bootstrap {

constexpr uint32_t kMagic = 0x54464557;  // "WEFT" in memory order on little-endian hosts
// Bumped whenever an id or message layout changes, so mixed Weft versions refuse each other
// instead of misreading bytes.
constexpr uint16_t kProtocolVersion = 1;

// The random token that ties every rank and the root of one communicator together. It keeps a
// rank holding a stale or foreign id out of a rendezvous; it is not a cryptographic credential
// (it crosses the network in the clear, as the id does).
struct Secret {
  uint64_t w[2];
};
bool secretEqual(const Secret& a, const Secret& b);
// A secret derived from NCCL_COMM_ID's text, for jobs that rendezvous without a unique id.
Secret secretFromString(const std::string& text);
bool randomSecret(Secret* out);

// How the id's root comes to exist.
enum class IdKind : uint16_t {
  kRootStarted = 1,  // ncclGetUniqueId started the root in its process
  kCommIdEnv = 2,    // NCCL_COMM_ID: rank 0 starts the root on `root` inside Bootstrap::create
};

// The layout of ncclUniqueId::internal (the rest of the 128 bytes is zero).
struct IdLayout {
  uint32_t magic;
  uint16_t version;
  uint16_t kind;
  Secret secret;
  SocketAddress root;
};
static_assert(sizeof(IdLayout) <= sizeof(ncclUniqueId), "the id layout must fit in ncclUniqueId");
void encodeId(const IdLayout& layout, ncclUniqueId* id);
// False when the id is not a Weft id of this protocol version (or its address is unusable).
bool decodeId(const ncclUniqueId& id, IdLayout* layout);

// Rank -> root: who I am and where my peers can reach me.
struct RootHello {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  Secret secret;
  int32_t rank;
  int32_t nranks;
  // The rank's own timeout. The root adopts the first rank's, so that its verdict (which names the
  // missing ranks) reaches the ranks before their own, shorter or longer, patience runs out.
  int64_t timeoutMs;
  SocketAddress listen;
};

// Root -> rank, followed by textLen bytes: the address table (nranks SocketAddress) for kOk,
// a human-readable reason otherwise.
enum RootCode : int32_t {
  kRootOk = 0,
  kRootBadMagic = 1,        // not a Weft rank of this protocol version
  kRootBadSecret = 2,       // the id's secret is not this root's
  kRootBadNranks = 3,       // nranks < 1 or > kMaxRanks
  kRootNranksMismatch = 4,  // nranks differs from the ranks that came first
  kRootRankOutOfRange = 5,
  kRootDuplicateRank = 6,
  kRootTimeout = 7,  // not every rank arrived within the timeout
};
struct RootReply {
  uint32_t magic;
  int32_t code;
  int32_t nranks;
  uint32_t textLen;
};
// Replies longer than this are not believed (a reply is a table or a sentence).
constexpr uint32_t kMaxReplyText = 64u << 20;
// The most ranks a rendezvous can hold: their address table must fit in one reply. The root
// refuses a larger nranks before it sizes anything by it.
constexpr int kMaxRanks = static_cast<int>(kMaxReplyText / sizeof(SocketAddress));
// A rank's check of the reply header before it reads the textLen bytes that follow: "" when they
// may be read, else what is wrong with the header (a malformed answer, a table of the wrong size).
std::string rootReplyProblem(const RootReply& reply, int nranks);
// The rank's verdict on a refusal (reply code other than kRootOk) whose reason is text: the
// result its init fails with, and in *why the message. who: "bootstrap: rank 3"; root: the root's
// address in words; fromCommIdEnv: the rendezvous came from NCCL_COMM_ID (a hint for the cause).
ncclResult_t rootRefusal(int32_t code, const std::string& text, const std::string& who, int nranks,
                         const std::string& root, bool fromCommIdEnv, std::string* why);

// Rank r -> rank r+1 on the ring connection, so the acceptor knows the caller is its predecessor
// of this communicator and not a stray connection.
struct RingHello {
  uint32_t magic;
  int32_t rank;
  Secret secret;
};

// True when a connection to rank `self`'s ring listener introduced itself as its predecessor prev
// of this communicator; anything else is a stranger.
bool ringHelloExpected(const RingHello& got, int prev, const Secret& secret);

// Opens every operation on the ring (allgather, barrier), so that ranks whose calls disagree fail
// with a message instead of reading each other's bytes as data.
constexpr uint32_t kOpMagic = 0x4f504557;  // "WEPO"
struct OpHeader {
  uint32_t magic;
  uint32_t kind;   // 0 allgather, 1 barrier
  uint64_t seq;    // 1 for the communicator's first operation, then +1 each
  uint64_t bytes;  // per rank
};
bool opHeadersMatch(const OpHeader& a, const OpHeader& b);
// "allgather #3 of 64 bytes per rank", or what the bytes are not.
std::string describeOp(const OpHeader& h);

// Opens every point-to-point message between ranks (connection handles).
constexpr uint32_t kP2pMagic = 0x50325057;  // "WP2P"
struct P2pHeader {
  uint32_t magic;
  int32_t from;
  Secret secret;
  uint64_t tag;
  uint64_t bytes;
};
// A message larger than this is refused: point-to-point messages carry connection handles.
constexpr uint64_t kP2pMaxBytes = 1 << 20;
// True when a receiver of a communicator of nranks may read the header's body: the magic, the
// secret, a sender that is a rank, and a size within kP2pMaxBytes.
bool p2pHeaderAcceptable(const P2pHeader& h, int nranks, const Secret& secret);

// "3, 5-7, 9": a compact list of rank numbers for error messages.
std::string formatRankList(const int* ranks, size_t count, size_t maxChars = 2000);

}  // namespace weft::bootstrap
