#include "host_executor/step_piece.h"

#include "comm/comm.h"
#include "math/reduce_host.h"
#include "program/piece_plan.h"

namespace weft {
namespace {

PieceOperands operands(const Task& t, const Step& st, int nranks, size_t done, size_t n, const void* const* ins,
                       int nIn, void* const* outs, int nOut) {
  const size_t es = dataTypeSize(t.dtype);
  // Only the buffers a step uses are addressed: a Send's task has no receive buffer and a Recv's
  // no send buffer, and offsetting a null pointer would be undefined.
  const char* src = stepReadsSrc(st.op)
                        ? static_cast<const char*>(taskBuffer(t, st.srcBuf)) + (st.srcOffset + done) * es
                        : nullptr;
  char* dst = stepWritesDst(st.op) ? static_cast<char*>(taskBuffer(t, st.dstBuf)) + (st.dstOffset + done) * es
                                   : nullptr;
  return PieceOperands{src, dst, ins, nIn, outs, nOut, n, es, nranks, t.count * es};
}

void run(const Task& t, const Step& st, const PieceOperands& p) {
  // Writes into the user's output (not into FIFO slots, which a peer reads at once) stream past
  // the caches when the operation is large (Task::streamOutput).
  const char* outBegin = t.streamOutput ? p.dst : nullptr;
  const char* outEnd = outBegin == nullptr ? nullptr : outBegin + p.n * p.es;
  auto isOutput = [&](const void* d) {
    const char* c = static_cast<const char*>(d);
    return outBegin != nullptr && c >= outBegin && c < outEnd;
  };
  runPiecePlan(
      st.op, pieceFlags(st.flags), p,
      [&](void* d0, void* d1, const void* partial, const void* local, size_t n, unsigned f) {
        // In place (d0 is a source) the lines were just read into the cache: plain stores are free.
        const bool stream = isOutput(d0) && d0 != partial && d0 != local;
        // Every second destination is a slot (piece_plan.h).
        reduceCopy(t.spec, d0, d1, partial, local, n, (stream ? f | kStreamDst0 : f) | kSlotDst1);
      },
      [&](void* d, const void* s, size_t bytes) {
        if (isOutput(d) && d != s)
          copyStreaming(d, s, bytes);
        else
          copyBytes(d, s, bytes);
      });
}

}  // namespace

void runPiece(const Task& t, const Step& st, size_t done, size_t n, const void* const* ins, int nIn, void* const* outs,
              int nOut) {
  run(t, st, operands(t, st, t.comm->nranks, done, n, ins, nIn, outs, nOut));
}

}  // namespace weft
