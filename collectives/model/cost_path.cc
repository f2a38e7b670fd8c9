#include "collectives/model/cost_path.h"

#include <algorithm>
#include <cmath>

namespace weft {

Path pathFor(const ModelInput& in, const HostConstants& hc, bool crossesHosts, double workingSet) {
  Path p;
  const double numaScale = in.intraLink == LinkClass::kShmCrossNuma ? hc.crossNumaBwScale : 1.0;
  const double cacheBw = hc.copyGBps * numaScale, memBw = std::min(hc.copyGBps, hc.memGBps) * numaScale;
  const bool beyondCache = workingSet > hc.cacheMiB * 1048576.0;
  // Within a host, a working set beyond the caches is paid for once (memPerB), while the moves
  // through FIFO slots and staging halves, which are bounded and stay cached, run at cache speed.
  // Across hosts the whole path runs at memory speed, as it always has (the network bounds it).
  double bw = beyondCache && crossesHosts ? memBw : cacheBw;
  p.memPerB = beyondCache && !crossesHosts ? 1.0 / (memBw * 1e3) - 1.0 / (cacheBw * 1e3) : 0.0;
  double lat = hc.handoffUs;
  if (in.intraLink == LinkClass::kShmCrossNuma) lat *= hc.crossNumaLatScale;
  const int sharing = std::max(in.ranksPerHost, in.ranksPerMachine);
  p.workScale = std::max(1.0, double(sharing) / std::max(1, in.cores));
  // More ranks than cores: the executor yields at once, so a peer's answer costs a switch to it,
  // and the rank waited for is one of the `workScale` that take turns on a core (4 ranks on 2
  // cores: a ring hop and a DDA barrier each measured 2-3 calibrated yield handoffs).
  if (p.oversubscribed()) lat = hc.yieldHandoffUs * p.workScale;
  p.localLatUs = lat;
  p.localCopyPerB = 1.0 / (bw * 1e3);
  p.localReducePerB = 1.0 / (std::min(bw, hc.reduceGBps) * 1e3);
  // Across hosts too the receiver reads a slot another thread (the proxy) filled, at local speed.
  p.hopPerB = in.channelsInParallel ? 0.0 : 1.0 / (std::min(bw, hc.peerReadGBps) * 1e3);
  if (crossesHosts) {
    bw = std::min(bw, hc.netGBps);
    lat = std::max(lat, hc.netLatUs);
  }
  p.latUs = lat;
  p.copyPerB = 1.0 / (bw * 1e3);
  p.reducePerB = 1.0 / (std::min(bw, hc.reduceGBps) * 1e3);
  p.peerReadPerB = 1.0 / (std::min(bw, hc.peerReadGBps) * 1e3);
  p.stepUs = hc.stepUs;
  return p;
}

double pipelined(const ModelInput& in, const Path& p, int c, double fillHops, double stepsPerLoop, double stepBytes,
                 double perByte) {
  double perChannel = stepBytes / c;
  double loops = std::max(1.0, std::ceil(perChannel / double(in.slotBytes)));
  double pieceBytes = perChannel / loops;
  double pieces = loops * stepsPerLoop;  // per channel
  double work = (in.channelsInParallel ? 1 : c) * pieces * (p.stepUs + pieceBytes * perByte) * p.workScale;
  double chain = pieces * (p.latUs + p.stepUs);
  return fillHops * p.latUs + (p.oversubscribed() ? work + chain : std::max(work, chain));
}

double barrierUs(const ModelInput& in, const Path& p) {
  return p.latUs * p.workScale + in.nranks * p.stepUs + (p.oversubscribed() ? 0.0 : p.latUs);
}

int log2Ceil(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

}  // namespace weft
