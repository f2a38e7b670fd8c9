// Weft's software float16 / bfloat16 / float8 types (src/math/lowp_types.h) against two
// independent references: an exact decoder and a brute-force round-to-nearest-even encoder written
// here from the format definitions, and, where the CUDA toolkit's conversion headers are on the
// include path, NVIDIA's own host conversions. The second check is what ties Weft's host results
// to what a GPU computes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "math/lowp_types.h"

#if __has_include(<cuda_fp16.h>) && __has_include(<cuda_bf16.h>) && __has_include(<cuda_fp8.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#define WEFT_TEST_HAVE_CUDA_HEADERS 1
#else
#define WEFT_TEST_HAVE_CUDA_HEADERS 0
#endif

namespace {

using weft::BFloat16;
using weft::Float16;
using weft::Float8E4M3;
using weft::Float8E5M2;

uint32_t bitsOf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// ---- The reference: a format described by its fields, decoded exactly in double and encoded by
// searching the sorted list of its finite values.
struct Format {
  const char* name;
  int expBits;
  int manBits;
  bool ieee;  // IEEE Inf/NaN; otherwise e4m3fn: no Inf, only S.1111.111 is NaN
  uint32_t canonicalNaN;
  bool saturate;  // finite overflow goes to the largest finite value instead of Inf

  int bits() const { return 1 + expBits + manBits; }
  uint32_t signBit() const { return 1u << (expBits + manBits); }
  uint32_t magMask() const { return signBit() - 1; }
  int bias() const { return (1 << (expBits - 1)) - 1; }
  bool isNaN(uint32_t p) const {
    const uint32_t mag = p & magMask();
    const uint32_t expAll = ((1u << expBits) - 1) << manBits;
    if (ieee) return (mag & expAll) == expAll && (mag & ((1u << manBits) - 1)) != 0;
    return mag == magMask();
  }
  bool isInf(uint32_t p) const {
    const uint32_t expAll = ((1u << expBits) - 1) << manBits;
    return ieee && (p & magMask()) == expAll;
  }
  double decode(uint32_t p) const {
    const bool neg = (p & signBit()) != 0;
    const uint32_t e = (p >> manBits) & ((1u << expBits) - 1);
    const uint32_t m = p & ((1u << manBits) - 1);
    double v;
    if (isNaN(p)) return std::numeric_limits<double>::quiet_NaN();
    if (isInf(p))
      v = std::numeric_limits<double>::infinity();
    else if (e == 0)
      v = std::ldexp(static_cast<double>(m), 1 - bias() - manBits);
    else
      v = std::ldexp(static_cast<double>((1u << manBits) | m), static_cast<int>(e) - bias() - manBits);
    return neg ? -v : v;
  }
  // Largest finite magnitude pattern.
  uint32_t maxFinite() const { return ieee ? ((((1u << expBits) - 1) << manBits) - 1) : magMask() - 1; }
  // Round-to-nearest-even of any double (exact input) to this format, with Weft's overflow rules.
  uint32_t encode(double x) const {
    if (std::isnan(x)) return canonicalNaN;
    const uint32_t sign = std::signbit(x) ? signBit() : 0;
    const double a = std::fabs(x);
    if (std::isinf(a)) return ieee ? (sign | (maxFinite() + 1)) : canonicalNaN;
    // Magnitude patterns 0..maxFinite are in increasing order of value.
    uint32_t lo = 0, hi = maxFinite();
    if (a >= decode(hi)) {
      // Past the largest finite value: the next step up would be 2^(emax+1) (or its analogue).
      const double next = decode(hi) + (decode(hi) - decode(hi - 1));
      const double mid = (decode(hi) + next) / 2;
      if (saturate || a < mid) return sign | hi;
      return sign | (hi + 1);  // Inf (ties go to Inf: the largest finite has an odd mantissa)
    }
    while (hi - lo > 1) {
      const uint32_t m = (lo + hi) / 2;
      (decode(m) <= a ? lo : hi) = m;
    }
    const double dl = a - decode(lo), dh = decode(hi) - a;
    uint32_t r = dl < dh ? lo : (dh < dl ? hi : ((lo & 1) == 0 ? lo : hi));
    return sign | r;
  }
};

const Format kHalf{"float16", 5, 10, true, 0x7fff, false};
const Format kBf16{"bfloat16", 8, 7, true, 0x7fff, false};
const Format kE4m3{"float8e4m3", 4, 3, false, 0x7f, true};
const Format kE5m2{"float8e5m2", 5, 2, true, 0x7f, false};

uint32_t weftEncode(const Format& f, float x) {
  if (&f == &kHalf) return Float16(x).bits;
  if (&f == &kBf16) return BFloat16(x).bits;
  if (&f == &kE4m3) return Float8E4M3(x).bits;
  return Float8E5M2(x).bits;
}
float weftDecode(const Format& f, uint32_t p) {
  if (&f == &kHalf) return Float16::fromBits(static_cast<uint16_t>(p)).toFloat();
  if (&f == &kBf16) return BFloat16::fromBits(static_cast<uint16_t>(p)).toFloat();
  if (&f == &kE4m3) return static_cast<float>(Float8E4M3::fromBits(static_cast<uint8_t>(p)));
  return static_cast<float>(Float8E5M2::fromBits(static_cast<uint8_t>(p)));
}

const Format* const kFormats[] = {&kHalf, &kBf16, &kE4m3, &kE5m2};

// Floats that probe every rounding decision of a format: each representable value, the exact
// midpoints to its neighbours, and one float step either side of both; the regions beyond the
// largest value and below the smallest subnormal; and a spread over all float bit patterns.
std::vector<float> probeInputs(const Format& f) {
  std::vector<float> in;
  auto add = [&](double v) {
    const float x = static_cast<float>(v);
    if (static_cast<double>(x) != v) return;  // only exactly representable probes
    for (float s : {x, -x}) {
      in.push_back(s);
      in.push_back(std::nextafter(s, std::numeric_limits<float>::infinity()));
      in.push_back(std::nextafter(s, -std::numeric_limits<float>::infinity()));
    }
  };
  const uint32_t top = f.maxFinite();
  for (uint32_t p = 0; p <= top; ++p) {
    add(f.decode(p));
    if (p < top) add((f.decode(p) + f.decode(p + 1)) / 2);
  }
  const double maxv = f.decode(top), step = maxv - f.decode(top - 1);
  for (double k = 0; k <= 8; k += 0.25) add(maxv + k * step);
  add(f.decode(1) / 2);
  add(f.decode(1) / 4);
  add(3 * f.decode(1) / 4);
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4093) in.push_back(floatOf(static_cast<uint32_t>(u)));
  for (float s :
       {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
        floatOf(0x7fc00000u), floatOf(0xffc00001u), floatOf(0x7f800001u), floatOf(0x7fbfffffu)})
    in.push_back(s);
  return in;
}

TEST(LowpTypes, TriviallyCopyableRawBits) {
  static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2 && sizeof(Float8E4M3) == 1 && sizeof(Float8E5M2) == 1);
  static_assert(std::is_trivially_copyable_v<Float16> && std::is_trivially_copyable_v<Float8E4M3>);
  EXPECT_EQ(Float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(Float8E4M3(1.0f).bits, 0x38);
  EXPECT_EQ(Float8E5M2(1.0f).bits, 0x3c);
  EXPECT_EQ(Float8E4M3(448.0f).bits, 0x7e);
  EXPECT_EQ(Float8E5M2(57344.0f).bits, 0x7b);
}

// Every bit pattern decodes to its exact value; NaN stays NaN.
TEST(LowpTypes, DecodeEveryPatternExactly) {
  for (const Format* f : kFormats) {
    for (uint32_t p = 0; p < (1u << f->bits()); ++p) {
      const double want = f->decode(p);
      const float got = weftDecode(*f, p);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << f->name << " pattern " << p;
      } else {
        ASSERT_EQ(static_cast<double>(got), want) << f->name << " pattern " << p;
        ASSERT_EQ(std::signbit(got), std::signbit(want)) << f->name << " pattern " << p;
      }
    }
  }
}

// Decoding then encoding gives the pattern back (NaNs come back canonical).
TEST(LowpTypes, RoundTripEveryPattern) {
  for (const Format* f : kFormats) {
    for (uint32_t p = 0; p < (1u << f->bits()); ++p) {
      const uint32_t back = weftEncode(*f, weftDecode(*f, p));
      ASSERT_EQ(back, f->isNaN(p) ? f->canonicalNaN : p) << f->name << " pattern " << p;
    }
  }
}

// Rounding of arbitrary floats: ties to even, subnormals, overflow and NaN/Inf rules.
TEST(LowpTypes, EncodeMatchesBruteForceRounding) {
  for (const Format* f : kFormats) {
    size_t n = 0;
    for (float x : probeInputs(*f)) {
      const uint32_t want = f->encode(static_cast<double>(x));
      const uint32_t got = weftEncode(*f, x);
      ASSERT_EQ(got, want) << f->name << " input " << x << " (bits 0x" << std::hex << bitsOf(x) << ")";
      ++n;
    }
    EXPECT_GT(n, 1000000u) << f->name;
  }
}

TEST(LowpTypes, DocumentedEdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // float16: overflow to Inf, the tie at 65520 goes to Inf, NaN canonical regardless of sign.
  EXPECT_EQ(Float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Float16(65519.99f).bits, 0x7bff);
  EXPECT_EQ(Float16(65520.0f).bits, 0x7c00);
  EXPECT_EQ(Float16(-1e9f).bits, 0xfc00);
  EXPECT_EQ(Float16(-nan).bits, 0x7fff);
  EXPECT_EQ(Float16(std::ldexp(1.0f, -25)).bits, 0x0000);     // tie with 0: even
  EXPECT_EQ(Float16(std::ldexp(3.0f, -25)).bits, 0x0002);     // tie 1.5 ulp: even (2)
  EXPECT_EQ(Float16(-std::ldexp(1.0f, -26)).bits, 0x8000);    // keeps the sign of zero
  EXPECT_EQ(Float16(std::ldexp(1023.5f, -24)).bits, 0x0400);  // rounds up into the normals
  // bfloat16.
  EXPECT_EQ(BFloat16(floatOf(0x3f808000u)).bits, 0x3f80);  // tie, even stays
  EXPECT_EQ(BFloat16(floatOf(0x3f818000u)).bits, 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(BFloat16(floatOf(0x7f7fffffu)).bits, 0x7f80);  // FLT_MAX rounds to Inf
  EXPECT_EQ(BFloat16(floatOf(0xffc12345u)).bits, 0x7fff);
  // e4m3: finite overflow saturates to +-448, Inf and NaN become NaN.
  EXPECT_EQ(Float8E4M3(464.0f).bits, 0x7e);
  EXPECT_EQ(Float8E4M3(1e6f).bits, 0x7e);
  EXPECT_EQ(Float8E4M3(-1e6f).bits, 0xfe);
  EXPECT_EQ(Float8E4M3(inf).bits, 0x7f);
  EXPECT_EQ(Float8E4M3(-inf).bits, 0x7f);
  EXPECT_EQ(Float8E4M3(nan).bits, 0x7f);
  EXPECT_TRUE(std::isnan(static_cast<float>(Float8E4M3::fromBits(0xff))));
  EXPECT_EQ(static_cast<float>(Float8E4M3::fromBits(0x01)), std::ldexp(1.0f, -9));
  EXPECT_EQ(Float8E4M3(std::ldexp(1.0f, -10)).bits, 0x00);  // half the smallest subnormal: even
  // e5m2: IEEE-like, overflow to Inf (ties included).
  EXPECT_EQ(Float8E5M2(61439.0f).bits, 0x7b);
  EXPECT_EQ(Float8E5M2(61440.0f).bits, 0x7c);
  EXPECT_EQ(Float8E5M2(-inf).bits, 0xfc);
  EXPECT_EQ(Float8E5M2(nan).bits, 0x7f);
  EXPECT_EQ(static_cast<float>(Float8E5M2::fromBits(0x7c)), inf);
}

// e4m3 "FNUZ", what MI300's (gfx940-gfx942) FP8 conversion produces, written here from its
// definition: bias 8, subnormals m x 2^-10, largest 240 (0x7f), no negative zero (0x80 is NaN),
// rounded to nearest even. Finite inputs up to 240 in magnitude (the caller clamps).
uint32_t fnuzReference(float v) {
  auto value = [](uint32_t p) {
    const uint32_t e = p >> 3, m = p & 7u;
    return e == 0 ? std::ldexp(static_cast<double>(m), -10) : std::ldexp(8.0 + m, static_cast<int>(e) - 11);
  };
  const double a = std::fabs(static_cast<double>(v));
  uint32_t lo = 0, hi = 0x7f;
  if (a >= value(hi)) return std::signbit(v) ? 0xffu : 0x7fu;
  while (hi - lo > 1) {
    const uint32_t m = (lo + hi) / 2;
    (value(m) <= a ? lo : hi) = m;
  }
  const double dl = a - value(lo), dh = value(hi) - a;
  const uint32_t r = dl < dh ? lo : (dh < dl ? hi : ((lo & 1) == 0 ? lo : hi));
  return r == 0 ? 0u : (std::signbit(v) ? 0x80u : 0u) | r;
}

// The gfx942 kernel path (lowp_types.h float8e4m3FiniteBitsViaFnuz: the FNUZ pattern of x/2,
// re-signed and saturated) gives Weft's e4m3 bits for every finite probe and a random sample, if
// the hardware rounds as the reference above. Never run on an MI300.
TEST(LowpTypes, Mi300FnuzConversionGivesTheSameE4m3Bits) {
  size_t n = 0;
  auto check = [&](float x) {
    if (!std::isfinite(x)) return;
    ASSERT_EQ(weft::float8e4m3FiniteBitsViaFnuz(x, fnuzReference), Float8E4M3(x).bits)
        << "input " << x << " (bits 0x" << std::hex << bitsOf(x) << ")";
    ++n;
  };
  for (float x : probeInputs(kE4m3)) check(x);
  std::mt19937 rng(4242);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t exp = 100 + rng() % 40;  // 2^-27 .. 2^12: below the subnormals to past 448
    check(floatOf(((rng() & 1u) << 31) | (exp << 23) | (rng() & 0x7fffffu)));
  }
  EXPECT_GT(n, 2000000u);
}

#if WEFT_TEST_HAVE_CUDA_HEADERS

uint16_t cudaHalfBits(__half h) { return static_cast<__half_raw>(h).x; }
uint16_t cudaBf16Bits(__nv_bfloat16 h) { return static_cast<__nv_bfloat16_raw>(h).x; }

// All 65536 float16 and bfloat16 patterns and all 256 patterns of each float8 format decode to the
// same float as NVIDIA's host conversion (NaN: both NaN).
TEST(LowpTypesVsCuda, DecodeAllPatterns) {
  for (uint32_t p = 0; p < 65536; ++p) {
    __half_raw hr;
    hr.x = static_cast<uint16_t>(p);
    const float want = __half2float(__half(hr));
    const float got = Float16::fromBits(static_cast<uint16_t>(p)).toFloat();
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(got)) << "float16 " << p;
    else
      ASSERT_EQ(bitsOf(got), bitsOf(want)) << "float16 " << p;

    __nv_bfloat16_raw br;
    br.x = static_cast<uint16_t>(p);
    const float wantB = __bfloat162float(__nv_bfloat16(br));
    const float gotB = BFloat16::fromBits(static_cast<uint16_t>(p)).toFloat();
    if (std::isnan(wantB))
      ASSERT_TRUE(std::isnan(gotB)) << "bfloat16 " << p;
    else
      ASSERT_EQ(bitsOf(gotB), bitsOf(wantB)) << "bfloat16 " << p;
  }
  for (uint32_t p = 0; p < 256; ++p) {
    __nv_fp8_e4m3 e4;
    e4.__x = static_cast<__nv_fp8_storage_t>(p);
    const float want4 = static_cast<float>(e4);
    const float got4 = static_cast<float>(Float8E4M3::fromBits(static_cast<uint8_t>(p)));
    if (std::isnan(want4))
      ASSERT_TRUE(std::isnan(got4)) << "e4m3 " << p;
    else
      ASSERT_EQ(bitsOf(got4), bitsOf(want4)) << "e4m3 " << p;

    __nv_fp8_e5m2 e5;
    e5.__x = static_cast<__nv_fp8_storage_t>(p);
    const float want5 = static_cast<float>(e5);
    const float got5 = static_cast<float>(Float8E5M2::fromBits(static_cast<uint8_t>(p)));
    if (std::isnan(want5))
      ASSERT_TRUE(std::isnan(got5)) << "e5m2 " << p;
    else
      ASSERT_EQ(bitsOf(got5), bitsOf(want5)) << "e5m2 " << p;
  }
}

// Float to narrow: bit-identical to NVIDIA's round-to-nearest host conversions, NaN included (both
// produce the canonical patterns). e4m3 is compared with __NV_SATFINITE, whose finite overflow is
// Weft's; the one documented difference is +-Inf, which CUDA saturates to +-448 and Weft turns
// into NaN. e5m2 is compared with __NV_NOSAT (overflow to Inf).
TEST(LowpTypesVsCuda, EncodeProbes) {
  for (const Format* f : kFormats) {
    size_t n = 0;
    for (float x : probeInputs(*f)) {
      uint32_t want;
      if (f == &kHalf) {
        want = cudaHalfBits(__float2half_rn(x));
      } else if (f == &kBf16) {
        want = cudaBf16Bits(__float2bfloat16_rn(x));
      } else if (f == &kE4m3) {
        if (std::isinf(x)) {
          EXPECT_EQ(weftEncode(*f, x), 0x7fu);
          continue;
        }
        want = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
      } else {
        want = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2);
      }
      ASSERT_EQ(weftEncode(*f, x), want) << f->name << " input " << x << " (bits 0x" << std::hex << bitsOf(x) << ")";
      ++n;
    }
    EXPECT_GT(n, 1000000u) << f->name;
  }
}

// A large random sample of floats concentrated where each format rounds (its own exponent range).
TEST(LowpTypesVsCuda, EncodeRandomSample) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t sign = (rng() & 1u) << 31;
    const uint32_t exp = 90 + rng() % 80;  // 2^-37 .. 2^42: subnormals to overflow for all four
    const float x = floatOf(sign | (exp << 23) | (rng() & 0x7fffffu));
    ASSERT_EQ(Float16(x).bits, cudaHalfBits(__float2half_rn(x))) << x;
    ASSERT_EQ(BFloat16(x).bits, cudaBf16Bits(__float2bfloat16_rn(x))) << x;
    ASSERT_EQ(Float8E4M3(x).bits, __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)) << x;
    ASSERT_EQ(Float8E5M2(x).bits, __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)) << x;
  }
}

#else

TEST(LowpTypesVsCuda, DISABLED_CudaHeadersNotOnIncludePath) {}

#endif

}  // namespace
