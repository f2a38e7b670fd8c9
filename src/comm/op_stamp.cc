#include "comm/op_stamp.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "base/hash.h"
#include "collectives/registry.h"
#include "comm/comm.h"
#include "math/reduce_host.h"

namespace weft {

static_assert(kStampKindSend == static_cast<uint8_t>(CollKind::kSend), "fifo.h's Send kind is CollKind::kSend");
static_assert(kStampKindRecv == static_cast<uint8_t>(CollKind::kRecv), "fifo.h's Recv kind is CollKind::kRecv");
static_assert(kStampPreMulSum == static_cast<uint8_t>(ncclNumOps), "PreMulSum follows the built-in ops");

namespace {

constexpr const char* kMismatchMarker = " but rank ";

bool isRooted(CollKind k) {
  return k == CollKind::kBroadcast || k == CollKind::kReduce || k == CollKind::kGather || k == CollKind::kScatter;
}
bool isP2p(uint8_t kind) { return kind == kStampKindSend || kind == kStampKindRecv; }

// Appends to the text of *len characters in buf (size bytes), as long as the text so far fit; *len
// becomes what snprintf would return for the whole text, or -1 after an encoding error.
__attribute__((format(printf, 4, 5))) void appendf(char* buf, size_t size, int* len, const char* fmt, ...) {
  if (*len < 0 || static_cast<size_t>(*len) >= size) return;
  va_list args;
  va_start(args, fmt);
  const int more = vsnprintf(buf + *len, size - *len, fmt, args);
  va_end(args);
  *len = more < 0 ? -1 : *len + more;
}

uint64_t stampCount(const OpStamp& s) { return uint64_t(s.countLo) | (uint64_t(s.countHi) << 32); }

// The uneven collectives' counts and displacements must be equal on every rank, yet the messages
// only show that their sizes fit this rank's view. Their stamps carry 32 bits of a hash of both
// arrays in `root` (unused by these kinds), so ranks that passed different arrays fail as a
// mismatch naming both calls instead of exchanging misplaced data or hanging.
int32_t layoutHash(const Task& t) {
  const uint64_t h = hashBytes(t.vcounts.data(), t.vcounts.size() * sizeof(size_t), 0x7663);
  return static_cast<int32_t>(static_cast<uint32_t>(h ^ (h >> 32)));
}

}  // namespace

const char* redopName(uint8_t stampRedop) {
  switch (stampRedop) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    case kStampPreMulSum: return "premulsum";
    default: return "?";
  }
}

void assignOpNumber(Task* t) {
  ncclComm* comm = t->comm;
  if (t->kind != CollKind::kSend && t->kind != CollKind::kRecv) {
    t->opNum = ++comm->collCount;
    return;
  }
  std::vector<uint64_t>& counts = t->kind == CollKind::kSend ? comm->sendCount : comm->recvCount;
  if (counts.size() != static_cast<size_t>(comm->nranks)) counts.assign(comm->nranks, 0);
  t->opNum = ++counts[t->root];
}

OpStamp makeStamp(const Task& t) {
  OpStamp s{};
  s.op = static_cast<uint32_t>(t.opNum);
  // AlltoAllv's counts differ per rank by design; its per-peer sizes meet the message-size check.
  const uint64_t count = t.kind == CollKind::kAlltoAllv ? 0 : t.count;
  s.countLo = static_cast<uint32_t>(count);
  s.countHi = static_cast<uint16_t>(count >> 32);
  s.kind = static_cast<uint8_t>(t.kind);
  s.dtype = static_cast<uint8_t>(t.dtype);
  s.root = isRooted(t.kind) || isP2p(s.kind) ? t.root : isVariableKind(t.kind) ? layoutHash(t) : 0;
  // The base reduction, never a user op's handle: ranks may create their ops in different orders,
  // and a PreMulSum scalar may differ per rank by design.
  s.redop = !collReduces(t.kind) ? kStampNoRedop : t.op < ncclNumOps ? static_cast<uint8_t>(t.op) : kStampPreMulSum;
  // Point-to-point calls choose nothing: their algorithm fields stay 0 on both sides.
  if (!isP2p(s.kind)) {
    s.algorithm = static_cast<uint8_t>(t.algorithm);
    s.protocol = static_cast<uint8_t>(t.protocol);
    s.nChannels = static_cast<uint8_t>(t.nChannels);
  }
  return s;
}

void rememberStamp(ncclComm* comm, const OpStamp& s) {
  if (s.kind == static_cast<uint8_t>(CollKind::kCopy)) return;  // a local copy: no peer ever asks
  comm->recentStamps[comm->recentStampCount++ % ncclComm::kRecentStamps] = s;
}

bool findOwnStamp(const ncclComm* comm, const OpStamp& theirs, int peerRank, OpStamp* mine) {
  const int n = static_cast<int>(std::min<uint32_t>(comm->recentStampCount, ncclComm::kRecentStamps));
  for (int i = 0; i < n; ++i) {
    const OpStamp& s = comm->recentStamps[i];
    if (s.op != theirs.op) continue;
    const bool match = theirs.kind == kStampKindSend   ? s.kind == kStampKindRecv && s.root == peerRank
                       : theirs.kind == kStampKindRecv ? s.kind == kStampKindSend && s.root == peerRank
                                                       : !isP2p(s.kind);
    if (match) {
      *mine = s;
      return true;
    }
  }
  return false;
}

std::string describeCall(const OpStamp& s, const OpStamp& other) {
  char buf[256];
  const CollKind kind = static_cast<CollKind>(s.kind);
  int n = snprintf(buf, sizeof buf, "%s%s(%" PRIu64 " x %s", collApiPrefix(kind), collName(kind), stampCount(s),
                   dataTypeName(static_cast<ncclDataType_t>(s.dtype)));
  if (isVariableKind(kind))
    appendf(buf, sizeof buf, &n, " in all, counts and displacements hashing to %08x", static_cast<uint32_t>(s.root));
  if (kind == CollKind::kSend) appendf(buf, sizeof buf, &n, " to rank %d", s.root);
  if (kind == CollKind::kRecv) appendf(buf, sizeof buf, &n, " from rank %d", s.root);
  if (s.redop != kStampNoRedop) appendf(buf, sizeof buf, &n, ", %s", redopName(s.redop));
  if (isRooted(kind)) appendf(buf, sizeof buf, &n, ", root %d", s.root);
  const bool algoDiffers = s.algorithm != other.algorithm || s.protocol != other.protocol ||
                           s.nChannels != other.nChannels;
  if (!isP2p(s.kind) && !isP2p(other.kind) && algoDiffers) {
    appendf(buf, sizeof buf, &n, ", %s", algorithmName(static_cast<Algorithm>(s.algorithm)));
    if (s.protocol != other.protocol)
      appendf(buf, sizeof buf, &n, "/%s", protocolName(static_cast<Protocol>(s.protocol)));
    if (s.nChannels != other.nChannels) appendf(buf, sizeof buf, &n, ", %d channels", s.nChannels);
  }
  appendf(buf, sizeof buf, &n, ")");
  return buf;
}

std::string mismatchText(uint64_t commHash, int rank, const OpStamp& mine, int peer, const OpStamp& theirs) {
  char head[160];
  const CollKind kind = static_cast<CollKind>(mine.kind);
  if (isP2p(mine.kind))
    snprintf(head, sizeof head,
             "nccl%s: operation #%u of communicator %016" PRIx64 " (%s of rank %d %s rank %d): ", collName(kind),
             mine.op, commHash, kind == CollKind::kSend ? "sends" : "receives", rank,
             kind == CollKind::kSend ? "to" : "from", mine.root);
  else
    snprintf(head, sizeof head, "%s%s: operation #%u of communicator %016" PRIx64 ": ", collApiPrefix(kind),
             collName(kind), mine.op, commHash);
  std::string text = std::string(head) + "rank " + std::to_string(rank) + " called " + describeCall(mine, theirs) +
                     kMismatchMarker + std::to_string(peer) + " called " + describeCall(theirs, mine);
  // A different number in the same space means an earlier operation already went out of step
  // (e.g. a rank that only sent in a mismatched call and returned); a different space (a Send
  // met a collective) has no common numbering: name the peer's number either way.
  if (theirs.op != mine.op || isP2p(mine.kind) != isP2p(theirs.kind))
    text += " as its operation #" + std::to_string(theirs.op);
  return text;
}

bool isMismatchText(const std::string& text) {
  return text.find(kMismatchMarker) != std::string::npos && text.find(" operation #") != std::string::npos &&
         text.find(" called ") != std::string::npos;
}

}  // namespace weft
