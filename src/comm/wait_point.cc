#include "comm/wait_point.h"

#include <cinttypes>
#include <cstdio>

#include "math/reduce_host.h"

namespace weft {

std::string describeWait(const WaitPoint& w, const std::string& directWhat) {
  const auto dtype = static_cast<ncclDataType_t>(w.dtype);
  char buf[512];
  if (w.lane == Lane::kDirect) {
    const std::string what = !directWhat.empty() ? directWhat
                                                 : "for rank " + std::to_string(w.peer) + " (direct-access lane)";
    snprintf(buf, sizeof buf, "rank %d is waiting %s in %s #%" PRIu64 " (%zu x %s, direct lane, step %u of %u: %s)",
             w.rank, what.c_str(), collName(w.kind), w.opSeq, size_t(w.count), dataTypeName(dtype), w.step + 1,
             w.nSteps, stepName(w.op));
    return buf;
  }
  snprintf(buf, sizeof buf,
           "rank %d is waiting %s rank %d in %s #%" PRIu64
           " (%zu x %s, %s lane, channel %d, step %u of %u: %s, %zu of %zu elements done)",
           w.rank, w.receiving ? "to receive from" : "for room to send to", w.peer, collName(w.kind), w.opSeq,
           size_t(w.count), dataTypeName(dtype), laneName(w.lane), w.channel, w.step + 1, w.nSteps, stepName(w.op),
           size_t(w.done), size_t(w.stepCount));
  return buf;
}

}  // namespace weft
