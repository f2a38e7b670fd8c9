// ring::split and ring::mod (collectives/ring/ring_schedule.h), the index math every ring program
// is built from: a gap or overlap between pieces would lose or double-count data silently.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>

#include "collectives/ring/ring_schedule.h"

namespace {

using weft::ring::mod;
using weft::ring::split;

// The pieces tile [0, n) in order: each starts where the previous ended, the last ends at n, and
// sizes differ by at most one (so no channel or chunk is more than one element behind another).
void expectTiles(size_t n, size_t parts) {
  size_t next = 0, lo = std::numeric_limits<size_t>::max(), hi = 0;
  for (size_t i = 0; i < parts; ++i) {
    weft::ring::Range r = split(n, parts, i);
    ASSERT_EQ(r.begin, next) << "n=" << n << " parts=" << parts << " piece " << i;
    next += r.count;
    lo = std::min(lo, r.count);
    hi = std::max(hi, r.count);
  }
  ASSERT_EQ(next, n) << "n=" << n << " parts=" << parts;
  ASSERT_LE(hi - lo, 1u) << "n=" << n << " parts=" << parts;
}

TEST(RingSchedule, SplitTilesTheRangeInOrder) {
  for (size_t n = 0; n <= 300; ++n)
    for (size_t parts = 1; parts <= 17; ++parts) expectTiles(n, parts);
  for (size_t n : {size_t(4099), size_t(1) << 20, (size_t(1) << 40) + 12345})
    for (size_t parts : {size_t(1), size_t(3), size_t(64), size_t(1000)}) expectTiles(n, parts);
}

TEST(RingSchedule, SplitFewerElementsThanParts) {
  // Seven elements over sixteen parts: seven pieces of one, then empty pieces, none out of range.
  for (size_t i = 0; i < 16; ++i) {
    weft::ring::Range r = split(7, 16, i);
    EXPECT_EQ(r.count, i < 7 ? 1u : 0u) << i;
    EXPECT_LE(r.begin + r.count, 7u) << i;
  }
  weft::ring::Range r = split(0, 4, 3);
  EXPECT_EQ(r.begin, 0u);
  EXPECT_EQ(r.count, 0u);
}

TEST(RingSchedule, ModIsAlwaysInRange) {
  for (int n = 1; n <= 17; ++n)
    for (long a = -3L * n - 2; a <= 3L * n + 2; ++a) {
      const int m = mod(a, n);
      ASSERT_GE(m, 0) << a << " mod " << n;
      ASSERT_LT(m, n) << a << " mod " << n;
      ASSERT_EQ(((a - m) % n + n) % n, 0) << a << " mod " << n;  // congruent to a
    }
  EXPECT_EQ(mod(-1, 16), 15);
  EXPECT_EQ(mod(16, 16), 0);
  EXPECT_EQ(mod(-17, 16), 15);
  EXPECT_EQ(mod(std::numeric_limits<long>::min() + 1, 7), int(((std::numeric_limits<long>::min() + 1) % 7 + 7) % 7));
}

}  // namespace
