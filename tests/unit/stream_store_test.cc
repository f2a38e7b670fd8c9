// The store paths of reduceCopy must give exactly the bytes its plain loop gives, whatever the
// alignment, length, datatype and variant, including in place and with a second destination, and
// touch nothing outside the range:
// - streamed outputs (kStreamDst0, copyStreaming): non-temporal stores;
// - large plain copies (copyBytes): memcpy in pieces;
// - reductions whose second destination is a FIFO slot (kSlotDst1): computed block by block and
//   copied into the slot, counts below, at and past a block, alone and with a streamed output.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "math/reduce_host.h"

namespace {

using weft::kApplyPost;
using weft::kApplyPre;
using weft::kSlotDst1;
using weft::kStreamDst0;
using weft::ReduceSpec;

constexpr unsigned char kGuard = 0xA5;

std::vector<unsigned char> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng() & 0x3f);  // small values: no overflow to NaN or Inf
  return v;
}

struct Case {
  ncclDataType_t dtype;
  ncclRedOp_t op;
};

class StreamStoreTest : public ::testing::TestWithParam<Case> {};

// Each count and misalignment (in bytes, of the destination and of the sources) against the same
// call without the flag.
TEST_P(StreamStoreTest, SameBytesAsPlainStores) {
  const Case c = GetParam();
  ReduceSpec spec;
  ASSERT_TRUE(weft::makeReduceSpec(c.dtype, c.op, 3, &spec));
  const size_t es = weft::dataTypeSize(c.dtype);
  for (size_t count : {size_t(1), size_t(1023), size_t(4096) / es, size_t(70001)}) {
    for (size_t skew : {size_t(0), es, size_t(8) * es}) {
      const size_t bytes = count * es;
      // Guard bytes: 64 before the range (plus the skew) and 64 past its end.
      auto a = randomBytes(bytes + skew, 1), b = randomBytes(bytes, 2);
      std::vector<unsigned char> plain(64 + skew + bytes + 64, kGuard), streamed(plain.size(), kGuard);
      std::vector<unsigned char> plain1(bytes, 0), streamed1(bytes, 0);
      for (unsigned flags : {0u, unsigned(kApplyPre), unsigned(kApplyPost), unsigned(kApplyPre | kApplyPost)}) {
        weft::reduceCopy(spec, plain.data() + 64 + skew, plain1.data(), a.data() + skew, b.data(), count, flags);
        weft::reduceCopy(spec, streamed.data() + 64 + skew, streamed1.data(), a.data() + skew, b.data(), count,
                         flags | kStreamDst0);
        ASSERT_EQ(plain, streamed) << "count " << count << " skew " << skew << " flags " << flags;
        ASSERT_EQ(plain1, streamed1) << "second destination, count " << count;
      }
      // One source (a copy, the memcpy path) and the guard bytes around the range.
      weft::reduceCopy(spec, streamed.data() + 64 + skew, nullptr, nullptr, a.data() + skew, count, kStreamDst0);
      EXPECT_EQ(0, memcmp(streamed.data() + 64 + skew, a.data() + skew, bytes));
      for (size_t i = 0; i < 64 + skew; ++i) ASSERT_EQ(kGuard, streamed[i]) << "byte before the range";
      for (size_t i = 64 + skew + bytes; i < streamed.size(); ++i) ASSERT_EQ(kGuard, streamed[i]) << "byte past it";
    }
  }
}

// In place: the destination is one of the sources, read block by block before it is written.
TEST_P(StreamStoreTest, InPlace) {
  const Case c = GetParam();
  ReduceSpec spec;
  ASSERT_TRUE(weft::makeReduceSpec(c.dtype, c.op, 2, &spec));
  const size_t count = 50000, bytes = count * weft::dataTypeSize(c.dtype);
  auto a = randomBytes(bytes, 3), b = randomBytes(bytes, 4);
  auto plain = a, streamed = a;
  weft::reduceCopy(spec, plain.data(), nullptr, b.data(), plain.data(), count, kApplyPre | kApplyPost);
  weft::reduceCopy(spec, streamed.data(), nullptr, b.data(), streamed.data(), count,
                   kApplyPre | kApplyPost | kStreamDst0);
  EXPECT_EQ(plain, streamed);
}

const auto kCases = ::testing::Values(Case{ncclFloat32, ncclSum}, Case{ncclFloat64, ncclAvg},
                                      Case{ncclBfloat16, ncclMax}, Case{ncclInt8, ncclProd}, Case{ncclInt64, ncclAvg},
                                      Case{weftComplex128, ncclSum}, Case{ncclFloat8e4m3, ncclMin});

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return std::string(weft::dataTypeName(info.param.dtype)) + "_" + std::to_string(static_cast<int>(info.param.op));
}

INSTANTIATE_TEST_SUITE_P(Types, StreamStoreTest, kCases, caseName);

// ---- reductions bound for FIFO slots ----

constexpr size_t kPad = 64;

// Two destinations with guard bytes before (kPad + skew) and after (kPad) the range.
struct Dsts {
  Dsts(size_t bytes, size_t skew) : skew(skew), d0(kPad + skew + bytes + kPad, kGuard), d1(d0) {}
  unsigned char* p0() { return d0.data() + kPad + skew; }
  unsigned char* p1() { return d1.data() + kPad + skew; }
  size_t skew;
  std::vector<unsigned char> d0, d1;
};

class SlotStoreTest : public ::testing::TestWithParam<Case> {};

TEST_P(SlotStoreTest, SameBytesAsPlainStores) {
  const Case c = GetParam();
  ReduceSpec spec;
  ASSERT_TRUE(weft::makeReduceSpec(c.dtype, c.op, 3, &spec));
  const size_t es = weft::dataTypeSize(c.dtype);
  const size_t block = 16384 / es;  // the block reduce_host.cc computes into
  const unsigned slotFlags[] = {kSlotDst1, kSlotDst1 | kStreamDst0};
  for (size_t count : {size_t(1), size_t(1023), block - 1, block, block + 1, size_t(70001)}) {
    for (size_t skew : {size_t(0), es, size_t(8) * es}) {
      const size_t bytes = count * es;
      const auto a = randomBytes(bytes + skew, 1), b = randomBytes(bytes, 2);
      for (unsigned flags : {0u, unsigned(kApplyPre), unsigned(kApplyPost), unsigned(kApplyPre | kApplyPost)}) {
        for (bool second : {false, true}) {
          Dsts plain(bytes, skew);
          weft::reduceCopy(spec, plain.p0(), second ? plain.p1() : nullptr, a.data() + skew, b.data(), count, flags);
          for (unsigned slots : slotFlags) {
            Dsts slotted(bytes, skew);
            weft::reduceCopy(spec, slotted.p0(), second ? slotted.p1() : nullptr, a.data() + skew, b.data(), count,
                             flags | slots);
            ASSERT_EQ(plain.d0, slotted.d0) << "count " << count << " skew " << skew << " flags " << flags
                                            << " slot flags " << slots << " second " << second;
            ASSERT_EQ(plain.d1, slotted.d1) << "second destination, count " << count << " slot flags " << slots;
          }
        }
      }
      // One source, no pre or post: a copy into both, whatever the flags.
      Dsts copied(bytes, skew);
      weft::reduceCopy(spec, copied.p0(), copied.p1(), nullptr, a.data() + skew, count, kSlotDst1);
      EXPECT_EQ(0, memcmp(copied.p0(), a.data() + skew, bytes));
      EXPECT_EQ(0, memcmp(copied.p1(), a.data() + skew, bytes));
    }
  }
}

// In place, as a ring step that reduces into its own output and sends it on: dst0 is the local
// input, read block by block before it is written.
TEST_P(SlotStoreTest, InPlace) {
  const Case c = GetParam();
  ReduceSpec spec;
  ASSERT_TRUE(weft::makeReduceSpec(c.dtype, c.op, 2, &spec));
  const size_t count = 50001, bytes = count * weft::dataTypeSize(c.dtype);
  const auto a = randomBytes(bytes, 3), b = randomBytes(bytes, 4);
  auto plain = a, slotted = a;
  std::vector<unsigned char> plain1(bytes), slotted1(bytes);
  weft::reduceCopy(spec, plain.data(), plain1.data(), b.data(), plain.data(), count, kApplyPre | kApplyPost);
  weft::reduceCopy(spec, slotted.data(), slotted1.data(), b.data(), slotted.data(), count,
                   kApplyPre | kApplyPost | kSlotDst1);
  EXPECT_EQ(plain, slotted);
  EXPECT_EQ(plain1, slotted1);
}

INSTANTIATE_TEST_SUITE_P(Types, SlotStoreTest, kCases, caseName);

TEST(CopyStreaming, EveryLengthAndAlignment) {
  auto src = randomBytes(9000, 5);
  for (size_t len : {size_t(0), size_t(1), size_t(63), size_t(4095), size_t(4096), size_t(4097), size_t(8191)}) {
    for (size_t off = 0; off < 17; ++off) {
      std::vector<unsigned char> dst(len + 64, kGuard);
      weft::copyStreaming(dst.data() + off, src.data() + 3, len);
      ASSERT_EQ(0, memcmp(dst.data() + off, src.data() + 3, len)) << "len " << len << " off " << off;
      for (size_t i = 0; i < off; ++i) ASSERT_EQ(kGuard, dst[i]);
      for (size_t i = off + len; i < dst.size(); ++i) ASSERT_EQ(kGuard, dst[i]);
    }
  }
  // Exact aliasing leaves the bytes as they are.
  auto same = src;
  weft::copyStreaming(same.data(), same.data(), same.size());
  EXPECT_EQ(src, same);
}

// Lengths below, at and past one piece (256 KiB) and several pieces with a ragged end.
TEST(CopyBytes, EveryPieceBoundary) {
  const size_t piece = 256 * 1024;
  auto src = randomBytes(3 * piece + 100, 6);
  for (size_t len : {size_t(0), size_t(1), piece - 1, piece, piece + 1, 2 * piece, 3 * piece + 97}) {
    std::vector<unsigned char> dst(len + 70, kGuard);
    weft::copyBytes(dst.data() + 5, src.data() + 3, len);
    ASSERT_EQ(0, memcmp(dst.data() + 5, src.data() + 3, len)) << "len " << len;
    for (size_t i = 0; i < 5; ++i) ASSERT_EQ(kGuard, dst[i]);
    for (size_t i = 5 + len; i < dst.size(); ++i) ASSERT_EQ(kGuard, dst[i]) << "len " << len;
  }
  auto same = src;
  weft::copyBytes(same.data(), same.data(), same.size());
  EXPECT_EQ(src, same);
}

}  // namespace
