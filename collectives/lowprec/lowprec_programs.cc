// Low-precision all-pairs collectives: data travels as FP8 e4m3 with one float32 scale per block
// of 256 elements (src/math/lowp_quant.h), through the direct-access staging areas, and every
// reduction is computed in float32. Only float32, bfloat16 and float16 with ncclSum; every other
// op and type takes an exact algorithm.
//
// Staging units here are 260-byte LowpBlocks. Rounds alternate between the two halves of the
// staging area exactly as the DDA rounds do (see collectives/dda), with the same round counter.
//
// AllReduce, per round: every rank quantizes its chunk; barrier; rank r sums slice r of every
// rank's blocks in float (rank order), re-quantizes the sum over its own slice r (which only it
// reads) and keeps the decoded value of that; barrier; every rank decodes each other slice from
// its owner. All ranks therefore hold the same bits, including the owner of each slice.
#include <algorithm>

#include "collectives/dda/dda_rounds.h"
#include "collectives/lowprec/lowprec.h"
#include "math/lowp_quant.h"

namespace weft {
namespace {

using dda::Rounds;

size_t halfBlocks(const CommShape& sh) { return sh.direct->dataBytes() / 2 / sizeof(LowpBlock); }

void allReduce(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  // Each rank's slice is at most sliceBlocks blocks of the half.
  const size_t sliceBlocks = std::max<size_t>(1, halfBlocks(sh) / size_t(n));
  Rounds rs(*sh.direct, t.count, halfBlocks(sh), size_t(n) * sliceBlocks * kLowpBlockElems);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    const size_t off = rs.offset(j), len = rs.length(j, t.count), base = rs.base(j);
    // Slices are whole blocks, so slice q starts at block q * sb of the input region.
    const size_t sb = lowpBlocks((len + size_t(n) - 1) / size_t(n));
    const size_t slice = sb * kLowpBlockElems;
    auto sBegin = [&](int q) { return std::min(len, size_t(q) * slice); };
    auto sLen = [&](int q) { return std::min(len, size_t(q + 1) * slice) - sBegin(q); };
    p->addStep(StepOp::kLowpQuantize, 0, Buf::kSend, off, Buf::kRecv, base, len);
    p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
    p->addStep(StepOp::kLowpReduce, kStepRequant, Buf::kSend, base + size_t(r) * sb, Buf::kRecv, off + sBegin(r),
               sLen(r));
    p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
    for (int k = 1; k < n; ++k) {
      const int q = (r + k) % n;
      p->addStep(StepOp::kLowpDequant, 0, Buf::kSend, base + size_t(q) * sb, Buf::kRecv, off + sBegin(q), sLen(q),
                 static_cast<uint16_t>(q));
    }
  }
}

// Every rank decodes every rank's blocks, its own included, so all outputs are the same bits.
void allGather(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  Rounds rs(*sh.direct, t.count, halfBlocks(sh), halfBlocks(sh) * kLowpBlockElems);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    const size_t off = rs.offset(j), len = rs.length(j, t.count), base = rs.base(j);
    p->addStep(StepOp::kLowpQuantize, 0, Buf::kSend, off, Buf::kRecv, base, len);
    p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
    for (int k = 0; k < n; ++k) {
      const int q = (r + k) % n;
      p->addStep(StepOp::kLowpDequant, 0, Buf::kSend, base, Buf::kRecv, size_t(q) * t.count + off, len,
                 static_cast<uint16_t>(q));
    }
  }
}

// ReduceScatter and AlltoAll quantize a piece of each of the n input blocks per round, block b at
// block b * blocksPer of the half; rank r then reads block r of every rank.
void quantizeBlocks(const CommShape& sh, const Task& t, const Rounds& rs, uint64_t j, size_t blocksPer, Program* p) {
  for (int b = 0; b < sh.nranks; ++b)
    p->addStep(StepOp::kLowpQuantize, 0, Buf::kSend, size_t(b) * t.count + rs.offset(j), Buf::kRecv,
               rs.base(j) + size_t(b) * blocksPer, rs.length(j, t.count));
  p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
}

void reduceScatter(const CommShape& sh, const Task& t, Program* p) {
  const int r = sh.rank;
  const size_t per = std::max<size_t>(1, halfBlocks(sh) / size_t(sh.nranks));
  Rounds rs(*sh.direct, t.count, halfBlocks(sh), per * kLowpBlockElems);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    quantizeBlocks(sh, t, rs, j, per, p);
    p->addStep(StepOp::kLowpReduce, 0, Buf::kSend, rs.base(j) + size_t(r) * per, Buf::kRecv, rs.offset(j),
               rs.length(j, t.count));
  }
}

void alltoAll(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const size_t per = std::max<size_t>(1, halfBlocks(sh) / size_t(n));
  Rounds rs(*sh.direct, t.count, halfBlocks(sh), per * kLowpBlockElems);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    quantizeBlocks(sh, t, rs, j, per, p);
    for (int k = 0; k < n; ++k) {
      const int q = (r + k) % n;
      p->addStep(StepOp::kLowpDequant, 0, Buf::kSend, rs.base(j) + size_t(r) * per, Buf::kRecv,
                 size_t(q) * t.count + rs.offset(j), rs.length(j, t.count), static_cast<uint16_t>(q));
    }
  }
}

}  // namespace

void buildLowPrecisionProgram(const CommShape& sh, const Task& t, Program* p) {
  switch (t.kind) {
    case CollKind::kAllReduce: allReduce(sh, t, p); return;
    case CollKind::kAllGather: allGather(sh, t, p); return;
    case CollKind::kReduceScatter: reduceScatter(sh, t, p); return;
    case CollKind::kAlltoAll: alltoAll(sh, t, p); return;
    default: return;
  }
}

}  // namespace weft
