// ncclMemAlloc's host memory (transports/shm/shared_alloc.h): which allocation holds a range, and
// memory that another process maps through the allocation's descriptor and sees written (a real
// fork; the descriptor travels as a forked child inherits it).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "transports/shm/shared_alloc.h"

namespace weft {
namespace {

TEST(SharedAlloc, FindsTheAllocationHoldingARange) {
  std::string why;
  char* a = static_cast<char*>(sharedAlloc(10000, &why));
  char* b = static_cast<char*>(sharedAlloc(1, &why));
  ASSERT_NE(a, nullptr) << why;
  ASSERT_NE(b, nullptr) << why;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 4096, 0u);
  SharedAllocation s;
  ASSERT_TRUE(sharedAllocationOf(a + 100, 5000, &s));
  EXPECT_EQ(s.base, a);
  EXPECT_EQ(s.size, 12288u);  // whole pages
  EXPECT_GE(s.fd, 0);
  EXPECT_TRUE(sharedAllocationOf(a, 12288, &s));
  EXPECT_FALSE(sharedAllocationOf(a + 4096, 8193, &s)) << "runs past the end";
  EXPECT_FALSE(sharedAllocationOf(a - 1, 2, &s)) << "starts before it";
  ASSERT_TRUE(sharedAllocationOf(b, 1, &s));
  EXPECT_EQ(s.base, b);
  int onStack = 0;
  EXPECT_FALSE(sharedAllocationOf(&onStack, sizeof onStack, &s));
  for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(a[i], 0) << "not zero-filled at " << i;
  EXPECT_TRUE(sharedFree(a));
  EXPECT_FALSE(sharedAllocationOf(a + 100, 1, &s)) << "freed";
  EXPECT_FALSE(sharedFree(a)) << "freed twice";
  EXPECT_FALSE(sharedFree(&onStack));
  EXPECT_TRUE(sharedFree(b));
}

// A child maps the allocation through its descriptor, writes, and the parent reads the bytes.
TEST(SharedAlloc, AnotherProcessMapsTheSameMemory) {
  std::string why;
  auto* p = static_cast<unsigned char*>(sharedAlloc(8192, &why));
  ASSERT_NE(p, nullptr) << why;
  SharedAllocation s;
  ASSERT_TRUE(sharedAllocationOf(p, 8192, &s));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    void* m = mmap(nullptr, s.size, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, 0);
    if (m == MAP_FAILED) _exit(1);
    memset(static_cast<unsigned char*>(m) + 4000, 0x5a, 100);
    _exit(munmap(m, s.size) == 0 ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(p[4000 + i], 0x5a) << i;
  EXPECT_EQ(p[3999], 0);
  EXPECT_TRUE(sharedFree(p));
}

}  // namespace
}  // namespace weft
