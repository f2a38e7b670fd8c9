#include "collectives/model/cost_path.h"

#include <algorithm>
#include <cmath>

namespace weft {

Path pathFor(const ModelInput& in, const HostConstants& hc, bool crossesHosts, double workingSet) {
  Path p;
  double bw = workingSet > hc.cacheMiB * 1048576.0 ? std::min(hc.copyGBps, hc.memGBps) : hc.copyGBps;
  double lat = hc.handoffUs;
  if (in.intraLink == LinkClass::kShmCrossNuma) {
    bw *= hc.crossNumaBwScale;
    lat *= hc.crossNumaLatScale;
  }
  const int sharing = std::max(in.ranksPerHost, in.ranksPerMachine);
  p.workScale = std::max(1.0, double(sharing) / std::max(1, in.cores));
  // More ranks than cores: the executor yields at once, so a peer's answer costs a switch to it.
  if (sharing > in.cores) lat = hc.yieldHandoffUs;
  p.localLatUs = lat;
  p.localCopyPerB = 1.0 / (bw * 1e3);
  p.localReducePerB = 1.0 / (std::min(bw, hc.reduceGBps) * 1e3);
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
  return fillHops * p.latUs + std::max(work, chain);
}

double barrierUs(const ModelInput& in, const Path& p) { return p.latUs * p.workScale + in.nranks * p.stepUs; }

int log2Ceil(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

}  // namespace weft
