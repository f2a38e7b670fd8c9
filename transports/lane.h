// Lanes keep the traffic of different kinds of algorithm apart: each lane has its own connections
// between two ranks, so a send/recv in the same group as a collective can never interleave with the
// collective's messages, and two algorithms never read each other's FIFO slots.
#pragma once
#include <cstdint>

namespace weft {

// ConnectionTable keys a lane in two bits: at most four lanes.
enum class Lane : uint8_t { kRing = 0, kP2p = 1, kTree = 2 };

// For messages ("ring") and FIFO names ('r').
inline const char* laneName(Lane l) { return l == Lane::kRing ? "ring" : l == Lane::kP2p ? "p2p" : "tree"; }
inline char laneLetter(Lane l) { return l == Lane::kRing ? 'r' : l == Lane::kP2p ? 'p' : 't'; }

}  // namespace weft
