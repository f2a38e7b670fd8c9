// The complex element operations (reduce_ops.h) and their host loops (reduce_host.h): sizes and
// names, the specs the ops build, and the bits of sum, product, average and pre-multiply, including
// the cases where a fused multiply-add or a pre-multiplied average would give different bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "math/complex_types.h"
#include "math/reduce_host.h"
#include "math/reduce_ops.h"
#include "weft/weft.h"

namespace {

using weft::BaseOp;
using weft::Complex;
using weft::ReduceSpec;
using C64 = Complex<float>;
using C128 = Complex<double>;

template <typename T>
uint64_t bitsOf(T v) {
  uint64_t b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}

// Two complex values are the same bits, part by part (so -0 differs from +0, and NaN is compared
// by pattern).
template <typename C>
void expectSameBits(const C& got, const C& want, const char* what) {
  EXPECT_EQ(bitsOf(got.re), bitsOf(want.re)) << what << ": real part " << got.re << " want " << want.re;
  EXPECT_EQ(bitsOf(got.im), bitsOf(want.im)) << what << ": imaginary part " << got.im << " want " << want.im;
}

// The spec's scalar words from a complex value, as the API captures it from user memory.
template <typename C>
void setScalar(ReduceSpec* s, const C& v) {
  uint64_t words[2] = {0, 0};
  memcpy(words, &v, sizeof(C));
  s->preMulScalar = words[0];
  s->preMulScalarHi = words[1];
}

TEST(ComplexPrimitives, SizesNamesAndValidity) {
  EXPECT_EQ(static_cast<int>(weftComplex64), 64);
  EXPECT_EQ(static_cast<int>(weftComplex128), 65);
  EXPECT_EQ(weft::dataTypeSize(weftComplex64), 8u);
  EXPECT_EQ(weft::dataTypeSize(weftComplex128), 16u);
  EXPECT_STREQ(weft::dataTypeName(weftComplex64), "complex64");
  EXPECT_STREQ(weft::dataTypeName(weftComplex128), "complex128");
  EXPECT_TRUE(weft::isValidDataType(weftComplex64));
  EXPECT_TRUE(weft::isValidDataType(weftComplex128));
  // The gap between NCCL's values and Weft's, and past them, stays invalid.
  for (int v : {12, 13, 63, 66, 67, 127, 128, 1 << 20})
    EXPECT_FALSE(weft::isValidDataType(static_cast<ncclDataType_t>(v))) << v;
}

TEST(ComplexPrimitives, SpecsOfTheBuiltInOps) {
  ReduceSpec s;
  for (ncclDataType_t dt : {weftComplex64, weftComplex128}) {
    EXPECT_FALSE(weft::makeReduceSpec(dt, ncclMax, 4, &s));
    EXPECT_FALSE(weft::makeReduceSpec(dt, ncclMin, 4, &s));
    EXPECT_FALSE(weft::opDefinedFor(ncclMax, dt));
    EXPECT_TRUE(weft::opDefinedFor(ncclProd, dt));
    ASSERT_TRUE(weft::makeReduceSpec(dt, ncclProd, 4, &s));
    EXPECT_EQ(s.op, BaseOp::kProd);
    // The average divides each part of the sum; it does not pre-multiply.
    ASSERT_TRUE(weft::makeReduceSpec(dt, ncclAvg, 3, &s));
    EXPECT_EQ(s.op, BaseOp::kSum);
    EXPECT_FALSE(s.preMul);
    EXPECT_TRUE(s.postDiv);
    EXPECT_EQ(s.divisor, 3);
  }
}

// (a + bi)(c + di) with a*c rounded: fused into the subtraction it would leave 2^-24 (float) or
// 2^-54 (double) in the real part instead of exactly 0.
TEST(ComplexPrimitives, ProductRoundsEachProductOnItsOwn) {
  const float a = 1.0f + 0x1p-12f, b = 1.0f + 0x1p-11f;
  const C64 x{a, b}, y{a, 1.0f};
  const C64 p = weft::FuncProd<C64>()(x, y);
  EXPECT_EQ(bitsOf(p.re), bitsOf(0.0f)) << p.re;
  const volatile float ad = a * 1.0f, bc = b * a;  // volatile: rounded separately, in this order
  EXPECT_EQ(bitsOf(p.im), bitsOf(static_cast<float>(ad + bc)));

  const double da = 1.0 + 0x1p-27, db = 1.0 + 0x1p-26;
  const C128 q = weft::FuncProd<C128>()(C128{da, db}, C128{da, 1.0});
  EXPECT_EQ(bitsOf(q.re), bitsOf(0.0)) << q.re;

  expectSameBits(weft::FuncProd<C64>()(C64{1, 2}, C64{3, 4}), C64{-5, 10}, "(1+2i)(3+4i)");
  expectSameBits(weft::FuncProd<C128>()(C128{0, 1}, C128{0, 1}), C128{-1, 0}, "i*i");
}

TEST(ComplexPrimitives, NaNPartsAreCanonical) {
  float payload;
  const uint32_t odd = 0xffc01234u;  // a negative NaN with a payload
  memcpy(&payload, &odd, 4);
  const C64 s = weft::FuncSum<C64>()(C64{payload, 1}, C64{2, 3});
  EXPECT_EQ(bitsOf(s.re), uint64_t{0x7fffffffu});
  EXPECT_EQ(s.im, 4.0f);
  // Textbook product: (Inf + 0i)(0 + i) = (Inf*0 - 0*1) + (Inf*1 + 0*0)i; Inf * 0 is NaN and there
  // is no Annex G recovery of the real part.
  const float inf = std::numeric_limits<float>::infinity();
  const C64 p = weft::FuncProd<C64>()(C64{inf, 0}, C64{0, 1});
  EXPECT_EQ(bitsOf(p.re), uint64_t{0x7fffffffu});
  EXPECT_EQ(p.im, inf);
}

// Sum, product, pre-multiplied sum and average through reduceCopy, each element against the
// element operation, on the baseline and the AVX2 loops alike.
TEST(ComplexPrimitives, ReduceCopyMatchesTheElementOps) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  const size_t n = 1031;  // not a multiple of any vector width
  for (bool baseline : {false, true}) {
    weft::reduceUseBaselineLoopsForTesting(baseline);
    std::vector<C128> p(n), l(n), d0(n), d1(n);
    std::vector<C64> pf(n), lf(n), df(n);
    for (size_t i = 0; i < n; ++i) {
      p[i] = {u(rng), u(rng)};
      l[i] = {u(rng), u(rng)};
      pf[i] = {static_cast<float>(p[i].re), static_cast<float>(p[i].im)};
      lf[i] = {static_cast<float>(l[i].re), static_cast<float>(l[i].im)};
    }
    ReduceSpec s;
    ASSERT_TRUE(weft::makeReduceSpec(weftComplex128, ncclProd, 4, &s));
    weft::reduceCopy(s, d0.data(), d1.data(), p.data(), l.data(), n, 0);
    for (size_t i = 0; i < n; i += 97) {
      expectSameBits(d0[i], weft::FuncProd<C128>()(p[i], l[i]), "complex128 prod");
      expectSameBits(d1[i], d0[i], "complex128 prod, second destination");
    }
    ASSERT_TRUE(weft::makeReduceSpec(weftComplex64, ncclSum, 4, &s));
    weft::reduceCopy(s, df.data(), nullptr, pf.data(), lf.data(), n, 0);
    for (size_t i = 0; i < n; i += 97) expectSameBits(df[i], weft::FuncSum<C64>()(pf[i], lf[i]), "complex64 sum");

    // PreMulSum by a complex128 scalar whose imaginary part lives in the second word.
    s = ReduceSpec{};
    s.dtype = weftComplex128;
    s.preMul = true;
    const C128 scalar{0.75, -1.25};
    setScalar(&s, scalar);
    weft::reduceCopy(s, d0.data(), nullptr, p.data(), l.data(), n, weft::kApplyPre);
    for (size_t i = 0; i < n; i += 97)
      expectSameBits(d0[i], weft::FuncSum<C128>()(p[i], weft::FuncProd<C128>()(l[i], scalar)), "premulsum");
    // In place, as the executors run the first step of a rank: dst0 is `local`.
    std::vector<C64> inPlace = lf;
    s = ReduceSpec{};
    s.dtype = weftComplex64;
    s.preMul = true;
    setScalar(&s, C64{2.0f, 0.5f});
    weft::reduceCopy(s, inPlace.data(), nullptr, nullptr, inPlace.data(), n, weft::kApplyPre);
    for (size_t i = 0; i < n; i += 97)
      expectSameBits(inPlace[i], weft::FuncProd<C64>()(lf[i], C64{2.0f, 0.5f}), "complex64 pre-multiply in place");
  }
  weft::reduceUseBaselineLoopsForTesting(false);
}

// The average divides each part of the final sum once; an infinite part stays infinite (a
// multiplication by (1/3 + 0i) would turn it into NaN through Inf * 0).
TEST(ComplexPrimitives, AverageDividesEachPartOnce) {
  ReduceSpec s;
  ASSERT_TRUE(weft::makeReduceSpec(weftComplex64, ncclAvg, 3, &s));
  const float inf = std::numeric_limits<float>::infinity();
  C64 partial[2] = {{1.0f, inf}, {0.5f, -2.0f}};
  C64 local[2] = {{1.0f, 1.0f}, {0.25f, 1.0f}};
  C64 out[2];
  weft::reduceCopy(s, out, nullptr, partial, local, 2, weft::kApplyPre | weft::kApplyPost);
  expectSameBits(out[0], C64{2.0f / 3.0f, inf}, "average with an infinite part");
  expectSameBits(out[1], C64{0.75f / 3.0f, -1.0f / 3.0f}, "average");
  ASSERT_TRUE(weft::makeReduceSpec(weftComplex128, ncclAvg, 3, &s));
  C128 dp[1] = {{1.0, 2.0}}, dl[1] = {{0.5, 0.0}}, dout[1];
  weft::reduceCopy(s, dout, nullptr, dp, dl, 1, weft::kApplyPost);
  expectSameBits(dout[0], C128{1.5 / 3.0, 2.0 / 3.0}, "complex128 average");
}

// Max/Min on complex data never reach a loop: a spec that asks for them writes nothing.
TEST(ComplexPrimitives, OrderOpsDoNothing) {
  ReduceSpec s;
  s.dtype = weftComplex128;
  s.op = BaseOp::kMax;
  C128 a[1] = {{1, 2}}, b[1] = {{3, 4}}, out[1] = {{-7, -7}};
  weft::reduceCopy(s, out, nullptr, a, b, 1, 0);
  expectSameBits(out[0], C128{-7, -7}, "untouched");
}

}  // namespace
