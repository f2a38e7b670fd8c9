// Recursive halving-doubling's registry entry: AllReduce with any reduction, where recursive
// doubling may run (host mode, ranks on several hosts, a power-of-two number of them).
#include <algorithm>
#include <cmath>

#include "collectives/doubling/doubling.h"

namespace weft {
namespace {

// (Named apart from doubling_algorithm.cc's: a unity build compiles the folder as one unit.)
// Every element is reduced on one rank and copied to the others (halving_programs.cc), so the
// ranks agree bit for bit whatever the reduction: Max and Min may run here too.
Eligibility halvingEligible(const CommShape& shape, const Task&) {
  return doublingShapeEligible(shape) ? Eligibility::kModel : Eligibility::kNo;
}

void halvingBuild(const CommShape& shape, const Task& t, Program* p) { buildHalvingDoublingProgram(shape, t, p); }

// Halving round j exchanges S / 2^(j+1) and adds it in; gathering round j moves the same bytes
// back and only copies. A round whose partners share a host is a shared-memory exchange; one
// across hosts pays the network's latency per piece (one piece in flight) and its bandwidth.
double halvingCost(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int, double S) {
  if (coll != CollKind::kAllReduce || proto != Protocol::kSimple || !powerOfTwo(in.nranks)) return -1;
  double t = 0;
  for (int j = 0; (1 << j) < in.nranks; ++j) {
    const double bytes = S / double(2 << j);
    const double pieces = std::max(1.0, std::ceil(bytes / double(in.slotBytes)));
    const bool local = (in.sameHostPartnerBits >> j) & 1u;
    const double hop = local ? p.localLatUs : pieces * p.latUs + bytes * p.copyPerB;
    const double steps = 2 * pieces * p.stepUs;
    t += 2 * (hop + steps) + bytes * (2 * p.localCopyPerB + p.localReducePerB) * p.workScale;
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
    "host mode; ranks on more than one host, a power-of-two number of them",
    /*lossy=*/false,
    /*channelled=*/false,
    halvingEligible,
    nullptr,
    halvingBuild,
    halvingCost,
};

}  // namespace weft
