#include "device/step_piece.h"

#include <cstring>

#include "core/comm.h"
#include "device/reduce_host.h"

namespace weft {

void runStepPiece(const Task& t, const Step& st, int nranks, size_t done, size_t n, const void* in, void* out) {
  const size_t es = dataTypeSize(t.dtype);
  // Only the buffers a step uses are addressed: a Send's task has no receive buffer and a Recv's
  // no send buffer, and offsetting a null pointer would be undefined.
  const char* src =
      stepReadsSrc(st.op) ? static_cast<const char*>(taskBuffer(t, st.srcBuf)) + (st.srcOffset + done) * es : nullptr;
  char* dst = stepWritesDst(st.op)
                  ? static_cast<char*>(taskBuffer(t, st.dstBuf)) + (st.dstOffset + done) * es
                  : nullptr;
  const unsigned flags = ((st.flags & kStepPre) ? kApplyPre : 0u) | ((st.flags & kStepPost) ? kApplyPost : 0u);
  switch (st.op) {
    case StepOp::kSend: reduceCopy(t.spec, out, nullptr, nullptr, src, n, flags); break;
    case StepOp::kRecv: reduceCopy(t.spec, dst, nullptr, in, nullptr, n, flags); break;
    case StepOp::kRecvReduceSend: reduceCopy(t.spec, out, nullptr, in, src, n, flags); break;
    case StepOp::kRecvReduceCopy: reduceCopy(t.spec, dst, nullptr, in, src, n, flags); break;
    case StepOp::kRecvReduceCopySend: reduceCopy(t.spec, dst, out, in, src, n, flags); break;
    case StepOp::kRecvCopySend: reduceCopy(t.spec, dst, out, in, nullptr, n, flags); break;
    case StepOp::kCopySend:
      if (src == dst)
        reduceCopy(t.spec, out, nullptr, nullptr, src, n, flags);
      else
        reduceCopy(t.spec, dst, out, nullptr, src, n, flags);
      break;
    case StepOp::kCopy:
      if (src != dst || flags != 0) reduceCopy(t.spec, dst, nullptr, nullptr, src, n, flags);
      break;
    case StepOp::kReduceScratch: {
      // The same fold, in the same order, on every rank: results are bit-identical.
      const size_t stride = t.count * es;
      for (int b = 1; b < nranks; ++b)
        reduceCopy(t.spec, dst, nullptr, b == 1 ? src : dst, src + b * stride, n,
                   b == nranks - 1 ? (flags & kApplyPost) : 0u);
      break;
    }
    default: break;  // direct-lane ops: direct_step.cc
  }
}

void runMultiPeerPiece(const Task& t, const Step& st, size_t done, size_t n, const void* const* ins, int nIn,
                       void* const* outs, int nOut) {
  if (nIn <= 1 && nOut <= 1)
    return runStepPiece(t, st, t.comm->nranks, done, n, nIn ? ins[0] : nullptr, nOut ? outs[0] : nullptr);
  const size_t es = dataTypeSize(t.dtype);
  const char* src =
      stepReadsSrc(st.op) ? static_cast<const char*>(taskBuffer(t, st.srcBuf)) + (st.srcOffset + done) * es : nullptr;
  char* dst = stepWritesDst(st.op)
                  ? static_cast<char*>(const_cast<void*>(taskBuffer(t, st.dstBuf))) + (st.dstOffset + done) * es
                  : nullptr;
  if (st.op == StepOp::kCopySend && src == dst) dst = nullptr;  // in place: nothing to copy locally
  const unsigned pre = (st.flags & kStepPre) ? kApplyPre : 0u, post = (st.flags & kStepPost) ? kApplyPost : 0u;
  // The value is computed once, into the first target (and the second alongside), then copied to
  // the rest: every peer receives the very bits this rank keeps.
  void* targets[kMaxSeqPeers + 1];
  int nt = 0;
  if (dst != nullptr) targets[nt++] = dst;
  for (int i = 0; i < nOut; ++i) targets[nt++] = outs[i];
  void* acc = targets[0];
  void* second = nt > 1 ? targets[1] : nullptr;
  if (nIn == 0) {
    reduceCopy(t.spec, acc, second, nullptr, src, n, pre | post);
  } else {
    for (int i = 0; i < nIn; ++i) {
      const bool last = i == nIn - 1;
      reduceCopy(t.spec, acc, last ? second : nullptr, ins[i], i == 0 ? src : acc, n,
                 (i == 0 ? pre : 0u) | (last ? post : 0u));
    }
  }
  for (int k = 2; k < nt; ++k) memcpy(targets[k], acc, n * es);
}

}  // namespace weft
