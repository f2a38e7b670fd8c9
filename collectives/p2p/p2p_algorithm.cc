// The point-to-point patterns' registry entry. Most have one way to run, so the tuner does not
// cost them (ncclGroupSimulateEnd estimates them with estimateP2pUs); AlltoAll runs here unless a
// setting sends it to the direct lane. AllGatherv is the exception: the ring can run it too, and
// the tuner weighs this one-hop pattern against it.
#include <algorithm>
#include <cmath>

#include "collectives/p2p/p2p.h"

namespace weft {
namespace {

Eligibility eligible(const CommShape&, const Task&) { return Eligibility::kModel; }

// One hop of latency instead of the ring's n-1, but a rank sends its block once per peer. The
// tuner knows only the total, and the case that matters is the skewed one (one rank holding
// nearly everything, where the ring moves the large block through each link once while this
// pattern has its owner copy it n-1 times), so the bytes are costed as that case: the direct
// pattern wins where latency dominates, the ring wherever bytes do.
double cost(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int, double S) {
  if (coll != CollKind::kAllGatherv || proto != Protocol::kSimple) return -1;
  const double n = in.nranks;
  const double pieces = std::max(1.0, std::ceil(S / double(in.slotBytes)));
  return p.latUs + (n - 1) * (pieces * p.stepUs + S * p.copyPerB) * p.workScale;
}

}  // namespace

// Reusable: Send, Recv, AlltoAll, Gather and Scatter build from the peer (root), count and shape
// alone; the kinds with per-peer counts never reuse (enqueue/group.cc: their counts are not in the key).
const AlgorithmDesc kP2pAlgorithm = {
    "P2p",
    "",
    "one sequence per peer and direction on the p2p lane; data to or from the rank itself is a copy",
    kindBit(CollKind::kSend) | kindBit(CollKind::kRecv) | kindBit(CollKind::kCopy) | kindBit(CollKind::kAlltoAll) |
        kindBit(CollKind::kAlltoAllv) | kindBit(CollKind::kGather) | kindBit(CollKind::kScatter) |
        kindBit(CollKind::kAllGatherv),
    "",
    /*lossy=*/false,
    /*channelled=*/false,
    /*reusable=*/true,
    eligible,
    nullptr,
    buildP2pProgram,
    cost,  // AllGatherv only
};

}  // namespace weft
