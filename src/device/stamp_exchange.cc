#include "device/stamp_exchange.h"

#include <algorithm>
#include <cstring>

#include "core/comm.h"
#include "core/log.h"
#include "enqueue/op_stamp.h"

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

bool isP2pStamp(const OpStamp& s) { return s.kind == kStampKindSend || s.kind == kStampKindRecv; }

// Is `mine` (one of this rank's calls) the operation the peer's stamp claims to match?
bool sameOperation(const OpStamp& mine, const OpStamp& theirs, int peer) {
  if (mine.op != theirs.op) return false;
  if (theirs.kind == kStampKindSend) return mine.kind == kStampKindRecv && mine.root == peer;
  if (theirs.kind == kStampKindRecv) return mine.kind == kStampKindSend && mine.root == peer;
  return !isP2pStamp(mine) && mine.kind != static_cast<uint8_t>(CollKind::kCopy);
}

}  // namespace

bool StampExchange::sendOnce(ncclComm* comm, int peer, const OpStamp& s) {
  for (const Sent& e : sent_)
    if (e.comm == comm && e.peer == peer && e.kind == s.kind && e.op == s.op) return true;
  sent_.push_back({comm, peer, s.kind, s.op});
  std::string why;
  // A failed send only means no early answer from that peer: the wait stays bounded by the
  // timeout and the peer's own checks.
  if (comm->bootstrap->sendWithin(peer, kStampTag, &s, sizeof s, kNoteTimeoutMs, &why) != ncclSuccess) {
    WEFT_INFO(kLogColl, "rank %d: sending op stamp #%u to rank %d failed: %s", comm->rank, s.op, peer, why.c_str());
    return false;
  }
  return true;
}

void StampExchange::offer(const Task& t, const std::vector<int>& peers) {
  ncclComm* comm = t.comm;
  for (int p : peers)
    if (p >= 0 && p != comm->rank) sendOnce(comm, p, t.stamp);
}

bool StampExchange::poll(ncclComm* comm, const std::vector<const Task*>& current, std::string* why, bool* reported) {
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
    OpStamp theirs{};
    got = false;
    if (comm->bootstrap->tryRecv(p, kStampTag, &theirs, sizeof theirs, &got, &detail) != ncclSuccess || !got) continue;
    OpStamp mine{};
    bool found = false;
    for (const Task* t : current)
      if (t->comm == comm && sameOperation(t->stamp, theirs, p)) {
        mine = t->stamp;
        found = true;
        break;
      }
    if (!found) found = findOwnStamp(comm, theirs, p, &mine);
    if (!found) continue;  // not issued here yet, or long done: nothing to compare
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
