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
  kRootBadNranks = 3,       // nranks < 1
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

// Rank r -> rank r+1 on the ring connection, so the acceptor knows the caller is its predecessor
// of this communicator and not a stray connection.
struct RingHello {
  uint32_t magic;
  int32_t rank;
  Secret secret;
};

// "3, 5-7, 9": a compact list of rank numbers for error messages.
std::string formatRankList(const int* ranks, size_t count, size_t maxChars = 2000);

}  // namespace weft::bootstrap
