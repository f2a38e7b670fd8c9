// The point-to-point patterns' registry entry. They have one way to run, so the tuner does not
// cost them (ncclGroupSimulateEnd estimates them with estimateP2pUs); AlltoAll runs here unless a
// setting sends it to the direct lane.
#include "collectives/p2p/p2p.h"

namespace weft {
namespace {

Eligibility eligible(const CommShape&, const Task&) { return Eligibility::kModel; }

}  // namespace

const AlgorithmDesc kP2pAlgorithm = {
    "P2p",
    "",
    "one sequence per peer and direction on the p2p lane; data to or from the rank itself is a copy",
    kindBit(CollKind::kSend) | kindBit(CollKind::kRecv) | kindBit(CollKind::kCopy) | kindBit(CollKind::kAlltoAll) |
        kindBit(CollKind::kAlltoAllv) | kindBit(CollKind::kGather) | kindBit(CollKind::kScatter),
    "",
    /*lossy=*/false,
    /*channelled=*/false,
    eligible,
    nullptr,
    buildP2pProgram,
    nullptr,  // not tuned
};

}  // namespace weft
