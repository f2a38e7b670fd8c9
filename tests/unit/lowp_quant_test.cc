// Block-scaled FP8 quantization (src/math/lowp_quant.h): every count and tail, the error bound
// it promises, values far beyond e4m3's range, all-equal and all-zero blocks, and non-finite input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "math/lowp_quant.h"

namespace weft {
namespace {

// The promise: |decoded - x| <= |x| * 2^-4 + scale * 2^-10 (e4m3 keeps 3 mantissa bits; elements
// far below the block maximum fall into its subnormals, whose half step is 2^-10 of the scale).
template <typename T>
void checkRoundTrip(const std::vector<MemoryType<T>>& x, const char* what) {
  const size_t n = x.size();
  std::vector<LowpBlock> blocks(lowpBlocks(n) + 1);
  blocks.back().scale = 12345.0f;  // a guard block that must stay untouched
  lowpQuantize<T>(x.data(), n, blocks.data(), 0, 1);
  EXPECT_EQ(blocks.back().scale, 12345.0f) << what << " n=" << n;
  std::vector<MemoryType<T>> y(n);
  lowpDequantize<T>(blocks.data(), n, y.data(), 0, 1);
  for (size_t i = 0; i < n; ++i) {
    const LowpBlock& b = blocks[i / kLowpBlockElems];
    const float xi = elementToFloat<T>(x.data(), i), yi = elementToFloat<T>(y.data(), i);
    // The output type's own rounding comes on top for the 16-bit types.
    const float outUlp = std::is_same_v<T, float> ? 0.0f
                                                  : std::fabs(xi) * (std::is_same_v<T, BFloat16> ? 0x1p-8f : 0x1p-11f);
    const float bound = std::fabs(xi) * 0x1p-4f * 1.0001f + b.scale * 0x1p-10f + outUlp * 1.1f;
    ASSERT_LE(std::fabs(yi - xi), bound) << what << " n=" << n << " i=" << i << " x=" << xi << " y=" << yi;
  }
  // A partial last block is padded with zero bytes.
  if (n % kLowpBlockElems != 0)
    for (size_t i = n % kLowpBlockElems; i < kLowpBlockElems; ++i) ASSERT_EQ(blocks[n / kLowpBlockElems].q[i], 0);
}

template <typename T>
std::vector<MemoryType<T>> make(const std::vector<float>& v) {
  std::vector<MemoryType<T>> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) elementFromFloat<T>(out.data(), i, v[i]);
  return out;
}

TEST(LowpQuant, EveryCountAndTail) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<size_t> counts;
  for (size_t n = 0; n <= 520; ++n) counts.push_back(n);
  for (size_t n : {1023u, 1024u, 1025u, 4097u, 100003u}) counts.push_back(n);
  for (size_t n : counts) {
    std::vector<float> v(n);
    for (float& f : v) f = normal(rng);
    checkRoundTrip<float>(make<float>(v), "float32");
    checkRoundTrip<BFloat16>(make<BFloat16>(v), "bfloat16");
    checkRoundTrip<Float16>(make<Float16>(v), "float16");
  }
}

TEST(LowpQuant, LargeValuesDoNotSaturate) {
  // 1e4..1e6: a scale-less cast to e4m3 would turn every one of these into 448.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mag(4.0f, 6.0f);
  std::vector<float> v(3000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i % 2 ? -1.0f : 1.0f) * std::pow(10.0f, mag(rng));
  checkRoundTrip<float>(make<float>(v), "float32 1e4..1e6");
  checkRoundTrip<BFloat16>(make<BFloat16>(v), "bfloat16 1e4..1e6");
  // float16's largest value is 65504: the 1e4..6e4 part only.
  std::vector<float> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = std::fmod(v[i], 60000.0f);
  checkRoundTrip<Float16>(make<Float16>(h), "float16 up to 6e4");
  std::vector<LowpBlock> b(1);
  std::vector<float> big = {1e6f, -1e6f, 5e5f};
  lowpQuantize<float>(big.data(), big.size(), b.data(), 0, 1);
  // The block maximum decodes to itself (448 * scale), up to the scale's own rounding.
  EXPECT_NEAR(lowpDecode(b[0], 0), 1e6f, 1e6f * 1e-6f);
  EXPECT_NEAR(lowpDecode(b[0], 1), -1e6f, 1e6f * 1e-6f);
}

TEST(LowpQuant, EqualAndZeroBlocks) {
  for (float value : {1.0f, -3.5f, 0.1f, 1e-20f, 7e5f}) {
    std::vector<float> v(300, value);
    std::vector<LowpBlock> b(2);
    lowpQuantize<float>(v.data(), v.size(), b.data(), 0, 1);
    for (size_t i = 0; i < v.size(); ++i)
      ASSERT_NEAR(lowpDecode(b[i / 256], i % 256), value, std::fabs(value) * 1e-6f) << value;
  }
  std::vector<float> zeros(260, 0.0f);
  std::vector<LowpBlock> b(2);
  lowpQuantize<float>(zeros.data(), zeros.size(), b.data(), 0, 1);
  EXPECT_EQ(b[0].scale, 1.0f);
  for (size_t i = 0; i < zeros.size(); ++i) ASSERT_EQ(lowpDecode(b[i / 256], i % 256), 0.0f);
}

TEST(LowpQuant, NonFiniteInputPoisonsItsBlockOnly) {
  std::vector<float> v(512, 1.0f);
  v[3] = std::numeric_limits<float>::infinity();
  v[300] = std::numeric_limits<float>::quiet_NaN();
  v.resize(700, 2.0f);
  std::vector<LowpBlock> b(3);
  lowpQuantize<float>(v.data(), v.size(), b.data(), 0, 1);
  EXPECT_TRUE(std::isnan(lowpDecode(b[0], 0)));
  EXPECT_TRUE(std::isnan(lowpDecode(b[1], 0)));
  EXPECT_EQ(lowpDecode(b[2], 0), 2.0f);
  EXPECT_EQ(lowpDecode(b[2], 699 - 512), 2.0f);
}

TEST(LowpQuant, StridedLoopsCoverEveryBlockOnce) {
  // A GPU thread group walks blocks with a stride; the union must equal the whole range.
  std::vector<float> v(2000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(float(i));
  std::vector<LowpBlock> whole(lowpBlocks(v.size())), strided(lowpBlocks(v.size()));
  lowpQuantize<float>(v.data(), v.size(), whole.data(), 0, 1);
  for (size_t first = 0; first < 3; ++first) lowpQuantize<float>(v.data(), v.size(), strided.data(), first, 3);
  ASSERT_EQ(memcmp(whole.data(), strided.data(), whole.size() * sizeof(LowpBlock)), 0);
  std::vector<float> a(v.size()), c(v.size());
  lowpDequantize<float>(whole.data(), v.size(), a.data(), 0, 1);
  for (size_t first = 0; first < 2; ++first) lowpDequantize<float>(whole.data(), v.size(), c.data(), first, 2);
  ASSERT_EQ(a, c);
}

}  // namespace
}  // namespace weft
