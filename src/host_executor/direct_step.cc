#include "host_executor/direct_step.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/tsan.h"
#include "host_executor/step_piece.h"
#include "math/lowp_quant.h"
#include "math/reduce_host.h"

namespace weft {
namespace {

// The fold reads nranks sources per element: in pieces of this many bytes the destination stays
// in cache between the passes.
constexpr size_t kFoldPieceBytes = 32 * 1024;

// `inputs[b]`, where given and not null, is rank b's published input (read at the result's own
// offset, kStepInput); every other rank is read from its staging area.
void foldPeers(const Task& t, const Step& st, const DirectView& v, const unsigned char* const* inputs, char* dst) {
  const size_t es = dataTypeSize(t.dtype);
  const size_t piece = kFoldPieceBytes / es;
  const unsigned post = (st.flags & kStepPost) ? kApplyPost : 0u;
  for (size_t at = 0; at < st.count; at += piece) {
    const size_t m = std::min(piece, st.count - at);
    char* d = dst + at * es;
    auto src = [&](int b) -> const unsigned char* {
      const unsigned char* in = inputs != nullptr ? inputs[b] : nullptr;
      return in != nullptr ? in + (st.dstOffset + at) * es : v.data[b] + (st.srcOffset + at) * es;
    };
    // The same order on every rank (0, 1, ..., n-1): every rank computes the same bits.
    reduceCopy(t.spec, d, nullptr, src(0), nullptr, m, v.nranks == 1 ? post : 0u);
    for (int b = 1; b < v.nranks; ++b) reduceCopy(t.spec, d, nullptr, d, src(b), m, b == v.nranks - 1 ? post : 0u);
  }
}

// A fold that may read published inputs finds them once per step (a window reference is looked up
// under the registration lock). The barriers order its reads after their owners' writes and before
// the owners' next writes; ThreadSanitizer is told so, keyed by the input's address (base/tsan.h).
void foldPublished(const Task& t, const Step& st, const DirectView& v, char* dst) {
  if ((st.flags & kStepInput) == 0) return foldPeers(t, st, v, nullptr, dst);
  std::vector<const unsigned char*> inputs(v.nranks);
  for (int b = 0; b < v.nranks; ++b)
    if ((inputs[b] = directPublished(v, b)) != nullptr) tsanAcquire(inputs[b]);
  foldPeers(t, st, v, inputs.data(), dst);
  for (const unsigned char* in : inputs)
    if (in != nullptr) tsanRelease(in);
}

LowpBlock* blocksOf(const DirectView& v, int rank, size_t firstBlock) {
  return reinterpret_cast<LowpBlock*>(v.data[rank]) + firstBlock;
}

template <typename T>
void lowpStep(const Task& t, const Step& st, const DirectView& v) {
  using M = MemoryType<T>;
  const size_t n = st.count;
  switch (st.op) {
    case StepOp::kLowpQuantize:
      lowpQuantize<T>(static_cast<const M*>(taskBuffer(t, st.srcBuf)) + st.srcOffset, n,
                      blocksOf(v, v.rank, st.dstOffset), 0, 1);
      return;
    case StepOp::kLowpDequant:
      lowpDequantize<T>(blocksOf(v, st.peer, st.srcOffset), n, static_cast<M*>(taskBuffer(t, st.dstBuf)) + st.dstOffset,
                        0, 1);
      return;
    case StepOp::kLowpReduce: {
      M* dst = static_cast<M*>(taskBuffer(t, st.dstBuf)) + st.dstOffset;
      for (size_t k = 0; k < lowpBlocks(n); ++k) {
        const size_t m = std::min(kLowpBlockElems, n - k * kLowpBlockElems);
        // Re-quantizing into this rank's own block is safe: block k of every rank has been read by
        // the time it is written, and no peer reads this rank's own slice.
        LowpBlock* requant = (st.flags & kStepRequant) ? blocksOf(v, v.rank, st.srcOffset) + k : nullptr;
        lowpReduceBlock<T>([&](int r) { return blocksOf(v, r, st.srcOffset) + k; }, v.nranks, m, requant,
                           dst + k * kLowpBlockElems);
      }
      return;
    }
    default: return;
  }
}

}  // namespace

bool lowpSupportsType(ncclDataType_t dtype) {
  return dtype == ncclFloat32 || dtype == ncclBfloat16 || dtype == ncclFloat16;
}

void directArrive(const DirectView& v, const OpStamp* stamp, uint64_t input) {
  std::atomic<uint64_t>& mine = *v.arrived[v.rank];
  const uint64_t slot = (mine.load(std::memory_order_relaxed) + 1) & 1;
  // Only this rank writes its counter; the stamp and the input go out with the release of the
  // arrival. Every barrier writes its input slot, so a peer never reads one left from an earlier.
  if (v.stamps != nullptr && stamp != nullptr) v.stamps[v.rank][slot] = *stamp;
  if (v.inputs != nullptr) v.inputs[v.rank][slot] = input;
  mine.fetch_add(1, std::memory_order_acq_rel);
}

const unsigned char* directPublished(const DirectView& v, int rank) {
  if (v.inputs == nullptr) return nullptr;
  // As with the stamps: the owner wrote this slot before the arrival this rank has seen, and
  // cannot write it again before this rank arrives at the next barrier.
  const uint64_t slot = v.arrived[v.rank]->load(std::memory_order_relaxed) & 1;
  const uint64_t word = v.inputs[rank][slot];
  if (!isPublishedWindowRef(word)) return reinterpret_cast<const unsigned char*>(word);
  return v.resolveWindowRef != nullptr ? v.resolveWindowRef(v.resolveCtx, rank, word) : nullptr;
}

int directUnresolved(const DirectView& v) {
  if (v.inputs == nullptr) return -1;
  const uint64_t slot = v.arrived[v.rank]->load(std::memory_order_relaxed) & 1;
  for (int p = 0; p < v.nranks; ++p)
    if (isPublishedWindowRef(v.inputs[p][slot]) && directPublished(v, p) == nullptr) return p;
  return -1;
}

bool directAnyPublished(const DirectView& v) {
  if (v.inputs == nullptr) return false;
  // The words, not what this process makes of them: every rank must reach the same answer.
  const uint64_t slot = v.arrived[v.rank]->load(std::memory_order_relaxed) & 1;
  for (int p = 0; p < v.nranks; ++p)
    if (v.inputs[p][slot] != 0) return true;
  return false;
}

int directStampMismatch(const DirectView& v, const OpStamp& mine, OpStamp* theirs) {
  if (v.stamps == nullptr) return -1;
  const uint64_t slot = v.arrived[v.rank]->load(std::memory_order_relaxed) & 1;
  for (int p = 0; p < v.nranks; ++p) {
    if (p == v.rank) continue;
    // Every peer has arrived here (acquire in directAllArrived): its stamp for this barrier is
    // visible, and it cannot be rewritten before this rank arrives at the next barrier.
    *theirs = v.stamps[p][slot];
    if (!stampsAgree(mine, *theirs, v.rank, p)) return p;
  }
  return -1;
}

bool directAllArrived(const DirectView& v, std::vector<int>* missing) {
  const uint64_t mine = v.arrived[v.rank]->load(std::memory_order_relaxed);
  bool all = true;
  for (int p = 0; p < v.nranks; ++p) {
    // Acquire: what the peer staged before it arrived is visible once its count is seen.
    if (p == v.rank || v.arrived[p]->load(std::memory_order_acquire) >= mine) continue;
    all = false;
    if (missing == nullptr) break;
    missing->push_back(p);
  }
  return all;
}

void runDirectData(const Task& t, const Step& st, const DirectView& v) {
  if (st.count == 0) return;
  const size_t es = dataTypeSize(t.dtype);
  switch (st.op) {
    case StepOp::kDirectStage:
      reduceCopy(t.spec, v.data[v.rank] + st.dstOffset * es, nullptr, nullptr,
                 static_cast<const char*>(taskBuffer(t, st.srcBuf)) + st.srcOffset * es, st.count,
                 (st.flags & kStepPre) ? kApplyPre : 0u);
      return;
    case StepOp::kDirectReduce:
      foldPublished(t, st, v, static_cast<char*>(taskBuffer(t, st.dstBuf)) + st.dstOffset * es);
      return;
    case StepOp::kDirectCopy:
      copyBytes(static_cast<char*>(taskBuffer(t, st.dstBuf)) + st.dstOffset * es, v.data[st.peer] + st.srcOffset * es,
                st.count * es);
      return;
    case StepOp::kLowpQuantize:
    case StepOp::kLowpDequant:
    case StepOp::kLowpReduce:
      if (t.dtype == ncclFloat32) lowpStep<float>(t, st, v);
      if (t.dtype == ncclBfloat16) lowpStep<BFloat16>(t, st, v);
      if (t.dtype == ncclFloat16) lowpStep<Float16>(t, st, v);
      return;
    default: return;
  }
}

}  // namespace weft
