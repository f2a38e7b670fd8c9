// Process-level API: versions, error strings, Weft's extensions, memory allocation, and the
// buffers NCCL documents as unused (and so allowed to be NULL) on non-root ranks.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

TEST(Api, Version) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_GE(version, 22809);
  EXPECT_GE(version, NCCL_VERSION(2, 28, 9));
  EXPECT_EQ(NCCL_VERSION_CODE, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  const char* weft = weftGetVersionString();
  ASSERT_NE(weft, nullptr);
  EXPECT_GT(strlen(weft), 0u);
  EXPECT_NE(strstr(weft, "backends: host"), nullptr) << weft;  // host mode is in every build
}

TEST(Api, ErrorStringForEveryCode) {
  std::set<std::string> seen;
  for (int code = ncclSuccess; code < ncclNumResults; ++code) {
    const char* s = ncclGetErrorString(static_cast<ncclResult_t>(code));
    ASSERT_NE(s, nullptr) << "code " << code;
    EXPECT_GT(strlen(s), 0u) << "code " << code;
    EXPECT_TRUE(seen.insert(s).second) << "code " << code << " shares its string \"" << s << "\" with another code";
  }
  for (int code : {static_cast<int>(ncclNumResults), 99, -1}) {
    const char* s = ncclGetErrorString(static_cast<ncclResult_t>(code));
    ASSERT_NE(s, nullptr) << "an unknown code must still give a string (code " << code << ")";
    EXPECT_GT(strlen(s), 0u);
  }
  EXPECT_NE(ncclGetLastError(nullptr), nullptr) << "ncclGetLastError never returns NULL";
}

TEST(Api, MemAllocAndFree) {
  for (size_t bytes : {size_t{1}, size_t{4096}, size_t{3} << 20}) {
    void* p = nullptr;
    ASSERT_EQ(ncclMemAlloc(&p, bytes), ncclSuccess) << lastError(nullptr);
    ASSERT_NE(p, nullptr);
    memset(p, 0x3c, bytes);  // host mode: ordinary host memory
    EXPECT_EQ(static_cast<unsigned char*>(p)[bytes - 1], 0x3c);
    EXPECT_EQ(ncclMemFree(p), ncclSuccess) << lastError(nullptr);
  }
}

// Reduce's recvbuff on non-roots, Gather's recvbuff on non-roots and Scatter's sendbuff on
// non-roots are not used, so NULL is fine there.
TEST(Api, UnusedBuffersMayBeNullOnNonRoots) {
  EXPECT_RUN_OK(runRanks(Mode::kThreads, 3, [](RankCtx& ctx) {
    const int root = 1;
    const bool isRoot = ctx.rank == root;
    const size_t count = 100;
    std::vector<int32_t> mine(count, ctx.rank + 1), all(3 * count, -1), one(count, -1);
    if (ctx.ok(ncclReduce(mine.data(), isRoot ? one.data() : nullptr, count, ncclInt32, ncclSum, root, ctx.comm, nullptr),
               "ncclReduce (recvbuff NULL on non-roots)", ctx.comm) && isRoot && one[0] != 6)
      ctx.failf("Reduce gave %d, expected 6", one[0]);
    if (ctx.ok(ncclGather(mine.data(), isRoot ? all.data() : nullptr, count, ncclInt32, root, ctx.comm, nullptr),
               "ncclGather (recvbuff NULL on non-roots)", ctx.comm) && isRoot) {
      for (int p = 0; p < 3; ++p)
        if (all[p * count] != p + 1) ctx.failf("Gather block %d holds %d, expected %d", p, all[p * count], p + 1);
    }
    for (int p = 0; p < 3; ++p) std::fill(all.begin() + p * count, all.begin() + (p + 1) * count, 10 * (p + 1));
    if (ctx.ok(ncclScatter(isRoot ? all.data() : nullptr, one.data(), count, ncclInt32, root, ctx.comm, nullptr),
               "ncclScatter (sendbuff NULL on non-roots)", ctx.comm) && one[count - 1] != 10 * (ctx.rank + 1))
      ctx.failf("Scatter gave %d, expected %d", one[count - 1], 10 * (ctx.rank + 1));
  }));
}

}  // namespace
}  // namespace weft_test
