// The cost model's constants for a communicator whose ranks run on GPUs. The model's fields keep
// their meaning, read for the GPU executor: a "core" is one thread block of the step kernel (one
// per channel, and channels run side by side), a handoff is a flag one GPU writes and a peer GPU
// sees, and peer reads go over NVLink or Infinity Fabric. The defaults per GPU family come from
// published link rates and cache sizes (A100 and H100 NVLink, MI250 and MI300X xGMI; see
// docs/gpu.md); the per-block rates are estimates, not measurements: no GPU has run Weft yet.
// WEFT_TUNER_CONSTANTS overrides any field, as on the host.
#pragma once
#include <string>

#include "collectives/model/cost_model.h"

namespace weft {

// What the model needs to know of a rank's GPU (from the device runtime).
struct GpuDescription {
  bool amd = false;
  int computeMajor = 0, computeMinor = 0;  // gfx942 reads as 9, 4 on AMD; sm_90 as 9, 0
};

// The constants for the GPU's family; *family names the family they are for.
HostConstants gpuConstants(const GpuDescription& gpu, std::string* family);

}  // namespace weft
