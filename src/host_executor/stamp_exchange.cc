#include "host_executor/stamp_exchange.h"

#include <algorithm>
#include <cstdio>

#include "base/log.h"
#include "comm/comm.h"
#include "comm/op_stamp.h"

namespace weft {
namespace {

// Bootstrap tags of their own: the network transport's handshakes use 0x4e4554 ("NET") in bits
// 40..63, these "MSM" plus a type byte, so the two can never collide in a rank's mailbox.
constexpr uint64_t kStampTag = (uint64_t(0x4d534d) << 40) | 1;
constexpr uint64_t kReportTag = (uint64_t(0x4d534d) << 40) | 2;
constexpr size_t kReportBytes = 768;  // fixed size: tryRecv takes exact lengths
// A peer that already left (it found the mismatch too, and destroyed its communicator) refuses
// connections: give up on it soon rather than at the communicator's timeout.
constexpr int64_t kNoteTimeoutMs = 100;

struct Report {
  char text[kReportBytes];
};

// What a stuck rank tells a peer it waits on: its call, and how far it has got in the sequence
// spaces it shares with that peer (for crossSpaceDeadlock).
struct StampNote {
  OpStamp stamp;
  uint32_t pad;
  uint64_t collectives;   // collectives the sender has issued
  uint64_t sendsToYou;    // its sends to the receiver of the note
  uint64_t recvsFromYou;  // its receives from the receiver of the note
};

bool isP2pStamp(const OpStamp& s) { return s.kind == kStampKindSend || s.kind == kStampKindRecv; }

// Is `mine` (one of this rank's calls) the operation the peer's stamp claims to match?
bool sameOperation(const OpStamp& mine, const OpStamp& theirs, int peer) {
  if (mine.op != theirs.op) return false;
  if (theirs.kind == kStampKindSend) return mine.kind == kStampKindRecv && mine.root == peer;
  if (theirs.kind == kStampKindRecv) return mine.kind == kStampKindSend && mine.root == peer;
  return !isP2pStamp(mine) && mine.kind != static_cast<uint8_t>(CollKind::kCopy);
}

// Sequence spaces as seen from this rank: collectives, sends to the peer, receives from it.
enum class Space { kColl, kSendTo, kRecvFrom };
Space spaceOf(const OpStamp& mine) {
  return mine.kind == kStampKindSend ? Space::kSendTo : mine.kind == kStampKindRecv ? Space::kRecvFrom : Space::kColl;
}
// The space of this rank's that a peer's stamp belongs in: its Send to us meets our Recv from it.
Space mineForTheirs(const OpStamp& theirs) {
  return theirs.kind == kStampKindSend   ? Space::kRecvFrom
         : theirs.kind == kStampKindRecv ? Space::kSendTo
                                         : Space::kColl;
}

// How many operations of space `s` (seen from comm's rank, towards `peer`) comm has issued.
uint64_t issuedIn(const ncclComm* comm, Space s, int peer) {
  if (s == Space::kColl) return comm->collCount;
  const std::vector<uint64_t>& per = s == Space::kSendTo ? comm->sendCount : comm->recvCount;
  return per.empty() ? 0 : per[peer];
}
// Is operation number `op` among the first `count` (numbers travel as their low 32 bits)?
bool within(uint64_t count, uint32_t op) { return static_cast<int32_t>(static_cast<uint32_t>(count) - op) >= 0; }

// Two ranks wait on each other, each in an operation the other has not issued, of different
// sequence spaces (say, a Send to us while we are in a collective): neither can move before the
// other (a group returns only when all its operations are done), so the two calls are a
// mismatch. Both "not issued" tests matter: a peer that issued our operation may only be slow (its
// data in flight), and a stale note is of an operation the peer has since finished, which we must
// then have issued.
const Task* crossSpaceDeadlock(const ncclComm* comm, const std::vector<StampWait>& current, const StampNote& n,
                               int peer) {
  if (within(issuedIn(comm, mineForTheirs(n.stamp), peer), n.stamp.op)) return nullptr;
  for (const StampWait& w : current) {
    if (w.task->comm != comm || spaceOf(w.task->stamp) == mineForTheirs(n.stamp) ||
        std::find(w.peers.begin(), w.peers.end(), peer) == w.peers.end())
      continue;
    const Space mine = spaceOf(w.task->stamp);
    const uint64_t peerIssued = mine == Space::kColl     ? n.collectives
                                : mine == Space::kSendTo ? n.recvsFromYou
                                                         : n.sendsToYou;
    if (!within(peerIssued, w.task->stamp.op)) return w.task;
  }
  return nullptr;
}

}  // namespace

bool StampExchange::sendOnce(ncclComm* comm, int peer, const OpStamp& s) {
  for (const Sent& e : sent_)
    if (e.comm == comm && e.peer == peer && e.kind == s.kind && e.op == s.op) return true;
  sent_.push_back({comm, peer, s.kind, s.op});
  StampNote note{s, 0, comm->collCount, issuedIn(comm, Space::kSendTo, peer), issuedIn(comm, Space::kRecvFrom, peer)};
  std::string why;
  // A failed send only means no early answer from that peer: the wait stays bounded by the
  // timeout and the peer's own checks.
  if (comm->bootstrap->sendWithin(peer, kStampTag, &note, sizeof note, kNoteTimeoutMs, &why) != ncclSuccess) {
    WEFT_INFO(kLogColl, "rank %d: sending op stamp #%u to rank %d failed: %s", comm->rank, s.op, peer, why.c_str());
    return false;
  }
  return true;
}

void StampExchange::offer(const StampWait& w) {
  ncclComm* comm = w.task->comm;
  for (int p : w.peers)
    if (p >= 0 && p != comm->rank) sendOnce(comm, p, w.task->stamp);
}

bool StampExchange::poll(ncclComm* comm, const std::vector<StampWait>& current, std::string* why, bool* reported) {
  std::string detail;
  for (int p = 0; p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    bool got = false;
    Report rep;
    if (comm->bootstrap->tryRecv(p, kReportTag, &rep, sizeof rep, &got, &detail) == ncclSuccess && got) {
      rep.text[kReportBytes - 1] = 0;
      *why = rep.text;
      *reported = true;
      return true;
    }
    StampNote note{};
    got = false;
    if (comm->bootstrap->tryRecv(p, kStampTag, &note, sizeof note, &got, &detail) != ncclSuccess || !got) continue;
    const OpStamp& theirs = note.stamp;
    OpStamp mine{};
    bool found = false;
    for (const StampWait& w : current)
      if (w.task->comm == comm && sameOperation(w.task->stamp, theirs, p)) {
        mine = w.task->stamp;
        found = true;
        break;
      }
    if (!found) found = findOwnStamp(comm, theirs, p, &mine);
    if (!found) {
      // Not issued here yet, or long done: nothing to compare, unless the two ranks are stuck on
      // each other in different sequence spaces.
      const Task* stuck = crossSpaceDeadlock(comm, current, note, p);
      if (stuck == nullptr) continue;
      *why = mismatchText(comm->commHash, comm->rank, stuck->stamp, p, theirs);
      *reported = false;
      return true;
    }
    if (!stampsAgree(mine, theirs, comm->rank, p)) {
      *why = mismatchText(comm->commHash, comm->rank, mine, p, theirs);
      *reported = false;
      return true;
    }
    // Answer with what this rank called, so that a peer waiting on us can compare too.
    sendOnce(comm, p, mine);
  }
  return false;
}

void drainStampNotesIfDue(ncclComm* comm, int64_t nowNs) {
  constexpr int64_t kStampDrainNs = 100 * 1000000;
  const int64_t last = comm->stampsDrainedNs.load(std::memory_order_relaxed);
  if (comm->bootstrap == nullptr || nowNs - last < kStampDrainNs) return;
  comm->stampsDrainedNs.store(nowNs, std::memory_order_relaxed);
  // Asking for a message from this rank itself, which never exists, only collects what waits.
  bool got = false;
  std::string why;
  OpStamp none{};
  (void)comm->bootstrap->tryRecv(comm->rank, kStampTag, &none, sizeof none, &got, &why);
}

void reportMismatch(ncclComm* comm, const std::string& text) {
  if (comm->bootstrap == nullptr) return;
  Report rep{};
  snprintf(rep.text, sizeof rep.text, "%s", text.c_str());
  std::string why;
  for (int p = 0; p < comm->nranks; ++p) {
    // A local peer that announced a failure of its own already knows (and may be gone).
    if (p == comm->rank || !comm->peers.peerFailure(p).empty()) continue;
    if (comm->bootstrap->sendWithin(p, kReportTag, &rep, sizeof rep, kNoteTimeoutMs, &why) != ncclSuccess)
      WEFT_INFO(kLogColl, "rank %d: reporting a mismatch to rank %d failed: %s", comm->rank, p, why.c_str());
  }
}

}  // namespace weft
