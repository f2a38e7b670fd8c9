// Lanes keep the traffic of different kinds of algorithm apart: each lane has its own connections
// between two ranks, so a send/recv in the same group as a collective can never interleave with the
// collective's messages, and two algorithms never read each other's FIFO slots. The direct lane has
// no connections at all: its sequences read the peers' staging areas (transports/shm/direct_area.h).
// The RMA lane carries no Program's steps: it holds the network links of one-sided puts (src/rma),
// whose messages the receiving proxy writes into windows itself.
#pragma once
#include <cstdint>

namespace weft {

// ConnectionTable keys a lane in a few bits of a 64-bit key: keep the values small.
enum class Lane : uint8_t { kRing = 0, kP2p = 1, kTree = 2, kDirect = 3, kRma = 4 };

inline const char* laneName(Lane lane) {
  switch (lane) {
    case Lane::kRing: return "ring";
    case Lane::kP2p: return "p2p";
    case Lane::kTree: return "tree";
    case Lane::kDirect: return "direct";
    case Lane::kRma: return "rma";
  }
  return "?";
}

}  // namespace weft
