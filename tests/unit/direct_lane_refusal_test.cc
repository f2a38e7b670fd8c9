// A setting that asks for the direct lane (DDA's forced kinds, low precision) on a communicator where
// it cannot run is named, with the reason and what runs instead; where it can run, or where nothing
// asks for it, nothing is said.
#include <gtest/gtest.h>

#include <string>

#include "collectives/dda/dda.h"

namespace weft {
namespace {

struct Shape {
  param::Agreed agreed{};
  CommShape shape;
  Shape(int nranks, int nLocal, bool hostMode) {
    agreed.lowPrecisionAllReduce = agreed.lowPrecisionAllGather = -1;
    agreed.lowPrecisionReduceScatter = agreed.lowPrecisionAllToAll = -1;
    shape.nranks = nranks;
    shape.nLocal = nLocal;
    shape.hostMode = hostMode;
    shape.agreed = &agreed;
  }
};

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

TEST(DirectLaneRefusal, LowPrecisionOverTheNetworkIsNamedWithItsReason) {
  Shape s(4, 2, true);  // two hosts
  s.agreed.lowPrecision = true;
  const std::string why = directLaneRefusal(s.shape);
  EXPECT_TRUE(has(why, "RCCL_LOW_PRECISION_ENABLE=1")) << why;
  EXPECT_TRUE(has(why, "only 2 of its 4 ranks share this host")) << why;
  EXPECT_TRUE(has(why, "exact ring and tree algorithms instead")) << why;
}

TEST(DirectLaneRefusal, EachReasonAndEachSetting) {
  Shape shm(4, 4, true);
  shm.agreed.shmDisable = true;
  shm.agreed.ddaAllGather = 1;
  shm.agreed.lowPrecisionAllToAll = 1;
  std::string why = directLaneRefusal(shm.shape);
  EXPECT_TRUE(has(why, "RCCL_LOW_PRECISION_ENABLE_ALLTOALL=1, RCCL_ENABLE_DDA_ALL_GATHER=1")) << why;
  EXPECT_TRUE(has(why, "NCCL_SHM_DISABLE=1")) << why;

  // A GPU communicator stages in device memory that peers map: P2P off is the reason there, and
  // shared memory off is none.
  Shape gpu(2, 2, false);
  gpu.agreed.ddaReduceScatter = 1;
  gpu.agreed.p2pDisable = true;
  gpu.agreed.shmDisable = true;
  why = directLaneRefusal(gpu.shape);
  EXPECT_TRUE(has(why, "NCCL_P2P_DISABLE=1")) << why;
  EXPECT_FALSE(has(why, "NCCL_SHM_DISABLE")) << why;
  gpu.agreed.p2pDisable = false;
  EXPECT_EQ(directLaneRefusal(gpu.shape), "");
  // Ranks on GPUs beside ranks in host mode: no common staging areas, on either side.
  for (bool hostMode : {true, false}) {
    Shape mixed(2, 2, hostMode);
    mixed.shape.mixedExecutors = true;
    mixed.agreed.ddaAllGather = 1;
    EXPECT_TRUE(has(directLaneRefusal(mixed.shape), "others in host mode")) << hostMode;
  }
}

TEST(DirectLaneRefusal, SilentWhereTheLaneRunsOrNothingAsks) {
  Shape local(4, 4, true);
  local.agreed.lowPrecision = true;
  EXPECT_EQ(directLaneRefusal(local.shape), "");
  Shape remote(4, 1, true);  // RCCL_ENABLE_DDA_ALL_REDUCE is on by default: not a request to refuse
  remote.agreed.ddaAllReduce = true;
  EXPECT_EQ(directLaneRefusal(remote.shape), "");
}

}  // namespace
}  // namespace weft
