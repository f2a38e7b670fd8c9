// The cost model on GPU communicators: each family's constants, and what the tuner picks with
// them on one node (8 ranks, channels side by side): a direct-lane algorithm for small AllReduce,
// as RCCLX's thresholds intend, and the ring or the tree for large ones. The constants are
// estimates from published figures (gpu_constants.h); these tests pin the choices they give.
#include <gtest/gtest.h>

#include <string>

#include "algorithm_names.h"
#include "collectives/model/gpu_constants.h"
#include "tuning/tuner.h"

namespace weft {
namespace {

ModelInput gpuNode(int n) {
  ModelInput in;
  in.nranks = n;
  in.nHosts = 1;
  in.ranksPerHost = n;
  in.cores = 1 << 16;
  in.minChannels = 1;
  in.maxChannels = 4;
  in.slotBytes = 128 * 1024;
  in.channelsInParallel = true;
  in.oneShotMaxBytes = 8192;  // WEFT_ONESHOT_MAX_BYTES's default
  return in;
}

TunerOptions noSettings() {
  TunerOptions o;
  o.pluginSetting = "none";
  return o;
}

TEST(GpuConstants, EachFamilyIsKnownByItsArchitecture) {
  std::string family;
  gpuConstants(GpuDescription{false, 8, 0}, &family);
  EXPECT_EQ(family, "A100-class (sm_80)");
  gpuConstants(GpuDescription{false, 9, 0}, &family);
  EXPECT_EQ(family, "H100-class (sm_90)");
  gpuConstants(GpuDescription{true, 9, 0}, &family);
  EXPECT_EQ(family, "MI250-class (gfx90a)");
  const HostConstants mi300 = gpuConstants(GpuDescription{true, 9, 4}, &family);
  EXPECT_EQ(family, "MI300X-class (gfx942)");
  EXPECT_EQ(mi300.cacheMiB, 256);
  EXPECT_EQ(mi300.peerReadGBps, 48);
  gpuConstants(GpuDescription{false, 7, 0}, &family);
  EXPECT_EQ(family, "unknown GPU (generic)");
}

TEST(GpuConstants, SmallAllReduceTakesTheDirectLaneAndLargeTheRingOrTree) {
  const uint32_t candidates = (1u << int(Algo::kRing)) | (1u << int(Algo::kTree)) | (1u << int(Algo::kDdaFlat)) |
                              (1u << int(Algo::kDdaTree));
  for (const GpuDescription& g : {GpuDescription{false, 8, 0}, GpuDescription{false, 9, 0}, GpuDescription{true, 9, 0},
                                  GpuDescription{true, 9, 4}}) {
    std::string family;
    Tuner t(gpuNode(8), gpuConstants(g, &family), noSettings());
    for (size_t bytes : {size_t(8), size_t(4096)}) {
      const Algorithm a = t.choose(CollKind::kAllReduce, bytes, candidates).algorithm;
      EXPECT_TRUE(a == Algo::kDdaFlat || a == Algo::kDdaTree) << family << ", " << bytes << " bytes";
    }
    const Algorithm big = t.choose(CollKind::kAllReduce, size_t(256) << 20, candidates).algorithm;
    EXPECT_TRUE(big == Algo::kRing || big == Algo::kTree) << family;
  }
}

}  // namespace
}  // namespace weft
