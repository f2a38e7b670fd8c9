// ncclGroupSimulateEnd through the public API: an estimate, no operation run, the group cleared.
#include <gtest/gtest.h>

#include <vector>

#include "nccl.h"

namespace {

class SimulateTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ncclCommInitAll(comms_, 2, nullptr), ncclSuccess); }
  void TearDown() override {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
  }
  // AllReduce of `count` floats on both ranks inside the current group.
  void issue(size_t count) {
    for (auto& b : bufs_) b.assign(count, 1.0f);
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(ncclAllReduce(bufs_[r].data(), bufs_[r].data(), count, ncclFloat32, ncclSum, comms_[r], nullptr),
                ncclSuccess);
  }
  float simulate(size_t count) {
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    issue(count);
    EXPECT_EQ(ncclGroupSimulateEnd(&sim), ncclSuccess);
    return sim.estimatedTime;
  }
  ncclComm_t comms_[2] = {};
  std::vector<float> bufs_[2];
};

TEST_F(SimulateTest, EstimatesWithoutRunning) {
  float small = simulate(256);
  EXPECT_GT(small, 0.0f);
  for (const auto& b : bufs_) EXPECT_EQ(b[0], 1.0f);  // not reduced: nothing ran
  // The group is closed and empty.
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  float large = simulate(1 << 20);
  EXPECT_GT(large, small);
  // The communicators still work.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  issue(256);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (const auto& b : bufs_) EXPECT_EQ(b[0], 2.0f);
}

TEST_F(SimulateTest, BadArguments) {
  EXPECT_EQ(ncclGroupSimulateEnd(nullptr), ncclInvalidArgument);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclGroupSimulateEnd(&sim), ncclInvalidUsage);  // no group open
  ncclSimInfo_t garbage{};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupSimulateEnd(&garbage), ncclInvalidArgument);
  // The group stays open for a proper end.
  EXPECT_EQ(ncclGroupSimulateEnd(&sim), ncclSuccess);
  EXPECT_EQ(sim.estimatedTime, 0.0f);  // an empty group takes no time
}

}  // namespace
