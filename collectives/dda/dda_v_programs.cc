// DDA for the uneven collectives (AllGatherv, ReduceScatterv): stage, one barrier, direct reads,
// in rounds of half a staging area as the even DDA collectives do (dda_programs.cc explains the
// alternating halves). Every rank derives the rounds from the counts, which are equal on every
// rank, so all ranks take the same number of rounds and meet at the same barriers.
#include <algorithm>

#include "collectives/dda/dda.h"
#include "collectives/dda/dda_rounds.h"
#include "collectives/model/vlayout.h"

namespace weft {
namespace {

using dda::Rounds;

// AllGatherv: each round stages the next piece of the own block (at most half an area), then every
// rank copies each peer's piece to the peer's displacement. Rounds follow the largest block.
void allGatherv(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const VLayout l = vlayoutOf(t, n);
  const size_t half = sh.direct->dataBytes() / 2 / dataTypeSize(t.dtype);
  Rounds rs(*sh.direct, l.maxCount(), half, half);
  auto piece = [&](int b, uint64_t j) {
    const size_t off = rs.offset(j);
    return off >= l.counts[b] ? size_t(0) : std::min(rs.perBlock, l.counts[b] - off);
  };
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    const size_t off = rs.offset(j), base = rs.base(j);
    if (size_t len = piece(r, j)) p->addStep(StepOp::kDirectStage, 0, Buf::kSend, off, Buf::kRecv, base, len);
    p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
    for (int k = 0; k < n; ++k) {
      const int q = (r + k) % n;
      if (size_t len = piece(q, j))
        p->addStep(StepOp::kDirectCopy, 0, Buf::kSend, base, Buf::kRecv, l.displs[q] + off, len,
                   static_cast<uint16_t>(q));
    }
  }
}

// ReduceScatterv: the blocks are packed in rank order (block b from packedBegin(b)) and cut into
// windows of half an area, one per round, so a skewed layout takes no more rounds than its total
// needs. Every rank stages the parts of all blocks that fall in the window (pre-multiplied), then
// folds its own block's part from every rank's staging area, in rank order.
void reduceScatterv(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const VLayout l = vlayoutOf(t, n);
  const size_t half = sh.direct->dataBytes() / 2 / dataTypeSize(t.dtype);
  Rounds rs(*sh.direct, t.count, half, half);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    const size_t lo = rs.offset(j), hi = lo + rs.length(j, t.count), base = rs.base(j);
    size_t begin = 0;  // packed start of block b
    size_t mineLo = 0, mineHi = 0, mineBegin = 0;
    for (int b = 0; b < n; ++b) {
      const size_t from = std::max(lo, begin), to = std::min(hi, begin + l.counts[b]);
      if (from < to) {
        p->addStep(StepOp::kDirectStage, kStepPre, Buf::kSend, l.displs[b] + (from - begin), Buf::kRecv,
                   base + (from - lo), to - from);
        if (b == r) {
          mineLo = from;
          mineHi = to;
          mineBegin = begin;
        }
      }
      begin += l.counts[b];
    }
    p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
    if (mineLo < mineHi)
      p->addStep(StepOp::kDirectReduce, kStepPost, Buf::kSend, base + (mineLo - lo), Buf::kRecv, mineLo - mineBegin,
                 mineHi - mineLo);
  }
}

}  // namespace

void buildDdaVProgram(const CommShape& sh, const Task& t, Program* p) {
  if (t.kind == CollKind::kAllGatherv)
    allGatherv(sh, t, p);
  else
    reduceScatterv(sh, t, p);
}

}  // namespace weft
