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

#include "collectives/algorithms.h"
#include "collectives/dda/dda_rounds.h"
#include "comm/comm.h"
#include "base/params.h"
#include "host_executor/direct_step.h"
#include "math/lowp_quant.h"

namespace weft {
namespace {

using dda::Rounds;

size_t halfBlocks(const Task& t) { return t.comm->direct.dataBytes() / 2 / sizeof(LowpBlock); }

void allReduce(const Task& t, Program* p) {
  const int n = t.comm->nranks, r = t.comm->rank;
  // Each rank's slice is at most sliceBlocks blocks of the half.
  const size_t sliceBlocks = std::max<size_t>(1, halfBlocks(t) / size_t(n));
  Rounds rs(t.comm, t.count, halfBlocks(t), size_t(n) * sliceBlocks * kLowpBlockElems);
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
void allGather(const Task& t, Program* p) {
  const int n = t.comm->nranks, r = t.comm->rank;
  Rounds rs(t.comm, t.count, halfBlocks(t), halfBlocks(t) * kLowpBlockElems);
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
void quantizeBlocks(const Task& t, const Rounds& rs, uint64_t j, size_t blocksPer, Program* p) {
  for (int b = 0; b < t.comm->nranks; ++b)
    p->addStep(StepOp::kLowpQuantize, 0, Buf::kSend, size_t(b) * t.count + rs.offset(j), Buf::kRecv,
               rs.base(j) + size_t(b) * blocksPer, rs.length(j, t.count));
  p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
}

void reduceScatter(const Task& t, Program* p) {
  const int r = t.comm->rank;
  const size_t per = std::max<size_t>(1, halfBlocks(t) / size_t(t.comm->nranks));
  Rounds rs(t.comm, t.count, halfBlocks(t), per * kLowpBlockElems);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    quantizeBlocks(t, rs, j, per, p);
    p->addStep(StepOp::kLowpReduce, 0, Buf::kSend, rs.base(j) + size_t(r) * per, Buf::kRecv, rs.offset(j),
               rs.length(j, t.count));
  }
}

void alltoAll(const Task& t, Program* p) {
  const int n = t.comm->nranks, r = t.comm->rank;
  const size_t per = std::max<size_t>(1, halfBlocks(t) / size_t(n));
  Rounds rs(t.comm, t.count, halfBlocks(t), per * kLowpBlockElems);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    quantizeBlocks(t, rs, j, per, p);
    for (int k = 0; k < n; ++k) {
      const int q = (r + k) % n;
      p->addStep(StepOp::kLowpDequant, 0, Buf::kSend, rs.base(j) + size_t(r) * per, Buf::kRecv,
                 size_t(q) * t.count + rs.offset(j), rs.length(j, t.count), static_cast<uint16_t>(q));
    }
  }
}

int64_t switchFor(const param::Agreed& a, CollKind k) {
  switch (k) {
    case CollKind::kAllReduce: return a.lowPrecisionAllReduce;
    case CollKind::kAllGather: return a.lowPrecisionAllGather;
    case CollKind::kReduceScatter: return a.lowPrecisionReduceScatter;
    case CollKind::kAlltoAll: return a.lowPrecisionAllToAll;
    default: return 0;
  }
}

}  // namespace

bool lowPrecisionEligible(const Task& t) {
  if (!ddaEligible(t) || !lowpSupportsType(t.dtype)) return false;
  const bool reduces = t.kind == CollKind::kAllReduce || t.kind == CollKind::kReduceScatter;
  // Sum only: avg, premulsum, prod, min and max keep their exact algorithms.
  return !reduces || t.op == ncclSum;
}

bool lowPrecisionPreferred(const Task& t) {
  if (!lowPrecisionEligible(t)) return false;
  const param::Agreed& a = t.comm->agreed;
  const int64_t on = switchFor(a, t.kind);
  if (on == 0 || (on < 0 && !a.lowPrecision)) return false;
  // RCCL's measure: the AllReduce buffer, or all ranks' data for the others.
  size_t bytes = t.count * dataTypeSize(t.dtype);
  if (t.kind != CollKind::kAllReduce) bytes *= size_t(t.comm->nranks);
  return bytes >= size_t(a.lowPrecisionMinBytes);
}

void buildLowPrecisionProgram(const Task& t, Program* p) {
  switch (t.kind) {
    case CollKind::kAllReduce: allReduce(t, p); return;
    case CollKind::kAllGather: allGather(t, p); return;
    case CollKind::kReduceScatter: reduceScatter(t, p); return;
    case CollKind::kAlltoAll: alltoAll(t, p); return;
    default: return;
  }
}

}  // namespace weft
