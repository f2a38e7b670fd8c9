// Ring algorithms. Ranks form a ring in rank order (next = rank+1). Every channel takes a
// contiguous share of the data and runs the same schedule on it, so channels pipeline
// independently. Step comments use "chunk j" for the j-th of nranks pieces of a channel's share.
#include <algorithm>

#include "collectives/ring/ring.h"
#include "collectives/ring/ring_schedule.h"

namespace weft {
namespace {

using ring::mod;
using ring::split;

// Elements of one FIFO slot: the most a ring step moves (see allReduce).
size_t chunkElems(const CommShape& sh, const Task& t) { return sh.slotBytes / dataTypeSize(t.dtype); }

// Reduce-scatter then all-gather: rank r ends the reduce-scatter owning chunk r+1, the value of
// which it writes to its output and passes on in the same step. The channel's share is processed
// in loops of nranks chunks of at most one FIFO slot each: a step never sends more than a slot, so
// every rank's outgoing FIFO drains as fast as it fills and the ring cannot deadlock on full FIFOs.
void allReduce(const CommShape& sh, const Task& t, int ch, size_t begin, size_t len, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const size_t loopElems = size_t(n) * chunkElems(sh, t);
  p->beginSequence(Lane::kRing, ch, mod(r + 1, n), mod(r - 1, n));
  for (size_t loopBegin = 0; loopBegin < len; loopBegin += loopElems) {
    const size_t loopLen = std::min(loopElems, len - loopBegin);
    auto chunk = [&](int j) { return split(loopLen, n, j); };
    auto at = [&](int j) { return begin + loopBegin + chunk(j).begin; };
    int j = r;
    p->addStep(StepOp::kSend, kStepPre, at(j), at(j), chunk(j).count);
    for (int k = 1; k < n - 1; ++k) {
      j = mod(r - k, n);
      p->addStep(StepOp::kRecvReduceSend, kStepPre, at(j), at(j), chunk(j).count);
    }
    j = mod(r + 1, n);
    p->addStep(StepOp::kRecvReduceCopySend, kStepPre | kStepPost, at(j), at(j), chunk(j).count);
    for (int k = 1; k < n - 1; ++k) {
      j = mod(r + 1 - k, n);
      p->addStep(StepOp::kRecvCopySend, 0, at(j), at(j), chunk(j).count);
    }
    j = mod(r + 2, n);
    p->addStep(StepOp::kRecv, 0, at(j), at(j), chunk(j).count);
  }
}

// For latency-bound sizes: every rank's input (pre-multiplied by its owner) travels once around the
// ring into every rank's scratch area, block r holding rank r's input; then each rank folds the
// blocks in rank order. n-1 hops instead of the 2(n-1) of reduce-scatter + all-gather, and still
// the same bits on every rank. The task's scratch holds nranks blocks of count elements.
void allReduceOneShot(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const size_t c = t.count;
  p->beginSequence(Lane::kRing, 0, mod(r + 1, n), mod(r - 1, n));
  p->addStep(StepOp::kCopySend, kStepPre, Buf::kSend, 0, Buf::kScratch, size_t(r) * c, c);
  for (int k = 1; k < n - 1; ++k)
    p->addStep(StepOp::kRecvCopySend, 0, Buf::kSend, 0, Buf::kScratch, size_t(mod(r - k, n)) * c, c);
  p->addStep(StepOp::kRecv, 0, Buf::kSend, 0, Buf::kScratch, size_t(mod(r + 1, n)) * c, c);
  p->addStep(StepOp::kReduceScratch, kStepPost, Buf::kScratch, 0, Buf::kRecv, 0, c);
}

// A chain from the root around the ring; the last rank before the root only receives.
void broadcast(const CommShape& sh, const Task& t, int ch, size_t begin, size_t len, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const int pos = mod(r - t.root, n);
  p->beginSequence(Lane::kRing, ch, pos == n - 1 ? -1 : mod(r + 1, n), pos == 0 ? -1 : mod(r - 1, n));
  if (pos == 0)
    p->addStep(StepOp::kCopySend, 0, begin, begin, len);
  else if (pos == n - 1)
    p->addStep(StepOp::kRecv, 0, begin, begin, len);
  else
    p->addStep(StepOp::kRecvCopySend, 0, begin, begin, len);
}

// A chain that starts just after the root and ends at it.
void reduce(const CommShape& sh, const Task& t, int ch, size_t begin, size_t len, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const int pos = mod(r - t.root - 1, n);  // the root is last
  p->beginSequence(Lane::kRing, ch, pos == n - 1 ? -1 : mod(r + 1, n), pos == 0 ? -1 : mod(r - 1, n));
  if (pos == 0)
    p->addStep(StepOp::kSend, kStepPre, begin, begin, len);
  else if (pos == n - 1)
    p->addStep(StepOp::kRecvReduceCopy, kStepPre | kStepPost, begin, begin, len);
  else
    p->addStep(StepOp::kRecvReduceSend, kStepPre, begin, begin, len);
}

// Rank r's block travels n-1 hops; every rank copies each block it sees into place. Loops of one
// slot per block, for the same reason as allReduce.
void allGather(const CommShape& sh, const Task& t, int ch, size_t begin, size_t len, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const size_t block = t.count, step = chunkElems(sh, t);
  p->beginSequence(Lane::kRing, ch, mod(r + 1, n), mod(r - 1, n));
  for (size_t off = begin; off < begin + len; off += step) {
    const size_t c = std::min(step, begin + len - off);
    p->addStep(StepOp::kCopySend, 0, off, size_t(r) * block + off, c);
    for (int k = 1; k < n - 1; ++k) {
      int j = mod(r - k, n);
      p->addStep(StepOp::kRecvCopySend, 0, 0, size_t(j) * block + off, c);
    }
    int j = mod(r + 1, n);
    p->addStep(StepOp::kRecv, 0, 0, size_t(j) * block + off, c);
  }
}

// The reduce-scatter half of allReduce, arranged so that rank r finishes block r.
void reduceScatter(const CommShape& sh, const Task& t, int ch, size_t begin, size_t len, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const size_t block = t.count, step = chunkElems(sh, t);
  p->beginSequence(Lane::kRing, ch, mod(r + 1, n), mod(r - 1, n));
  for (size_t off = begin; off < begin + len; off += step) {
    const size_t c = std::min(step, begin + len - off);
    int j = mod(r - 1, n);
    p->addStep(StepOp::kSend, kStepPre, size_t(j) * block + off, 0, c);
    for (int k = 1; k < n - 1; ++k) {
      j = mod(r - 1 - k, n);
      p->addStep(StepOp::kRecvReduceSend, kStepPre, size_t(j) * block + off, 0, c);
    }
    p->addStep(StepOp::kRecvReduceCopy, kStepPre | kStepPost, size_t(r) * block + off, off, c);
  }
}

// One rank: every collective is a local copy (with the reduction's pre and post applied).
void singleRank(const Task& t, Program* p) {
  p->beginSequence(Lane::kRing, 0, -1, -1);
  switch (t.kind) {
    case CollKind::kAllReduce:
    case CollKind::kReduce:
    case CollKind::kReduceScatter: p->addStep(StepOp::kCopy, kStepPre | kStepPost, 0, 0, t.count); break;
    default: p->addStep(StepOp::kCopy, 0, 0, 0, t.count); break;
  }
}

}  // namespace

size_t ringOneShotScratchBytes(const CommShape& sh, const Task& t) {
  // The tuner picks the one-shot ring as Ring with the LL protocol (LL128 is LL in host mode), and
  // only within WEFT_ONESHOT_MAX_BYTES, which bounds the scratch.
  const size_t bytes = t.count * dataTypeSize(t.dtype);
  return t.kind == CollKind::kAllReduce && sh.nranks > 1 && t.protocol != Protocol::kSimple &&
                 bytes <= size_t(sh.agreed->oneShotMaxBytes)
             ? size_t(sh.nranks) * bytes
             : 0;
}

void buildRingProgram(const CommShape& sh, const Task& t, int nChannels, Program* p) {
  if (isVariableKind(t.kind)) return buildRingVProgram(sh, t, nChannels, p);
  if (sh.nranks == 1) return singleRank(t, p);
  if (t.scratch != nullptr && t.kind == CollKind::kAllReduce) return allReduceOneShot(sh, t, p);
  for (int ch = 0; ch < nChannels; ++ch) {
    ring::Range share = split(t.count, nChannels, ch);
    switch (t.kind) {
      case CollKind::kAllReduce: allReduce(sh, t, ch, share.begin, share.count, p); break;
      case CollKind::kBroadcast: broadcast(sh, t, ch, share.begin, share.count, p); break;
      case CollKind::kReduce: reduce(sh, t, ch, share.begin, share.count, p); break;
      case CollKind::kAllGather: allGather(sh, t, ch, share.begin, share.count, p); break;
      case CollKind::kReduceScatter: reduceScatter(sh, t, ch, share.begin, share.count, p); break;
      default: break;
    }
  }
}

}  // namespace weft
