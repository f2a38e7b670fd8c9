#include "tuning/cost_model.h"

#include <algorithm>
#include <cmath>

namespace weft {

const ConstantField kConstantFields[] = {
    {"copyGBps", &HostConstants::copyGBps, "memcpy bandwidth of one core, cache-resident (GB/s)", true},
    {"reduceGBps", &HostConstants::reduceGBps, "float a+b bandwidth of one core (GB/s of output)", true},
    {"handoffUs", &HostConstants::handoffUs, "cache-line handoff between two cores (us)", false},
    {"stepUs", &HostConstants::stepUs, "executor overhead per FIFO piece (us)", false},
    {"futexWakeUs", &HostConstants::futexWakeUs, "futex wake of a sleeping rank (us)", false},
    {"yieldHandoffUs", &HostConstants::yieldHandoffUs, "handoff between two ranks sharing a core (us)", false},
    {"memGBps", &HostConstants::memGBps, "memcpy bandwidth of one core beyond the caches (GB/s)", true},
    {"peerReadGBps", &HostConstants::peerReadGBps, "one core reading what another just wrote (GB/s)", true},
    {"cacheMiB", &HostConstants::cacheMiB, "working set that still fits the caches (MiB)", true},
    {"netGBps", &HostConstants::netGBps, "network bandwidth between hosts (GB/s)", true},
    {"netLatUs", &HostConstants::netLatUs, "network latency between hosts (us)", false},
    {"crossNumaBwScale", &HostConstants::crossNumaBwScale, "cross-NUMA bandwidth / copyGBps", true},
    {"crossNumaLatScale", &HostConstants::crossNumaLatScale, "cross-NUMA latency / handoffUs", false},
};
const int kNumConstantFields = static_cast<int>(sizeof(kConstantFields) / sizeof(kConstantFields[0]));

const char* linkClassName(LinkClass c) {
  switch (c) {
    case LinkClass::kShm: return "shm";
    case LinkClass::kShmCrossNuma: return "shm-cross-numa";
    case LinkClass::kNet: return "net";
    case LinkClass::kCount: break;
  }
  return "?";
}

int tunedCollIndex(CollKind k) {
  switch (k) {
    case CollKind::kAllReduce: return 0;
    case CollKind::kBroadcast: return 1;
    case CollKind::kReduce: return 2;
    case CollKind::kAllGather: return 3;
    case CollKind::kReduceScatter: return 4;
    default: return -1;
  }
}

CollKind tunedCollKind(int index) {
  constexpr CollKind kKinds[kNumTunedColls] = {CollKind::kAllReduce, CollKind::kBroadcast, CollKind::kReduce,
                                               CollKind::kAllGather, CollKind::kReduceScatter};
  return kKinds[index];
}

namespace {

// FP8 payload per float input byte, plus one 4-byte scale per 32-element block.
constexpr double kLowpBytesRatio = 0.25 + 4.0 / (32.0 * 4.0);

// The costs of one hop as the algorithm sees it: the slowest link on its path gates a pipeline.
struct Path {
  double latUs;      // exposed wait for a peer's piece
  double copyPerB;   // us per byte copied over the path
  double reducePerB; // us per byte reduced (read two, write one)
  double peerReadPerB;  // us per byte read from a peer's staging area (direct reads)
  double stepUs;     // fixed cost per piece
  double workScale;  // > 1 when ranks outnumber cores: each rank gets a share of a core
};

// workingSet: bytes the operation touches on this host; beyond the caches copies run at memory
// bandwidth.
Path pathFor(const ModelInput& in, const HostConstants& hc, bool crossesHosts, double workingSet) {
  Path p;
  double bw = workingSet > hc.cacheMiB * 1048576.0 ? std::min(hc.copyGBps, hc.memGBps) : hc.copyGBps;
  double lat = hc.handoffUs;
  if (in.intraLink == LinkClass::kShmCrossNuma) {
    bw *= hc.crossNumaBwScale;
    lat *= hc.crossNumaLatScale;
  }
  p.workScale = std::max(1.0, double(in.ranksPerHost) / std::max(1, in.cores));
  // More ranks than cores: the executor yields at once, so a peer's answer costs a switch to it.
  if (in.ranksPerHost > in.cores) lat = hc.yieldHandoffUs;
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

// A pipelined schedule over c channels run by one thread per rank. Each channel moves `stepBytes`
// per step in pieces of at most one slot, `stepsPerLoop` steps per pass over its share. A channel
// waits `latUs` for every piece from its predecessor; the thread can fill that wait with other
// channels' pieces, so the time is the larger of the thread's total work and one channel's chain
// of waits, plus the pipeline fill of `fillHops` hops.
double pipelined(const ModelInput& in, const Path& p, int c, double fillHops, double stepsPerLoop,
                 double stepBytes, double perByte) {
  double perChannel = stepBytes / c;
  double loops = std::max(1.0, std::ceil(perChannel / double(in.slotBytes)));
  double pieceBytes = perChannel / loops;
  double pieces = loops * stepsPerLoop;  // per channel
  double work = c * pieces * (p.stepUs + pieceBytes * perByte) * p.workScale;
  double chain = pieces * (p.latUs + p.stepUs);
  return fillHops * p.latUs + std::max(work, chain);
}

int log2Ceil(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

double ringUs(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int c, double S) {
  const int n = in.nranks;
  const double avgAR = (p.reducePerB + p.copyPerB) / 2;
  switch (coll) {
    case CollKind::kAllReduce:
      if (proto != Protocol::kSimple) {
        // One-shot ring: every input travels n-1 hops into every rank's scratch, then each rank
        // folds the n blocks. Only for sizes the scratch may hold.
        if (S > double(in.oneShotMaxBytes)) return -1;
        double pieces = std::max(1.0, std::ceil(S / double(in.slotBytes)));
        return (n - 1) * (p.latUs + pieces * p.stepUs) +
               ((n - 1) * S * p.copyPerB + (n - 1) * S * p.reducePerB) * p.workScale;
      }
      // Reduce-scatter then all-gather: 2(n-1) steps of S/n each.
      return pipelined(in, p, c, 2.0 * (n - 1), 2.0 * (n - 1), S / n, avgAR);
    case CollKind::kAllGather: return pipelined(in, p, c, n - 1, n - 1, S / n, p.copyPerB);
    case CollKind::kReduceScatter: return pipelined(in, p, c, n - 1, n - 1, S / n, p.reducePerB);
    // A chain from (to) the root: n-1 hops of fill, then every rank forwards each piece once.
    case CollKind::kBroadcast: return pipelined(in, p, c, n - 1, 1, S, p.copyPerB);
    case CollKind::kReduce: return pipelined(in, p, c, n - 1, 1, S, p.reducePerB);
    default: return -1;
  }
}

// Double binary tree: two trees, each carrying half of the data, a rank interior in at most one.
// Depth log2(n); AllReduce goes up (reduce from two children) and down (copy to two children).
// A node forwards a piece only once it holds all of it (and, going up, its children's), so every
// hop of the pipeline's fill also pays for moving one piece.
double treeUs(const ModelInput& in, const Path& p, CollKind coll, int c, double S) {
  const int d = log2Ceil(in.nranks);
  const double piece = std::min(S / 2 / c, double(in.slotBytes));
  auto fill = [&](double hops, double perByte) { return hops * piece * perByte * p.workScale; };
  const double avgAR = (p.reducePerB + p.copyPerB) / 2;
  switch (coll) {
    case CollKind::kAllReduce: return pipelined(in, p, c, 2.0 * d, 4, S / 2, avgAR) + fill(2.0 * d, avgAR);
    case CollKind::kBroadcast: return pipelined(in, p, c, d, 2, S / 2, p.copyPerB) + fill(d, p.copyPerB);
    case CollKind::kReduce: return pipelined(in, p, c, d, 2, S / 2, p.reducePerB) + fill(d, p.reducePerB);
    default: return -1;
  }
}

// A flat barrier of the local ranks: each posts a counter and waits for all; the last arrival's
// post reaches the others after one handoff, or, when ranks share cores, after every rank of a
// core has had its turn.
double barrierUs(const ModelInput& in, const Path& p) { return p.latUs * p.workScale + in.nranks * p.stepUs; }

// DDAFlat: copy the input to the staging area, barrier, every rank folds all n inputs of the whole
// message, reading n-1 of them from its peers. Staging halves alternate between operations, so a
// round needs one barrier.
double ddaFlatUs(const ModelInput& in, const Path& p, double S) {
  const double n = in.nranks;
  return (S * p.copyPerB + (n - 1) * S * (p.reducePerB + p.peerReadPerB)) * p.workScale + barrierUs(in, p);
}

// DDATree: stage, barrier, each rank reduces its 1/n slice from all peers (reduce-scatter by
// direct reads), stages it, barrier, each rank reads the other slices (all-gather by direct reads).
double ddaTreeUs(const ModelInput& in, const Path& p, double S) {
  const double n = in.nranks;
  return (S * p.copyPerB + (n - 1) / n * S * (p.reducePerB + p.peerReadPerB) + (n - 1) / n * S * p.peerReadPerB) *
             p.workScale +
         2 * barrierUs(in, p);
}

// LowPrecision: quantize the input to FP8 with block scales, reduce-scatter and all-gather of the
// quantized bytes between all pairs, dequantize and reduce the received slices, requantize the
// own slice, dequantize the gathered result.
double lowPrecisionUs(const ModelInput& in, const Path& p, double S) {
  const double n = in.nranks;
  const double q = S * kLowpBytesRatio;
  double convert = (S + S / n + S) * p.reducePerB;          // quantize, requantize slice, dequantize
  double exchange = 2 * (n - 1) / n * q * p.copyPerB;       // both phases
  double reduce = (n - 1) / n * S * p.reducePerB;
  double latency = 2 * (p.latUs + (n - 1) * p.stepUs);      // two all-pairs phases
  return (convert + exchange + reduce) * p.workScale + latency;
}

}  // namespace

double estimateUs(const ModelInput& in, const HostConstants& hc, CollKind coll, Algorithm algo, Protocol proto,
                  int nChannels, size_t nBytes) {
  if (tunedCollIndex(coll) < 0 || in.nranks < 1) return -1;
  const double S = std::max<double>(1.0, double(nBytes));
  const int c = std::max(1, nChannels);
  const bool multiHost = in.nHosts > 1;
  // What one host's ranks touch: their inputs and outputs (and staging copies of them).
  const double workingSet = 3.0 * S * std::max(1, in.ranksPerHost);
  const Path p = pathFor(in, hc, multiHost, workingSet);
  if (in.nranks == 1) return p.stepUs + S * p.copyPerB;  // a local copy whatever the algorithm
  switch (algo) {
    case Algorithm::kRing: return ringUs(in, p, coll, proto, c, S);
    case Algorithm::kTree:
      // Host mode moves pieces through the same slots whatever the protocol: LL costs what
      // Simple costs (the tie goes to Simple).
      return treeUs(in, p, coll, c, S);
    case Algorithm::kDdaFlat:
    case Algorithm::kDdaTree:
    case Algorithm::kLowPrecision:
      // These exchange through shared buffers, not FIFOs: no protocol, no channels.
      if (coll != CollKind::kAllReduce || proto != Protocol::kSimple) return -1;
      if (algo == Algorithm::kLowPrecision) return lowPrecisionUs(in, p, S);
      if (multiHost) return -1;  // direct access needs every rank on one host
      return algo == Algorithm::kDdaFlat ? ddaFlatUs(in, p, S) : ddaTreeUs(in, p, S);
    case Algorithm::kCount: break;
  }
  return -1;
}

double estimateP2pUs(const ModelInput& in, const HostConstants& hc, size_t nBytes, bool crossHost) {
  const Path p = pathFor(in, hc, crossHost, 2.0 * double(nBytes));
  double pieces = std::max(1.0, std::ceil(double(nBytes) / double(in.slotBytes)));
  return p.latUs + pieces * p.stepUs + double(nBytes) * p.copyPerB * p.workScale;
}

}  // namespace weft
