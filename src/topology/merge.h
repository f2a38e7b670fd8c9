// Merging what hwloc detected into a topology read from NCCL_TOPO_FILE, the way NCCL fuses its
// detection into a loaded file: the file's placement of a device wins (cloud VMs hide the real
// PCI switches, so their files put GPUs and NICs under switches that detection cannot see);
// detection only fills attributes the file left out and adds the devices the file does not list.
#pragma once
#include "topology/model.h"

namespace weft::topo {

void mergeDetected(Topology* base, const Topology& detected);

}  // namespace weft::topo
