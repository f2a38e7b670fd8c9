#include "bootstrap/protocol.h"

#include <cstring>
#include <vector>

#include "base/hash.h"
#include "base/params.h"
#include "sockets/random.h"

namespace weft::bootstrap {

bool secretEqual(const Secret& a, const Secret& b) {
  // No early exit: how long a refusal takes should not hint at how much of a guess was right.
  uint64_t diff = (a.w[0] ^ b.w[0]) | (a.w[1] ^ b.w[1]);
  return diff == 0;
}

Secret secretForCommId(const std::string& commId, bool* userKeyed) {
  const std::string key = param::commSecret();
  *userKeyed = !key.empty();
  Secret s;
  if (key.empty()) {
    s.w[0] = hashBytes(commId.data(), commId.size(), 0x5745465453454352ull);
    s.w[1] = hashBytes(commId.data(), commId.size(), 0x434f4d4d49443a3aull);
    return s;
  }
  const char purpose[] = "weft comm id secret";
  ByteSpan parts[] = {{purpose, sizeof(purpose)}, {commId.data(), commId.size()}};
  Digest256 d = hmacSha256(key.data(), key.size(), parts, 2);
  memcpy(&s, d.data(), sizeof(s));
  return s;
}

Proof makeProof(const Secret& secret, const char* purpose, const ByteSpan* parts, size_t nparts) {
  std::vector<ByteSpan> all;
  all.reserve(nparts + 1);
  all.push_back({purpose, strlen(purpose) + 1});
  all.insert(all.end(), parts, parts + nparts);
  return hmacSha256(&secret, sizeof(secret), all.data(), all.size());
}

Proof rootHelloProof(const Secret& secret, const RootChallenge& challenge, const RootHello& hello) {
  RootHello bare = hello;
  memset(&bare.proof, 0, sizeof(bare.proof));
  ByteSpan parts[] = {{challenge.nonce, sizeof(challenge.nonce)}, {&bare, sizeof(bare)}};
  return makeProof(secret, "root hello", parts, 2);
}

Proof ringHelloProof(const Secret& secret, int32_t rank, const SocketAddress& to) {
  ByteSpan parts[] = {{&rank, sizeof(rank)}, {&to, sizeof(to)}};
  return makeProof(secret, "ring hello", parts, 2);
}

Proof p2pProof(const Secret& secret, const P2pHeader& header, const void* body) {
  P2pHeader bare = header;
  memset(&bare.proof, 0, sizeof(bare.proof));
  ByteSpan parts[] = {{&bare, sizeof(bare)}, {body, static_cast<size_t>(header.bytes)}};
  return makeProof(secret, "p2p message", parts, 2);
}

bool randomSecret(Secret* out) { return randomBytes(out, sizeof(*out)); }

void encodeId(const IdLayout& layout, ncclUniqueId* id) {
  memset(id, 0, sizeof(*id));
  IdLayout clean;
  memset(&clean, 0, sizeof(clean));  // padding bytes too: the id is hashed byte by byte
  clean.magic = layout.magic;
  clean.version = layout.version;
  clean.kind = layout.kind;
  clean.secret = layout.secret;
  clean.root = layout.root;
  memcpy(id, &clean, sizeof(clean));
}

bool decodeId(const ncclUniqueId& id, IdLayout* layout) {
  memcpy(layout, &id, sizeof(*layout));
  if (layout->magic != kMagic || layout->version != kProtocolVersion) return false;
  if (layout->kind != static_cast<uint16_t>(IdKind::kRootStarted) &&
      layout->kind != static_cast<uint16_t>(IdKind::kCommIdEnv))
    return false;
  return socketAddressValid(layout->root) && socketAddressPort(layout->root) != 0;
}

std::string rootReplyProblem(const RootReply& reply, int nranks) {
  if (reply.magic != kMagic || reply.textLen > kMaxReplyText) return "sent a malformed answer";
  if (reply.code == kRootOk &&
      (reply.nranks != nranks || nranks < 1 || reply.textLen != uint64_t(nranks) * sizeof(SocketAddress)))
    return "sent a table of the wrong size";
  return "";
}

ncclResult_t rootRefusal(int32_t code, const std::string& text, const std::string& who, int nranks,
                         const std::string& root, bool fromCommIdEnv, std::string* why) {
  const std::string prefix = who + " of " + std::to_string(nranks) + " was refused by the root at " + root + ": ";
  switch (code) {
    case kRootBadSecret:
      // Under NCCL_COMM_ID the secret comes from the variable's text, so differing spellings of
      // the same address are the likely cause.
      *why = prefix + text +
             (fromCommIdEnv ? " (under NCCL_COMM_ID every rank must set exactly the same text, and the same "
                              "WEFT_COMM_SECRET)"
                            : "");
      return ncclInvalidArgument;
    case kRootTimeout: *why = who + ": " + text; return ncclRemoteError;
    case kRootBadMagic:
    case kRootBadNranks:
    case kRootNranksMismatch:
    case kRootRankOutOfRange:
    case kRootDuplicateRank: *why = prefix + text; return ncclInvalidUsage;
    default: *why = prefix + "unknown refusal code " + std::to_string(code) + " " + text; return ncclRemoteError;
  }
}

bool ringHelloExpected(const RingHello& got, int prev, const Secret& secret, const SocketAddress& self) {
  return got.magic == kMagic && got.rank == prev && digestEqual(got.proof, ringHelloProof(secret, prev, self));
}

bool opHeadersMatch(const OpHeader& a, const OpHeader& b) {
  return a.magic == b.magic && a.kind == b.kind && a.seq == b.seq && a.bytes == b.bytes;
}

std::string describeOp(const OpHeader& h) {
  if (h.magic != kOpMagic) return "bytes that are not an operation header";
  return std::string(h.kind == 1 ? "barrier" : "allgather") + " #" + std::to_string(h.seq) + " of " +
         std::to_string(h.bytes) + " bytes per rank";
}

bool p2pHeaderAcceptable(const P2pHeader& h, int me, int nranks) {
  return h.magic == kP2pMagic && h.to == me && h.from >= 0 && h.from < nranks && h.bytes <= kP2pMaxBytes;
}

std::string formatRankList(const int* ranks, size_t count, size_t maxChars) {
  std::string out;
  size_t i = 0;
  while (i < count) {
    size_t j = i;
    while (j + 1 < count && ranks[j + 1] == ranks[j] + 1) j++;
    std::string piece = std::to_string(ranks[i]);
    if (j > i) {
      piece += '-';
      piece += std::to_string(ranks[j]);
    }
    if (!out.empty() && out.size() + piece.size() + 2 > maxChars) {
      out += ", ... (";
      out += std::to_string(count);
      out += " in all)";
      return out;
    }
    if (!out.empty()) out += ", ";
    out += piece;
    i = j + 1;
  }
  return out;
}

}  // namespace weft::bootstrap
