// Recursive doubling's registry entry: host-mode AllReduce of sums on a power-of-two number of
// ranks, one channel, costed for the tuner to weigh against the ring and the tree.
#include <cmath>

#include "collectives/doubling/doubling.h"

namespace weft {
namespace {

bool powerOfTwo(int n) { return n >= 2 && (n & (n - 1)) == 0; }

Eligibility eligible(const CommShape& shape, const Task& task) {
  // The GPU kernel could run the schedule, but it has never run there: host mode only. Within
  // one host the one-shot ring and DDA wait less: with 4, 8 and 16 ranks on the 2 cores of the
  // development VM, an 8 B AllReduce took 1.3-2x as long by doubling as the ring's one-shot
  // (each round waits for one particular partner to be scheduled), so only communicators that
  // span hosts, where a hop is a network message and doubling takes log2(n) of them in place of
  // n-1, may use it.
  // (mixedExecutors: a GPU rank would say no, so a host-mode rank must too.)
  if (!shape.hostMode || shape.mixedExecutors || !powerOfTwo(shape.nranks) || !shape.spansHosts)
    return Eligibility::kNo;
  return task.spec.op == BaseOp::kSum ? Eligibility::kModel : Eligibility::kNo;
}

void build(const CommShape& shape, const Task& t, Program* p) { buildDoublingProgram(shape, t, p); }

// log2(n) rounds, each a hop and then the whole buffer copied out and added in, piece by piece.
// A round whose partners share a host (the low bits, when ranks are numbered host by host) is a
// shared-memory exchange. A round across hosts sends one piece at a time and waits for the
// partner's (doubling_programs.cc): pairwiseRoundUs, and then the copy and the add.
double cost(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int, double S) {
  if (coll != CollKind::kAllReduce || proto != Protocol::kSimple || !powerOfTwo(in.nranks)) return -1;
  const double pieces = std::max(1.0, std::ceil(S / double(in.slotBytes)));
  const double work = S * (p.localCopyPerB + p.localReducePerB) * p.workScale + 2 * pieces * p.stepUs;
  double t = 0;
  for (int j = 0; (1 << j) < in.nranks; ++j) t += pairwiseRoundUs(in, p, S, (in.sameHostPartnerBits >> j) & 1u) + work;
  return t;
}

}  // namespace

// The extra latency across hosts: a round completes only once both partners have reached it,
// where a ring's hop needs only its receiver. On the 2-core development VM, every rank on its
// cores, 8 B over loopback: a halving-doubling round took 1.4-2.1 times a ring hop on 4x1, 2x2,
// 3x2 and 4x2 hosts x ranks (0.7 on 3x1).
double pairwiseRoundUs(const ModelInput& in, const Path& p, double bytes, bool local) {
  if (local) return p.localLatUs;
  const double pieces = std::max(1.0, std::ceil(bytes / double(in.slotBytes)));
  constexpr double kRendezvousHops = 1;
  return (pieces + kRendezvousHops) * p.latUs + bytes * p.copyPerB;
}

const AlgorithmDesc kDoublingAlgorithm = {
    "Doubling",
    "RecursiveDoubling,RD",
    "recursive doubling: log2(nranks) rounds, each swapping the running sum with the rank one bit away",
    kindBit(CollKind::kAllReduce),
    "host mode; ranks on more than one host, a power-of-two number of them; sums (ncclSum, ncclAvg, "
    "ncclPreMulSum)",
    /*lossy=*/false,
    /*channelled=*/false,
    /*reusable=*/true,
    eligible,
    nullptr,
    build,
    cost,
};

}  // namespace weft
