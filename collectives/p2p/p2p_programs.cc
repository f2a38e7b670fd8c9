// Point-to-point patterns: every (peer, direction) pair is its own sequence on the p2p lane, so
// sends and receives to different peers progress independently and all-to-all patterns cannot
// deadlock on full FIFOs. Data to or from the rank itself is a local copy.
#include "collectives/p2p/p2p.h"

#include "collectives/model/vlayout.h"

namespace weft {
namespace {

void send(const Task& t, int peer, size_t srcOffset, size_t count, Program* p) {
  p->beginSequence(Lane::kP2p, 0, peer, -1);
  p->addStep(StepOp::kSend, 0, srcOffset, 0, count);
}

void recv(const Task& t, int peer, size_t dstOffset, size_t count, Program* p) {
  p->beginSequence(Lane::kP2p, 0, -1, peer);
  p->addStep(StepOp::kRecv, 0, 0, dstOffset, count);
}

void copy(const Task& t, size_t srcOffset, size_t dstOffset, size_t count, Program* p) {
  p->beginSequence(Lane::kP2p, 0, -1, -1);
  p->addStep(StepOp::kCopy, 0, srcOffset, dstOffset, count);
}

}  // namespace

void buildP2pProgram(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const size_t c = t.count;
  switch (t.kind) {
    case CollKind::kSend: send(t, t.root, 0, c, p); break;
    case CollKind::kRecv: recv(t, t.root, 0, c, p); break;
    case CollKind::kCopy: copy(t, 0, 0, c, p); break;
    case CollKind::kAlltoAll:
      // Start with the next rank and go round, so that not every rank talks to rank 0 first.
      for (int k = 1; k < n; ++k) {
        int to = (r + k) % n, from = (r - k + n) % n;
        send(t, to, size_t(to) * c, c, p);
        recv(t, from, size_t(from) * c, c, p);
      }
      copy(t, size_t(r) * c, size_t(r) * c, c, p);
      break;
    case CollKind::kAlltoAllv: {
      const size_t* sendcounts = t.vcounts.data();
      const size_t* sdispls = sendcounts + n;
      const size_t* recvcounts = sdispls + n;
      const size_t* rdispls = recvcounts + n;
      for (int k = 1; k < n; ++k) {
        int to = (r + k) % n, from = (r - k + n) % n;
        send(t, to, sdispls[to], sendcounts[to], p);
        recv(t, from, rdispls[from], recvcounts[from], p);
      }
      copy(t, sdispls[r], rdispls[r], recvcounts[r] < sendcounts[r] ? recvcounts[r] : sendcounts[r], p);
      break;
    }
    case CollKind::kAllGatherv: {
      // Every rank sends its block to every peer directly: one hop, for latency-bound sizes. Empty
      // blocks have no sequence at all (every rank knows every count), so they open no FIFO.
      const VLayout l = vlayoutOf(t, n);
      for (int k = 1; k < n; ++k) {
        int to = (r + k) % n, from = (r - k + n) % n;
        if (l.counts[r] > 0) send(t, to, 0, l.counts[r], p);
        if (l.counts[from] > 0) recv(t, from, l.displs[from], l.counts[from], p);
      }
      if (l.counts[r] > 0) copy(t, 0, l.displs[r], l.counts[r], p);
      break;
    }
    case CollKind::kGather:
      if (r != t.root) {
        send(t, t.root, 0, c, p);
      } else {
        for (int k = 1; k < n; ++k) {
          int from = (r + k) % n;
          recv(t, from, size_t(from) * c, c, p);
        }
        copy(t, 0, size_t(r) * c, c, p);
      }
      break;
    case CollKind::kScatter:
      if (r != t.root) {
        recv(t, t.root, 0, c, p);
      } else {
        for (int k = 1; k < n; ++k) {
          int to = (r + k) % n;
          send(t, to, size_t(to) * c, c, p);
        }
        copy(t, size_t(r) * c, 0, c, p);
      }
      break;
    default: break;
  }
}

}  // namespace weft
