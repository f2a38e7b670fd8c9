// The ring's registry entry: every tuned collective, anywhere, on any number of channels.
#include <algorithm>
#include <cmath>

#include "collectives/ring/ring.h"

namespace weft {
namespace {

// Every rank can always run the ring: it is what the model falls back on.
Eligibility eligible(const CommShape&, const Task&) { return Eligibility::kModel; }

void build(const CommShape& shape, const Task& t, Program* p) { buildRingProgram(shape, t, t.nChannels, p); }

double cost(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int c, double S) {
  const int n = in.nranks;
  // Every step takes its piece from the slot the previous rank filled (hopPerB).
  const double avgAR = (p.reducePerB + p.copyPerB) / 2 + p.hopPerB;
  switch (coll) {
    case CollKind::kAllReduce:
      if (proto != Protocol::kSimple) {
        // One-shot ring: every input travels n-1 hops into every rank's scratch, then each rank
        // folds the n blocks. Only for sizes the scratch may hold.
        if (S > double(in.oneShotMaxBytes)) return -1;
        double pieces = std::max(1.0, std::ceil(S / double(in.slotBytes)));
        return (n - 1) * (p.latUs + pieces * p.stepUs) +
               (n - 1) * S * (p.copyPerB + p.reducePerB + p.hopPerB) * p.workScale;
      }
      // Reduce-scatter then all-gather: 2(n-1) steps of S/n each.
      return pipelined(in, p, c, 2.0 * (n - 1), 2.0 * (n - 1), S / n, avgAR);
    // The uneven kinds as if split evenly: with skewed blocks a link still carries about the total
    // (every block but one), so the estimate holds within a factor of nranks / (nranks - 1).
    case CollKind::kAllGather:
    case CollKind::kAllGatherv: return pipelined(in, p, c, n - 1, n - 1, S / n, p.copyPerB + p.hopPerB);
    case CollKind::kReduceScatter:
    case CollKind::kReduceScatterv: return pipelined(in, p, c, n - 1, n - 1, S / n, p.reducePerB + p.hopPerB);
    // A chain from (to) the root: n-1 hops of fill, then every rank forwards each piece once.
    case CollKind::kBroadcast: return pipelined(in, p, c, n - 1, 1, S, p.copyPerB + p.hopPerB);
    case CollKind::kReduce: return pipelined(in, p, c, n - 1, 1, S, p.reducePerB + p.hopPerB);
    default: return -1;
  }
}

}  // namespace

const AlgorithmDesc kRingAlgorithm = {
    "Ring",
    "",
    "rings in rank order, one per channel (uneven blocks for the v kinds); small AllReduce as the one-shot ring "
    "(Ring/LL)",
    kindBit(CollKind::kAllReduce) | kindBit(CollKind::kBroadcast) | kindBit(CollKind::kReduce) |
        kindBit(CollKind::kAllGather) | kindBit(CollKind::kReduceScatter) | kindBit(CollKind::kAllGatherv) |
        kindBit(CollKind::kReduceScatterv),
    "",
    /*lossy=*/false,
    /*channelled=*/true,
    /*reusable=*/true,
    eligible,
    ringOneShotScratchBytes,
    build,
    cost,
};

}  // namespace weft
