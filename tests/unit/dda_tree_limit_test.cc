// RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES at its default (-1) sets no limit in host mode, where the cost
// model weighs DDA tree against the ring and the tree at every size, and keeps RCCL's 29 MiB on
// GPUs; a value the user sets caps both.
#include <gtest/gtest.h>

#include "algorithm_names.h"
#include "collectives/registry.h"
#include "task/task.h"

namespace weft {
namespace {

constexpr size_t kRcclDefault = 30408704;

bool treeAllowed(bool hostMode, int64_t setting, size_t bytes) {
  param::Agreed agreed{};
  agreed.ddaAllReduce = true;
  agreed.ddaTreeMaxBytes = setting;
  CommShape shape;
  shape.nranks = shape.nLocal = 4;
  shape.hostMode = hostMode;
  shape.agreed = &agreed;
  Task task;
  task.kind = CollKind::kAllReduce;
  task.dtype = ncclFloat32;
  task.count = bytes / 4;
  return eligibility(Algo::kDdaTree, shape, task) != Eligibility::kNo;
}

TEST(DdaTreeLimit, HostModeHasNoneByDefault) {
  EXPECT_TRUE(treeAllowed(true, -1, kRcclDefault));
  EXPECT_TRUE(treeAllowed(true, -1, kRcclDefault + 4));
  EXPECT_TRUE(treeAllowed(true, -1, size_t(1) << 34));
}

TEST(DdaTreeLimit, GpusKeepRcclsDefault) {
  EXPECT_TRUE(treeAllowed(false, -1, kRcclDefault));
  EXPECT_FALSE(treeAllowed(false, -1, kRcclDefault + 4));
}

TEST(DdaTreeLimit, ASettingCapsEitherMode) {
  for (bool hostMode : {true, false}) {
    EXPECT_TRUE(treeAllowed(hostMode, 1 << 20, 1 << 20)) << hostMode;
    EXPECT_FALSE(treeAllowed(hostMode, 1 << 20, (1 << 20) + 4)) << hostMode;
    EXPECT_TRUE(treeAllowed(hostMode, int64_t(1) << 32, size_t(1) << 31)) << hostMode;
    EXPECT_FALSE(treeAllowed(hostMode, 0, 4)) << hostMode;  // 0: never
  }
}

}  // namespace
}  // namespace weft
