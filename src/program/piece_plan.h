// What one piece of one step computes, written once for both executors. The host executor
// (step_piece.cc) and the GPU kernel (gpu/step_kernel.cu) pass their own reduceCopy and copy
// (a host loop, a block-wide device loop); the decisions about which buffers are read, combined
// and written, and in which order, are made here, so a host rank and a GPU rank produce the same
// bits from the same program.
#pragma once
#include <cstddef>

#include "math/port.h"
#include "math/reduce_host.h"
#include "program/step.h"

namespace weft {

// One piece's operands. src/dst point at element `done` of the step's buffers (null when the step
// does not read / write them); ins are the received messages (recvMask peers, in mask order),
// outs the slots to fill (sendMask peers). scratchStride is the byte distance between ranks' blocks
// of the scratch fold (kReduceScratch).
struct PieceOperands {
  const char* src;
  char* dst;
  const void* const* ins;
  int nIn;
  void* const* outs;
  int nOut;
  size_t n;   // elements
  size_t es;  // bytes per element
  int nranks;
  size_t scratchStride;
};

// reduce(dst0, dst1, partial, local, n, flags) has reduceCopy's contract (reduce_host.h);
// copy(dst, src, bytes) copies bytes. flags are kApplyPre / kApplyPost for the step.
#if defined(__CUDACC__) && !defined(__HIPCC__)
#pragma nv_exec_check_disable
#endif
template <typename Reduce, typename Copy>
WEFT_HOST_DEVICE inline void runPiecePlan(StepOp op, unsigned flags, const PieceOperands& p, Reduce&& reduce,
                                          Copy&& copy) {
  const char* src = p.src;
  char* dst = p.dst;
  const size_t n = p.n;
  if (p.nIn <= 1 && p.nOut <= 1) {
    const void* in = p.nIn ? p.ins[0] : nullptr;
    void* out = p.nOut ? p.outs[0] : nullptr;
    switch (op) {
      case StepOp::kSend: reduce(out, nullptr, nullptr, src, n, flags); break;
      case StepOp::kRecv: reduce(dst, nullptr, in, nullptr, n, flags); break;
      case StepOp::kRecvReduceSend: reduce(out, nullptr, in, src, n, flags); break;
      case StepOp::kRecvReduceCopy: reduce(dst, nullptr, in, src, n, flags); break;
      case StepOp::kRecvReduceCopySend: reduce(dst, out, in, src, n, flags); break;
      case StepOp::kRecvCopySend: reduce(dst, out, in, nullptr, n, flags); break;
      case StepOp::kCopySend:
        if (src == dst)
          reduce(out, nullptr, nullptr, src, n, flags);
        else
          reduce(dst, out, nullptr, src, n, flags);
        break;
      case StepOp::kCopy:
        if (src != dst || flags != 0) reduce(dst, nullptr, nullptr, src, n, flags);
        break;
      case StepOp::kReduceScratch:
        // The same fold, in the same order, on every rank: results are bit-identical.
        for (int b = 1; b < p.nranks; ++b)
          reduce(dst, nullptr, b == 1 ? src : dst, src + b * p.scratchStride, n,
                 b == p.nranks - 1 ? (flags & kApplyPost) : 0u);
        break;
      default: break;  // direct-lane ops: direct_step.cc
    }
    return;
  }
  if (op == StepOp::kCopySend && src == dst) dst = nullptr;  // in place: nothing to copy locally
  const unsigned pre = flags & kApplyPre, post = flags & kApplyPost;
  // The value is computed once, into the first target (and the second alongside), then copied to
  // the rest: every peer receives the very bits this rank keeps.
  void* targets[kMaxSeqPeers + 1];
  int nt = 0;
  if (dst != nullptr) targets[nt++] = dst;
  for (int i = 0; i < p.nOut; ++i) targets[nt++] = p.outs[i];
  void* acc = targets[0];
  void* second = nt > 1 ? targets[1] : nullptr;
  if (p.nIn == 0) {
    reduce(acc, second, nullptr, src, n, pre | post);
  } else {
    for (int i = 0; i < p.nIn; ++i) {
      const bool last = i == p.nIn - 1;
      reduce(acc, last ? second : nullptr, p.ins[i], i == 0 ? src : acc, n, (i == 0 ? pre : 0u) | (last ? post : 0u));
    }
  }
  for (int k = 2; k < nt; ++k) copy(targets[k], acc, n * p.es);
}

WEFT_HOST_DEVICE inline unsigned pieceFlags(uint8_t stepFlags) {
  return ((stepFlags & kStepPre) ? unsigned(kApplyPre) : 0u) | ((stepFlags & kStepPost) ? unsigned(kApplyPost) : 0u);
}

}  // namespace weft
