// The registry's algorithms by name, for tests that name one: an Algorithm is a row of the
// registration list (collectives/registry.cc), not a constant of its own.
#pragma once
#include "collectives/registry.h"

namespace weft {

struct Algo {
  static inline const Algorithm kRing = algorithmNamed("Ring");
  static inline const Algorithm kTree = algorithmNamed("Tree");
  static inline const Algorithm kDdaFlat = algorithmNamed("DDAFlat");
  static inline const Algorithm kDdaTree = algorithmNamed("DDATree");
  static inline const Algorithm kLowPrecision = algorithmNamed("LowPrecision");
  static inline const Algorithm kP2p = algorithmNamed("P2p");
  static inline const Algorithm kDoubling = algorithmNamed("Doubling");
  static inline const Algorithm kHalvingDoubling = algorithmNamed("HalvingDoubling");
};

}  // namespace weft
