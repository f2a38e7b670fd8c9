// The double binary tree's registry entry: AllReduce, Broadcast and Reduce, chosen by the model
// (or NCCL_ALGO=Tree).
#include <algorithm>

#include "collectives/tree/tree.h"

namespace weft {
namespace {

Eligibility eligible(const CommShape&, const Task&) { return Eligibility::kModel; }

void build(const CommShape& shape, const Task& t, Program* p) { buildTreeProgram(shape, t, t.nChannels, p); }

// Two trees, each carrying half of the data, a rank interior in at most one. Depth log2(n);
// AllReduce goes up (reduce from two children) and down (copy to two children). A node forwards a
// piece only once it holds all of it (and, going up, its children's), so every hop of the
// pipeline's fill also pays for moving one piece. Host mode moves pieces through the same slots
// whatever the protocol: LL costs what Simple costs (the tie goes to Simple).
double cost(const ModelInput& in, const Path& p, CollKind coll, Protocol, int c, double S) {
  const int d = log2Ceil(in.nranks);
  const double piece = std::min(S / 2 / c, double(in.slotBytes));
  auto fill = [&](double hops, double perByte) { return hops * piece * perByte * p.workScale; };
  // AllReduce: half of a node's steps take a piece out of a peer's slot (hopPerB), the others
  // send. Broadcast and Reduce: every step receives (and forwards what it received).
  const double avgAR = (p.reducePerB + p.copyPerB) / 2 + p.hopPerB / 2;
  const double copy = p.copyPerB + p.hopPerB, reduce = p.reducePerB + p.hopPerB;
  switch (coll) {
    case CollKind::kAllReduce: return pipelined(in, p, c, 2.0 * d, 4, S / 2, avgAR) + fill(2.0 * d, avgAR);
    case CollKind::kBroadcast: return pipelined(in, p, c, d, 2, S / 2, copy) + fill(d, copy);
    case CollKind::kReduce: return pipelined(in, p, c, d, 2, S / 2, reduce) + fill(d, reduce);
    default: return -1;
  }
}

}  // namespace

const AlgorithmDesc kTreeAlgorithm = {
    "Tree",
    "",
    "double binary tree: two complementary trees per channel, each with half the data",
    kindBit(CollKind::kAllReduce) | kindBit(CollKind::kBroadcast) | kindBit(CollKind::kReduce),
    "",
    /*lossy=*/false,
    /*channelled=*/true,
    /*reusable=*/true,
    eligible,
    nullptr,
    build,
    cost,
};

}  // namespace weft
