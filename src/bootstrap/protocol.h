// What Weft's bootstrap puts in a ncclUniqueId and on the wire between ranks and the root. Shared
// by unique_id.cc (makes ids), root.cc (serves a rendezvous) and bootstrap.cc (joins one); the
// functions are in protocol.cc. All
// ranks of a job run the same Weft build, so structs are sent as raw bytes (padding zeroed).
#pragma once
#include <cstdint>
#include <string>

#include "base/digest.h"
#include "nccl.h"
#include "sockets/socket.h"

namespace weft::bootstrap {

constexpr uint32_t kMagic = 0x54464557;  // "WEFT" in memory order on little-endian hosts
// Bumped whenever an id or message layout changes, so mixed Weft versions refuse each other
// instead of misreading bytes. Version 2: the secret is proven (HMAC), never sent.
constexpr uint16_t kProtocolVersion = 2;

// The random key that ties every rank and the root of one communicator together. It never
// crosses the network: each connection carries a Proof made with it instead, so whoever watches
// the traffic learns nothing that lets it join. It lives in the unique id (random) or comes from
// WEFT_COMM_SECRET (under NCCL_COMM_ID), and is only as private as the id is.
struct Secret {
  uint64_t w[2];
};
bool secretEqual(const Secret& a, const Secret& b);
// The secret of a job that meets through NCCL_COMM_ID: keyed with WEFT_COMM_SECRET when set
// (*userKeyed = true), else derived from the address text alone, which anyone can do.
Secret secretForCommId(const std::string& commId, bool* userKeyed);
bool randomSecret(Secret* out);

// HMAC-SHA-256 keyed with the secret over a purpose string and the message's bytes: proves that the
// sender holds the secret and binds the proof to this one message.
using Proof = Digest256;
Proof makeProof(const Secret& secret, const char* purpose, const ByteSpan* parts, size_t nparts);

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

// Rank -> root, first: the protocol it speaks. The root answers only a Weft rank of its version, and
// a rank and a root whose TLS settings differ hear at once what is wrong (a TLS root answers these
// plaintext bytes with an alert; a plaintext root sees a TLS record where this should be).
struct RootIntro {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
};

// Root -> every connection that introduced itself: a fresh nonce that the rank's proof must cover, so a hello
// recorded from another rendezvous (or an earlier attempt) cannot be replayed.
struct RootChallenge {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  uint8_t nonce[16];
};

// Rank -> root: who I am and where my peers can reach me.
struct RootHello {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  int32_t rank;
  int32_t nranks;
  // The rank's own timeout. The root adopts the first rank's, so that its verdict (which names the
  // missing ranks) reaches the ranks before their own, shorter or longer, patience runs out.
  int64_t timeoutMs;
  SocketAddress listen;
  Proof proof;  // over the challenge's nonce and every field above
};
Proof rootHelloProof(const Secret& secret, const RootChallenge& challenge, const RootHello& hello);

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
// of this communicator and not a stray connection. The proof covers the rank and the acceptor's
// address, so it opens no other edge of the ring.
struct RingHello {
  uint32_t magic;
  int32_t rank;
  Proof proof;
};
Proof ringHelloProof(const Secret& secret, int32_t rank, const SocketAddress& to);

// Opens every point-to-point message (Bootstrap::send); the proof covers the header and the body.
constexpr uint32_t kP2pMagic = 0x50325057;  // "WP2P"
struct P2pHeader {
  uint32_t magic;
  int32_t from;
  int32_t to;
  uint32_t reserved;
  uint64_t tag;
  uint64_t bytes;
  Proof proof;
};
Proof p2pProof(const Secret& secret, const P2pHeader& header, const void* body);

// True when a connection to rank `self`'s ring listener introduced itself as its predecessor prev
// of this communicator; anything else is a stranger.
// `self` is the acceptor's own listen address, which the proof covers.
bool ringHelloExpected(const RingHello& got, int prev, const Secret& secret, const SocketAddress& self);

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

// A message larger than this is refused: point-to-point messages carry connection handles.
constexpr uint64_t kP2pMaxBytes = 1 << 20;
// True when rank `me` of a communicator of nranks may read the header's body: the magic, a message
// for this rank from a rank, and a size within kP2pMaxBytes. (The proof is checked with the body.)
bool p2pHeaderAcceptable(const P2pHeader& h, int me, int nranks);

// "3, 5-7, 9": a compact list of rank numbers for error messages.
std::string formatRankList(const int* ranks, size_t count, size_t maxChars = 2000);

}  // namespace weft::bootstrap
