// The suite's own float16/bfloat16/float8 conversions are the reference for every low-precision
// result, so they are checked here: exhaustively round-tripped, spot-checked at known values, and,
// where the CUDA toolkit's headers are installed, compared bit for bit with NVIDIA's conversions.
// This file must not include nccl.h (it is compiled beside cuda_fp16.h, not Weft's headers).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "lowp.h"

#if defined(WEFT_TEST_HAVE_CUDA_FP) && WEFT_TEST_HAVE_CUDA_FP && __has_include(<cuda_fp8.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#define WEFT_TEST_CUDA_XCHECK 1
#else
#define WEFT_TEST_CUDA_XCHECK 0
#endif

namespace weft_test {
namespace {

void expectRoundTrip(const MiniFloat& f, const char* name) {
  const uint32_t patterns = 1u << f.totalBits();
  for (uint32_t p = 0; p < patterns; ++p) {
    if (isNonFinite(f, p)) continue;
    const double v = decodeMiniFloat(f, p);
    ASSERT_EQ(encodeMiniFloat(f, v), p) << name << " pattern 0x" << std::hex << p << " decodes to " << v;
  }
}

TEST(LowPrecision, RoundTripEveryFinitePattern) {
  expectRoundTrip(kFloat16, "float16");
  expectRoundTrip(kBfloat16, "bfloat16");
  expectRoundTrip(kFloat8E4M3, "e4m3");
  expectRoundTrip(kFloat8E5M2, "e5m2");
}

TEST(LowPrecision, KnownValues) {
  EXPECT_EQ(decodeMiniFloat(kFloat16, 0x3C00), 1.0);
  EXPECT_EQ(decodeMiniFloat(kFloat16, 0x7BFF), 65504.0);
  EXPECT_EQ(decodeMiniFloat(kFloat16, 0x0001), std::ldexp(1.0, -24));
  EXPECT_TRUE(std::isinf(decodeMiniFloat(kFloat16, 0x7C00)));
  EXPECT_EQ(decodeMiniFloat(kBfloat16, 0x3F80), 1.0);
  EXPECT_EQ(decodeMiniFloat(kBfloat16, 0xC040), -3.0);
  EXPECT_EQ(decodeMiniFloat(kFloat8E4M3, 0x7E), 448.0);
  EXPECT_TRUE(std::isnan(decodeMiniFloat(kFloat8E4M3, 0x7F)));
  EXPECT_EQ(decodeMiniFloat(kFloat8E4M3, 0x38), 1.0);
  EXPECT_EQ(decodeMiniFloat(kFloat8E4M3, 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(decodeMiniFloat(kFloat8E5M2, 0x3C), 1.0);
  EXPECT_EQ(decodeMiniFloat(kFloat8E5M2, 0x7B), 57344.0);
  EXPECT_TRUE(std::isinf(decodeMiniFloat(kFloat8E5M2, 0x7C)));
  EXPECT_EQ(kFloat8E4M3.maxFinite(), 448.0);
  EXPECT_EQ(kFloat8E5M2.maxFinite(), 57344.0);
  EXPECT_EQ(kFloat16.maxFinite(), 65504.0);
  // Ties go to even: 1 + 2^-11 is halfway between 1 and the next float16.
  EXPECT_EQ(encodeMiniFloat(kFloat16, 1.0 + std::ldexp(1.0, -11)), 0x3C00u);
  EXPECT_EQ(encodeMiniFloat(kFloat16, 1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02u);
  EXPECT_EQ(encodeMiniFloat(kFloat8E4M3, 17.0), encodeMiniFloat(kFloat8E4M3, 16.0));  // 16, 18: tie to 16
  EXPECT_EQ(encodeMiniFloat(kFloat8E4M3, 1000.0), 0x7Fu);                             // no Inf in e4m3
  EXPECT_EQ(encodeMiniFloat(kFloat8E5M2, 1e6), 0x7Cu);
}

#if WEFT_TEST_CUDA_XCHECK

float cudaDecode(int which, uint32_t p) {
  switch (which) {
    case 0: {
      __half_raw r;
      r.x = static_cast<unsigned short>(p);
      return __half2float(__half(r));
    }
    case 1: {
      __nv_bfloat16_raw r;
      r.x = static_cast<unsigned short>(p);
      return __bfloat162float(__nv_bfloat16(r));
    }
    case 2: {
      __nv_fp8_e4m3 v;
      v.__x = static_cast<__nv_fp8_storage_t>(p);
      return static_cast<float>(v);
    }
    default: {
      __nv_fp8_e5m2 v;
      v.__x = static_cast<__nv_fp8_storage_t>(p);
      return static_cast<float>(v);
    }
  }
}

uint32_t cudaEncode(int which, float x) {
  switch (which) {
    case 0: return __half_raw(__float2half_rn(x)).x;
    case 1: return __nv_bfloat16_raw(__float2bfloat16_rn(x)).x;
    case 2: return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    default: return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
  }
}

TEST(LowPrecision, MatchesCudaConversions) {
  const MiniFloat* formats[] = {&kFloat16, &kBfloat16, &kFloat8E4M3, &kFloat8E5M2};
  const char* names[] = {"float16", "bfloat16", "e4m3", "e5m2"};
  for (int w = 0; w < 4; ++w) {
    const MiniFloat& f = *formats[w];
    for (uint32_t p = 0; p < (1u << f.totalBits()); ++p) {
      if (isNonFinite(f, p)) continue;
      ASSERT_EQ(decodeMiniFloat(f, p), static_cast<double>(cudaDecode(w, p))) << names[w] << " 0x" << std::hex << p;
    }
    // Encoding: floats spread over the whole finite range (and halfway points), within range.
    uint64_t s = 0x12345678;
    for (int i = 0; i < 200000; ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const double scale = std::ldexp(1.0, static_cast<int>((s >> 20) % 64) - 40);
      const float x = static_cast<float>((static_cast<double>(s >> 40) / (1ull << 24) - 0.5) * scale);
      if (std::fabs(x) > f.maxFinite()) continue;
      ASSERT_EQ(encodeMiniFloat(f, x), cudaEncode(w, x)) << names[w] << " value " << x;
    }
  }
}

#endif

}  // namespace
}  // namespace weft_test
