// Recursive halving-doubling's registry entry: AllReduce with any reduction, in host mode, on ranks
// on several hosts, any number of them (a number that is not a power of two folds in first).
#include <algorithm>
#include <cmath>

#include "collectives/doubling/doubling.h"
#include "collectives/model/rank_fold.h"

namespace weft {
namespace {

// (Named apart from doubling_algorithm.cc's: a unity build compiles the folder as one unit.)
// Host mode and ranks on several hosts, for the reasons doubling_algorithm.cc gives. Every element
// is reduced on one rank and copied to the others (halving_programs.cc), so the ranks agree bit
// for bit whatever the reduction: Max and Min may run here too.
Eligibility halvingEligible(const CommShape& shape, const Task&) {
  const bool ok = shape.hostMode && !shape.mixedExecutors && shape.nranks >= 2 && shape.spansHosts;
  return ok ? Eligibility::kModel : Eligibility::kNo;
}

void halvingBuild(const CommShape& shape, const Task& t, Program* p) { buildHalvingDoublingProgram(shape, t, p); }

// Halving round j exchanges S / 2^(j+1) and adds it in; gathering round j moves the same bytes
// back and only copies, each priced by pairwiseRoundUs (doubling_algorithm.cc) and its steps.
// Ranks beyond a power of two add the fold: the whole buffer to the partner and added in, and the
// result back (ModelInput::sameHostFold says where those partners are).
double halvingCost(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int, double S) {
  if (coll != CollKind::kAllReduce || proto != Protocol::kSimple || in.nranks < 2) return -1;
  // One exchange of `bytes` each way between partners on one host or across hosts, and the
  // steps of its pieces.
  auto hop = [&](double bytes, bool local) {
    const double pieces = std::max(1.0, std::ceil(bytes / double(in.slotBytes)));
    return pairwiseRoundUs(in, p, bytes, local) + 2 * pieces * p.stepUs;
  };
  const RankFold fold(in.nranks);
  double t = 0;
  if (fold.extra > 0) {
    t += hop(S, in.sameHostFold) + S * (p.localCopyPerB + p.localReducePerB) * p.workScale;  // in
    t += hop(S, in.sameHostFold) + S * p.localCopyPerB * p.workScale;                        // back
  }
  for (int j = 0; (1 << j) < fold.pow2; ++j) {
    const double bytes = S / double(2 << j);
    const bool local = (in.sameHostPartnerBits >> j) & 1u;
    t += 2 * hop(bytes, local) + bytes * (2 * p.localCopyPerB + p.localReducePerB) * p.workScale;
  }
  return t;
}

}  // namespace

const AlgorithmDesc kHalvingDoublingAlgorithm = {
    "HalvingDoubling",
    "Rabenseifner,RHD",
    "recursive halving-doubling: a reduce-scatter by halving the segment each round, then an all-gather "
    "by doubling it back",
    kindBit(CollKind::kAllReduce),
    "host mode; ranks on more than one host",
    /*lossy=*/false,
    /*channelled=*/false,
    /*reusable=*/true,
    halvingEligible,
    nullptr,
    halvingBuild,
    halvingCost,
};

}  // namespace weft
