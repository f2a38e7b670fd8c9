// The recursive halving-doubling schedule (Rabenseifner's AllReduce). Reduce-scatter by
// halving: in round j the two partners (numbers in the rounds that differ in bit j) hold the same
// segment of the buffer; each keeps one half (the lower for the one whose bit j is 0), sends the
// other half to its partner and adds the partner's copy of its own half in. After log2(n) rounds each
// rank holds one n-th of the buffer, completely reduced. All-gather by doubling: the rounds in
// reverse, each rank sending what it holds and receiving its partner's segment beside it.
//
// Rounds go from bit 0 up, so with ranks numbered host by host the halving rounds within a host
// come first, while the segments are large, and the network carries only the smaller halves of
// the later rounds: about S/2 per rank across hosts for 2 ranks per host, against doubling's S.
//
// On a number of ranks that is not a power of two, the extra ranks fold in first (rank_fold.h): each
// hands its whole input to its partner, which adds it to its own and takes part in the rounds for
// both, and gets the result back at the end. That costs two more exchanges of the whole buffer
// between the partners, usually within one host.
//
// Every element is reduced on exactly one rank, then copied to the others, so all ranks end with
// the same bits. The pieces of a round alternate send and receive (one slot ahead at most), so
// no round deadlocks on full FIFOs whatever the sizes of the two halves.
#include <algorithm>
#include <vector>

#include "collectives/doubling/doubling.h"
#include "collectives/model/rank_fold.h"

namespace weft {
namespace {

struct Segment {
  size_t lo, hi;  // elements
  size_t size() const { return hi - lo; }
};

// One round with `partner` on the ring lane's channel 0: send `out` (from `src`), receive `in`
// (added to `src` into the output with kRecvReduceCopy, or copied with kRecv), piece by piece.
void exchange(Program* p, int partner, size_t piece, Buf src, Segment out, Segment in, StepOp recvOp, uint8_t sendFlags,
              uint8_t recvFlags) {
  p->beginSequence(Lane::kRing, 0, partner, partner);
  const size_t nOut = (out.size() + piece - 1) / piece, nIn = (in.size() + piece - 1) / piece;
  for (size_t k = 0; k < std::max(nOut, nIn); ++k) {
    if (k < nOut) {
      const size_t off = out.lo + k * piece;
      p->addStep(StepOp::kSend, sendFlags, src, off, Buf::kRecv, off, std::min(piece, out.hi - off));
    }
    if (k < nIn) {
      const size_t off = in.lo + k * piece;
      p->addStep(recvOp, recvFlags, src, off, Buf::kRecv, off, std::min(piece, in.hi - off));
    }
  }
}

}  // namespace

void buildHalvingDoublingProgram(const CommShape& sh, const Task& t, Program* p) {
  const int r = sh.rank;
  const size_t piece = std::max<size_t>(1, sh.slotBytes / dataTypeSize(t.dtype));
  const RankFold fold(sh.nranks);
  const int v = fold.folded(r);
  const Segment all{0, t.count}, none{0, 0};
  if (v < 0) {
    // Sits the rounds out: its input (pre-multiplied) to rank + 1, then the result back.
    exchange(p, r + 1, piece, Buf::kSend, all, none, StepOp::kRecv, kStepPre, 0);
    exchange(p, r + 1, piece, Buf::kRecv, none, all, StepOp::kRecv, 0, 0);
    return;
  }
  // Stands for itself and rank - 1 as well: their sum, in the output, is what the rounds reduce.
  const bool standsForTwo = r < 2 * fold.extra;
  if (standsForTwo) exchange(p, r - 1, piece, Buf::kSend, none, all, StepOp::kRecvReduceCopy, 0, kStepPre);
  int rounds = 0;
  while ((1 << rounds) < fold.pow2) ++rounds;
  // held[j]: the segment this rank holds going into halving round j (held[rounds]: its share).
  std::vector<Segment> held{all};
  for (int j = 0; j < rounds; ++j) {
    const Segment s = held.back();
    const size_t mid = s.lo + s.size() / 2;
    const bool upper = (v >> j) & 1;
    const Segment keep = upper ? Segment{mid, s.hi} : Segment{s.lo, mid};
    const Segment give = upper ? Segment{s.lo, mid} : Segment{mid, s.hi};
    // Round 0 reads the input (pre-multiplied, for ncclAvg and ncclPreMulSum), unless the fold
    // already put it into the output; later rounds read the partial sums in the output. The last
    // halving round applies the post-divide to the share.
    const bool fromInput = j == 0 && !standsForTwo, last = j == rounds - 1;
    const Buf src = fromInput ? Buf::kSend : Buf::kRecv;
    const uint8_t pre = fromInput ? kStepPre : 0;
    exchange(p, fold.rank(v ^ (1 << j)), piece, src, give, keep, StepOp::kRecvReduceCopy, pre,
             uint8_t(pre | (last ? kStepPost : 0)));
    held.push_back(keep);
  }
  // Doubling back: in round j the partner holds the other half of held[j].
  for (int j = rounds - 1; j >= 0; --j) {
    const Segment mine = held[j + 1], whole = held[j];
    const Segment theirs = mine.lo == whole.lo ? Segment{mine.hi, whole.hi} : Segment{whole.lo, mine.lo};
    exchange(p, fold.rank(v ^ (1 << j)), piece, Buf::kRecv, mine, theirs, StepOp::kRecv, 0, 0);
  }
  if (standsForTwo) exchange(p, r - 1, piece, Buf::kRecv, all, none, StepOp::kRecv, 0, 0);
}

}  // namespace weft
