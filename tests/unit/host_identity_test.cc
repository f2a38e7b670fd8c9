// Which host and which machine a rank runs on: WEFT_HOST_ID makes processes of one machine
// pretend to be on different hosts (their own shared memory, the network between them), but they
// still share the machine's cores, and a communicator that counts more of its ranks on the machine
// than it has online CPUs must know it (ncclComm::coresOversubscribed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/host_identity.h"
#include "base/params.h"
#include "comm/comm.h"
#include "comm/rank_locality.h"

namespace weft {
namespace {

class HostIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = getenv("WEFT_HOST_ID")) saved_ = v, had_ = true;
  }
  void TearDown() override {
    if (had_)
      setenv("WEFT_HOST_ID", saved_.c_str(), 1);
    else
      unsetenv("WEFT_HOST_ID");
    param::reloadForTesting();
  }
  static void hostId(const char* id) {
    setenv("WEFT_HOST_ID", id, 1);
    param::reloadForTesting();
  }
  std::string saved_;
  bool had_ = false;
};

TEST_F(HostIdentity, HostIdChangesTheHostButNotTheMachine) {
  hostId("pretend-a");
  const uint64_t hostA = hostHash(), machineA = machineHash();
  hostId("pretend-b");
  const uint64_t hostB = hostHash(), machineB = machineHash();
  EXPECT_NE(hostA, hostB);
  EXPECT_EQ(machineA, machineB);
  EXPECT_NE(machineA, 0u);
  EXPECT_NE(machineA, hostA);
}

TEST_F(HostIdentity, RanksOnThisMachineCountsAcrossPretendHosts) {
  ncclComm comm;
  // Ranks 0-2 on this machine under three host ids, rank 3 on another machine.
  const uint64_t here = machineHash();
  for (int r = 0; r < 4; ++r) {
    RankInfo info{};
    info.rank = r;
    info.hostHash = 100 + uint64_t(r);
    info.machineHash = r < 3 ? here : here ^ 1;
    comm.ranks.push_back(info);
  }
  comm.nranks = 4;
  comm.rank = 1;
  EXPECT_EQ(ranksOnThisMachine(&comm), 3);
  EXPECT_FALSE(allRanksOnThisHost(&comm));
  comm.rank = 3;
  EXPECT_EQ(ranksOnThisMachine(&comm), 1);
}

}  // namespace
}  // namespace weft
