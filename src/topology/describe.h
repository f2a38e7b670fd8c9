// The human-readable view of a topology that `weft-info --topology` prints.
#pragma once
#include <string>

#include "topology/system.h"

namespace weft::topo {

std::string describeTopology(const SystemTopology& s);

}  // namespace weft::topo
