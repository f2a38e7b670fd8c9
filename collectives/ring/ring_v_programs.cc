// Ring schedules of the uneven collectives (AllGatherv, ReduceScatterv). They are the ring
// AllGather and ReduceScatter with blocks of their own sizes: block j is counts[j] elements at
// displs[j], and each channel takes a contiguous share of every block. A channel's shares are
// walked in loops of one FIFO slot per block, as the even ring does, so no step needs more than one
// free slot; a block with nothing left in a loop has no step there. Every rank knows every count,
// so the sender and the receiver of a piece skip the same steps and the pieces still meet in order.
// Each link carries every block but its receiver's once: with one large block and small others,
// the large one crosses each link once, where an AllGather padded to the largest block would
// move nranks - 1 blocks of that size through every link.
#include <algorithm>
#include <vector>

#include "collectives/model/vlayout.h"
#include "collectives/ring/ring.h"
#include "collectives/ring/ring_schedule.h"

namespace weft {
namespace {

using ring::mod;
using ring::split;

// The shares of one channel: the part of each block it moves, and how many loops of `step`
// elements its largest share needs.
struct ChannelShares {
  std::vector<ring::Range> share;
  size_t loops = 0;

  ChannelShares(const VLayout& l, int nChannels, int ch, size_t step) : share(l.nranks) {
    size_t longest = 0;
    for (int j = 0; j < l.nranks; ++j) {
      share[j] = split(l.counts[j], size_t(nChannels), size_t(ch));
      longest = std::max(longest, share[j].count);
    }
    loops = (longest + step - 1) / step;
  }
  // Loop q's piece of block j: its offset within the block and its length (0: nothing this loop).
  size_t offset(int j, size_t q, size_t step) const { return share[j].begin + q * step; }
  size_t length(int j, size_t q, size_t step) const {
    const size_t done = q * step;
    return done >= share[j].count ? 0 : std::min(step, share[j].count - done);
  }
};

// Rank r's block enters the ring here and travels n-1 hops; every rank copies each block it sees
// into place at the block's displacement.
void allGatherv(const CommShape& sh, const Task& t, int nChannels, int ch, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const VLayout l = vlayoutOf(t, n);
  const size_t step = sh.slotBytes / dataTypeSize(t.dtype);
  const ChannelShares s(l, nChannels, ch, step);
  p->beginSequence(Lane::kRing, ch, mod(r + 1, n), mod(r - 1, n));
  for (size_t q = 0; q < s.loops; ++q) {
    if (size_t c = s.length(r, q, step)) {
      const size_t off = s.offset(r, q, step);
      p->addStep(StepOp::kCopySend, 0, off, l.displs[r] + off, c);
    }
    for (int k = 1; k < n; ++k) {
      const int j = mod(r - k, n);
      if (size_t c = s.length(j, q, step))
        p->addStep(k < n - 1 ? StepOp::kRecvCopySend : StepOp::kRecv, 0, 0, l.displs[j] + s.offset(j, q, step), c);
    }
  }
}

// Block j's partial sums start at rank j+1 and gain one rank's input per hop, ending at rank j,
// which adds its own and writes the result: the even ring ReduceScatter with uneven blocks.
void reduceScatterv(const CommShape& sh, const Task& t, int nChannels, int ch, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const VLayout l = vlayoutOf(t, n);
  const size_t step = sh.slotBytes / dataTypeSize(t.dtype);
  const ChannelShares s(l, nChannels, ch, step);
  p->beginSequence(Lane::kRing, ch, mod(r + 1, n), mod(r - 1, n));
  for (size_t q = 0; q < s.loops; ++q) {
    for (int k = 1; k < n; ++k) {
      const int j = mod(r - k, n);
      if (size_t c = s.length(j, q, step))
        p->addStep(k == 1 ? StepOp::kSend : StepOp::kRecvReduceSend, kStepPre, l.displs[j] + s.offset(j, q, step), 0,
                   c);
    }
    if (size_t c = s.length(r, q, step)) {
      const size_t off = s.offset(r, q, step);
      p->addStep(StepOp::kRecvReduceCopy, kStepPre | kStepPost, l.displs[r] + off, off, c);
    }
  }
}

}  // namespace

void buildRingVProgram(const CommShape& sh, const Task& t, int nChannels, Program* p) {
  const VLayout l = vlayoutOf(t, sh.nranks);
  if (sh.nranks == 1) {
    // A local copy, with the reduction's pre-multiply and post-divide for ReduceScatterv.
    p->beginSequence(Lane::kRing, 0, -1, -1);
    if (t.kind == CollKind::kAllGatherv)
      p->addStep(StepOp::kCopy, 0, 0, l.displs[0], l.counts[0]);
    else
      p->addStep(StepOp::kCopy, kStepPre | kStepPost, l.displs[0], 0, l.counts[0]);
    return;
  }
  for (int ch = 0; ch < nChannels; ++ch) {
    if (t.kind == CollKind::kAllGatherv)
      allGatherv(sh, t, nChannels, ch, p);
    else
      reduceScatterv(sh, t, nChannels, ch, p);
  }
}

}  // namespace weft
