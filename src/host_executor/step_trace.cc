#include "host_executor/step_trace.h"

#include "base/clock.h"
#include "comm/comm.h"
#include "trace/trace.h"

namespace weft {

void traceStep(const Task& t, const Sequence& s, uint32_t sequence, uint32_t step, const Step& st, int64_t startNs) {
  trace::Args a;
  a.str("op", collName(t.kind)).num("seq", static_cast<int64_t>(t.seq)).num("sequence", sequence);
  a.num("step", step).str("lane", laneName(s.lane)).num("channel", s.channel);
  if (s.lane == Lane::kDirect) {
    a.num("peer", st.peer);
  } else {
    if (stepSends(st.op)) a.num("sendPeer", s.sendPeer);
    if (stepReceives(st.op)) a.num("recvPeer", s.recvPeer);
  }
  a.num("bytes", static_cast<int64_t>(st.count * dataTypeSize(t.dtype)));
  trace::record(trace::Cat::kStep, t.comm->traceRank, stepName(st.op), startNs, nowNs(), a.take());
}

void traceWait(int traceRank, const WaitPoint& w, int64_t startNs, int64_t endNs) {
  trace::Args a;
  a.str("op", collName(w.kind)).num("seq", static_cast<int64_t>(w.opSeq)).num("step", w.step);
  a.str("stepOp", stepName(w.op)).str("lane", laneName(w.lane)).num("channel", w.channel);
  a.num("peer", w.peer).str("for", w.receiving ? "message" : "room");
  trace::record(trace::Cat::kWait, traceRank, "wait", startNs, endNs, a.take());
}

}  // namespace weft
