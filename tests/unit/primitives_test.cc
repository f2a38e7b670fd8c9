// reduceCopy and makeReduceSpec (src/math/reduce_host.h) against a plain scalar reference
// written here from the documented rules, independently of Weft's element code: integers in
// 64-bit modular arithmetic, float32 through double, the narrow formats exactly in double and
// rounded once by a round-to-nearest-even written with frexp/ldexp. Every datatype, op, spec and
// flag combination runs over odd counts and with the aliasing the executor uses, once with the
// AVX2 loops (where the machine has them) and once with the baseline loops: both must give the
// reference's bits exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "math/reduce_host.h"

namespace {

using weft::BaseOp;
using weft::kApplyPost;
using weft::kApplyPre;
using weft::ReduceSpec;

enum class Kind { kSigned, kUnsigned, kF32, kF64, kNarrow };

// A narrow floating format, for the reference rounding.
struct Narrow {
  int expBits = 0;
  int manBits = 0;
  bool ieee = true;       // IEEE Inf/NaN (else e4m3fn: no Inf, S.1111.111 is NaN)
  bool saturate = false;  // finite overflow saturates (e4m3) instead of becoming Inf
  uint32_t canonicalNaN = 0;
};

struct TypeInfo {
  ncclDataType_t dtype;
  size_t size;
  Kind kind;
  Narrow narrow;
};

const TypeInfo kTypes[] = {
    {ncclInt8, 1, Kind::kSigned, {}},
    {ncclUint8, 1, Kind::kUnsigned, {}},
    {ncclInt32, 4, Kind::kSigned, {}},
    {ncclUint32, 4, Kind::kUnsigned, {}},
    {ncclInt64, 8, Kind::kSigned, {}},
    {ncclUint64, 8, Kind::kUnsigned, {}},
    {ncclFloat16, 2, Kind::kNarrow, {5, 10, true, false, 0x7fff}},
    {ncclFloat32, 4, Kind::kF32, {}},
    {ncclFloat64, 8, Kind::kF64, {}},
    {ncclBfloat16, 2, Kind::kNarrow, {8, 7, true, false, 0x7fff}},
    {ncclFloat8e4m3, 1, Kind::kNarrow, {4, 3, false, true, 0x7f}},
    {ncclFloat8e5m2, 1, Kind::kNarrow, {5, 2, true, false, 0x7f}},
};

constexpr uint32_t kF32NaN = 0x7fffffffu;
constexpr uint64_t kF64NaN = 0x7fffffffffffffffull;

uint64_t maskOf(size_t size) { return size == 8 ? ~0ull : (1ull << (8 * size)) - 1; }

float f32(uint64_t b) {
  const uint32_t u = static_cast<uint32_t>(b);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint64_t bitsF32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
double f64(uint64_t b) {
  double d;
  memcpy(&d, &b, 8);
  return d;
}
uint64_t bitsF64(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

// ---- Reference for the narrow formats.
int narrowBias(const Narrow& f) { return (1 << (f.expBits - 1)) - 1; }
uint32_t narrowSign(const Narrow& f) { return 1u << (f.expBits + f.manBits); }
bool narrowIsNaN(const Narrow& f, uint64_t p) {
  const uint32_t mag = static_cast<uint32_t>(p) & (narrowSign(f) - 1);
  const uint32_t expAll = ((1u << f.expBits) - 1) << f.manBits;
  if (!f.ieee) return mag == narrowSign(f) - 1;
  return (mag & expAll) == expAll && (mag & ((1u << f.manBits) - 1)) != 0;
}
double narrowDecode(const Narrow& f, uint64_t p) {
  if (narrowIsNaN(f, p)) return std::numeric_limits<double>::quiet_NaN();
  const bool neg = (p & narrowSign(f)) != 0;
  const uint32_t e = (static_cast<uint32_t>(p) >> f.manBits) & ((1u << f.expBits) - 1);
  const uint32_t m = static_cast<uint32_t>(p) & ((1u << f.manBits) - 1);
  double v;
  if (f.ieee && e == (1u << f.expBits) - 1)
    v = std::numeric_limits<double>::infinity();
  else if (e == 0)
    v = std::ldexp(m, 1 - narrowBias(f) - f.manBits);
  else
    v = std::ldexp((1u << f.manBits) | m, static_cast<int>(e) - narrowBias(f) - f.manBits);
  return neg ? -v : v;
}
// Round-to-nearest-even of a double to the format, with Weft's overflow and NaN rules.
uint64_t narrowRound(const Narrow& f, double x) {
  if (std::isnan(x)) return f.canonicalNaN;
  const uint32_t sign = std::signbit(x) ? narrowSign(f) : 0;
  const double a = std::fabs(x);
  const uint32_t infPattern = ((1u << f.expBits) - 1) << f.manBits;
  const uint32_t maxPattern = f.ieee ? infPattern - 1 : narrowSign(f) - 2;
  if (std::isinf(a)) return f.ieee ? (sign | infPattern) : f.canonicalNaN;
  const int emin = 1 - narrowBias(f);
  int e;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1)
  const int exponent = std::max(e - 1, emin);
  const double quantum = std::ldexp(1.0, exponent - f.manBits);
  const double units = std::nearbyint(a / quantum);  // ties to even (default rounding mode)
  const double v = units * quantum;
  if (v > narrowDecode(f, maxPattern)) return sign | (f.saturate ? maxPattern : infPattern);
  if (v < std::ldexp(1.0, emin)) return sign | static_cast<uint32_t>(units);  // subnormal or zero
  int ve;
  const double frac = std::frexp(v, &ve);
  const uint32_t mant = static_cast<uint32_t>((frac * 2 - 1) * std::ldexp(1.0, f.manBits));
  return sign | (static_cast<uint32_t>(ve - 1 + narrowBias(f)) << f.manBits) | mant;
}

// ---- Reference element operations, on raw bits (in the low bytes of a uint64).
int64_t signExtend(uint64_t b, size_t size) {
  const int shift = 64 - 8 * static_cast<int>(size);
  return static_cast<int64_t>(b << shift) >> shift;
}

// Max/Min of two non-NaN floating values of any format given their bits and decoded values:
// the larger (smaller) value; for +0 and -0, +0 (-0) whatever the order.
uint64_t floatingPick(BaseOp op, uint64_t a, uint64_t b, double va, double vb) {
  if (va == vb) {
    if (va != 0) return a;
    const bool aNeg = std::signbit(va);
    if (op == BaseOp::kMax) return aNeg ? b : a;
    return aNeg ? a : b;
  }
  const bool aWins = op == BaseOp::kMax ? va > vb : va < vb;
  return aWins ? a : b;
}

uint64_t refOp(const TypeInfo& t, BaseOp op, uint64_t a, uint64_t b) {
  const uint64_t mask = maskOf(t.size);
  switch (t.kind) {
    case Kind::kSigned:
    case Kind::kUnsigned: {
      if (op == BaseOp::kSum) return (a + b) & mask;
      if (op == BaseOp::kProd) return (a * b) & mask;
      bool aLess;
      if (t.kind == Kind::kSigned)
        aLess = signExtend(a, t.size) < signExtend(b, t.size);
      else
        aLess = a < b;
      return (op == BaseOp::kMax) == aLess ? b : a;
    }
    case Kind::kF32: {
      const float fa = f32(a), fb = f32(b);
      if (op == BaseOp::kSum || op == BaseOp::kProd) {
        // Through double: the double result rounds to the float one (53 >= 2*24+2).
        const double r = op == BaseOp::kSum ? double(fa) + double(fb) : double(fa) * double(fb);
        return std::isnan(r) ? kF32NaN : bitsF32(static_cast<float>(r));
      }
      if (std::isnan(fa) || std::isnan(fb)) return kF32NaN;
      return floatingPick(op, a, b, fa, fb);
    }
    case Kind::kF64: {
      const double fa = f64(a), fb = f64(b);
      if (op == BaseOp::kSum || op == BaseOp::kProd) {
        const double r = op == BaseOp::kSum ? fa + fb : fa * fb;
        return std::isnan(r) ? kF64NaN : bitsF64(r);
      }
      if (std::isnan(fa) || std::isnan(fb)) return kF64NaN;
      return floatingPick(op, a, b, fa, fb);
    }
    case Kind::kNarrow: {
      const double va = narrowDecode(t.narrow, a), vb = narrowDecode(t.narrow, b);
      if (op == BaseOp::kSum) return narrowRound(t.narrow, va + vb);
      if (op == BaseOp::kProd) return narrowRound(t.narrow, va * vb);
      if (std::isnan(va) || std::isnan(vb)) return t.narrow.canonicalNaN;
      return floatingPick(op, a, b, va, vb);
    }
  }
  return 0;
}

uint64_t refPre(const TypeInfo& t, uint64_t x, uint64_t scalar) { return refOp(t, BaseOp::kProd, x, scalar); }

uint64_t refPost(const TypeInfo& t, uint64_t x, int divisor) {
  switch (t.kind) {
    case Kind::kSigned: return static_cast<uint64_t>(signExtend(x, t.size) / divisor) & maskOf(t.size);
    case Kind::kUnsigned: return x / static_cast<uint64_t>(divisor);
    case Kind::kF32: {
      const double r = double(f32(x)) / divisor;
      return std::isnan(r) ? kF32NaN : bitsF32(static_cast<float>(r));
    }
    case Kind::kF64: {
      const double r = f64(x) / divisor;
      return std::isnan(r) ? kF64NaN : bitsF64(r);
    }
    case Kind::kNarrow: return narrowRound(t.narrow, narrowDecode(t.narrow, x) / divisor);
  }
  return 0;
}

// The bits of `v` in the type (for scalars and expected values).
uint64_t fromDouble(const TypeInfo& t, double v) {
  switch (t.kind) {
    case Kind::kSigned:
    case Kind::kUnsigned: return static_cast<uint64_t>(static_cast<int64_t>(v)) & maskOf(t.size);
    case Kind::kF32: return bitsF32(static_cast<float>(v));
    case Kind::kF64: return bitsF64(v);
    case Kind::kNarrow: return narrowRound(t.narrow, v);
  }
  return 0;
}

// ---- Buffers of raw elements with guard bytes after the end.
constexpr size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0xa5;

struct Buffer {
  std::vector<unsigned char> bytes;
  size_t size = 0;
  Buffer(size_t count, size_t elemSize) : bytes(count * elemSize + kGuard, kGuardByte), size(elemSize) {}
  uint64_t get(size_t i) const {
    uint64_t v = 0;
    memcpy(&v, bytes.data() + i * size, size);  // little-endian host
    return v;
  }
  void set(size_t i, uint64_t v) { memcpy(bytes.data() + i * size, &v, size); }
  void* data() { return bytes.data(); }
  bool guardIntact(size_t count) const {
    for (size_t i = count * size; i < bytes.size(); ++i)
      if (bytes[i] != kGuardByte) return false;
    return true;
  }
};

// Random element bits with a generous share of the awkward values: zeros of both signs, Inf, NaNs
// with assorted payloads (signalling ones too), subnormals, extremes, and values whose sum or
// product overflows the narrow formats.
uint64_t randomElement(const TypeInfo& t, std::mt19937_64& rng) {
  const uint64_t r = rng();
  const unsigned pick = static_cast<unsigned>(rng() % 100);
  switch (t.kind) {
    case Kind::kSigned:
    case Kind::kUnsigned: {
      if (pick < 10) {
        const uint64_t specials[] = {0, 1, maskOf(t.size), maskOf(t.size) >> 1, (maskOf(t.size) >> 1) + 1, 2};
        return specials[r % 6] & maskOf(t.size);
      }
      if (pick < 50) return static_cast<uint64_t>(static_cast<int64_t>(r % 201) - 100) & maskOf(t.size);
      return r & maskOf(t.size);
    }
    case Kind::kF32: {
      if (pick < 12) {
        const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                     0x7f800001u, 0x7fbfffffu, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu};
        return specials[r % 12];
      }
      if (pick < 70) return bitsF32(static_cast<float>(static_cast<int64_t>(r % 20001) - 10000) / 64.0f);
      return r & 0xffffffffu;
    }
    case Kind::kF64: {
      if (pick < 12) {
        const uint64_t specials[] = {0,
                                     0x8000000000000000ull,
                                     0x7ff0000000000000ull,
                                     0xfff0000000000000ull,
                                     0x7ff8000000000000ull,
                                     0xfff8000000000001ull,
                                     0x7ff0000000000001ull,
                                     1,
                                     0x800fffffffffffffull,
                                     0x7fefffffffffffffull};
        return specials[r % 10];
      }
      if (pick < 70) return bitsF64(static_cast<double>(static_cast<int64_t>(r % 20001) - 10000) / 64.0);
      return r;
    }
    case Kind::kNarrow: {
      if (pick < 50) return r & maskOf(t.size);  // every pattern, NaN and Inf included
      return narrowRound(t.narrow, static_cast<double>(static_cast<int64_t>(r % 2001) - 1000) / 16.0);
    }
  }
  return 0;
}

struct Case {
  ReduceSpec spec;
  unsigned flags;
  bool hasPartial;
  bool hasLocal;
  bool hasDst1;
  enum Alias { kNone, kDst0IsLocal, kDst0IsPartial, kDst1IsLocal } alias;
  size_t count;
};

std::string describe(const TypeInfo& t, const Case& c) {
  return std::string(weft::dataTypeName(t.dtype)) + " op=" + std::to_string(static_cast<int>(c.spec.op)) +
         " preMul=" + std::to_string(c.spec.preMul) + " postDiv=" + std::to_string(c.spec.postDiv) +
         " divisor=" + std::to_string(c.spec.divisor) + " flags=" + std::to_string(c.flags) +
         " partial=" + std::to_string(c.hasPartial) + " local=" + std::to_string(c.hasLocal) +
         " dst1=" + std::to_string(c.hasDst1) + " alias=" + std::to_string(static_cast<int>(c.alias)) +
         " count=" + std::to_string(c.count);
}

// Runs one reduceCopy and compares every element (and the guard bytes) with the reference.
void runCase(const TypeInfo& t, const Case& c, std::mt19937_64& rng) {
  const size_t n = c.count;
  Buffer partial(n, t.size), local(n, t.size), dst0(n, t.size), dst1(n, t.size);
  for (size_t i = 0; i < n; ++i) {
    partial.set(i, randomElement(t, rng));
    local.set(i, randomElement(t, rng));
    dst0.set(i, rng() & maskOf(t.size));
    dst1.set(i, rng() & maskOf(t.size));
  }
  // Expected values from the original inputs.
  const bool pre = c.hasLocal && (c.flags & kApplyPre) && c.spec.preMul;
  const bool post = (c.flags & kApplyPost) && c.spec.postDiv && c.spec.divisor > 1;
  std::vector<uint64_t> want(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t v;
    if (c.hasLocal) {
      uint64_t x = local.get(i);
      if (pre) x = refPre(t, x, c.spec.preMulScalar & maskOf(t.size));
      v = c.hasPartial ? refOp(t, c.spec.op, partial.get(i), x) : x;
    } else {
      v = partial.get(i);
    }
    want[i] = post ? refPost(t, v, c.spec.divisor) : v;
  }
  void* d0 = dst0.data();
  void* d1 = c.hasDst1 ? dst1.data() : nullptr;
  if (c.alias == Case::kDst0IsLocal) d0 = local.data();
  if (c.alias == Case::kDst0IsPartial) d0 = partial.data();
  if (c.alias == Case::kDst1IsLocal) d1 = local.data();
  weft::reduceCopy(c.spec, d0, d1, c.hasPartial ? partial.data() : nullptr, c.hasLocal ? local.data() : nullptr, n,
                   c.flags);

  const Buffer& out0 = c.alias == Case::kDst0IsLocal ? local : c.alias == Case::kDst0IsPartial ? partial : dst0;
  const Buffer& out1 = c.alias == Case::kDst1IsLocal ? local : dst1;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(out0.get(i), want[i]) << describe(t, c) << " dst0 element " << i;
    if (c.hasDst1) {
      ASSERT_EQ(out1.get(i), want[i]) << describe(t, c) << " dst1 element " << i;
    }
  }
  for (const Buffer* b : {&partial, &local, &dst0, &dst1}) ASSERT_TRUE(b->guardIntact(n)) << describe(t, c);
}

// A scalar for the pre-multiply: a few representative values per kind.
uint64_t preScalarFor(const TypeInfo& t, int which) {
  switch (t.kind) {
    case Kind::kSigned:
    case Kind::kUnsigned: return fromDouble(t, which == 0 ? 3.0 : -5.0);
    default: return fromDouble(t, which == 0 ? 0.3 : -1.75);
  }
}

class ReduceCopyTest : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override { weft::reduceUseBaselineLoopsForTesting(std::get<1>(GetParam())); }
  void TearDown() override { weft::reduceUseBaselineLoopsForTesting(false); }
  const TypeInfo& type() const { return kTypes[std::get<0>(GetParam())]; }
};

// Every op x spec (plain, pre-multiply, post-divide, both) x flags x sources x dst1 x aliasing over
// counts 0, 1, 7 and 1023; and the largest count over the two-source, all-flags, dst1 cases (which
// also cross the blocks of the composed path).
TEST_P(ReduceCopyTest, MatchesScalarReference) {
  const TypeInfo& t = type();
  std::mt19937_64 rng(1000 + static_cast<int>(t.dtype));
  for (BaseOp op : {BaseOp::kSum, BaseOp::kProd, BaseOp::kMax, BaseOp::kMin}) {
    for (int specKind = 0; specKind < 4; ++specKind) {
      ReduceSpec spec;
      spec.dtype = t.dtype;
      spec.op = op;
      spec.preMul = (specKind & 1) != 0;
      spec.preMulScalar = preScalarFor(t, static_cast<int>(rng() % 2));
      spec.postDiv = (specKind & 2) != 0;
      spec.divisor = rng() % 2 ? 3 : 7;
      for (unsigned flags = 0; flags < 4; ++flags) {
        for (int sources = 1; sources < 4; ++sources) {
          const bool hasPartial = (sources & 1) != 0, hasLocal = (sources & 2) != 0;
          for (bool hasDst1 : {false, true}) {
            for (Case::Alias alias : {Case::kNone, Case::kDst0IsLocal, Case::kDst0IsPartial, Case::kDst1IsLocal}) {
              if ((alias == Case::kDst0IsLocal || alias == Case::kDst1IsLocal) && !hasLocal) continue;
              if (alias == Case::kDst0IsPartial && !hasPartial) continue;
              if (alias == Case::kDst1IsLocal && !hasDst1) continue;
              for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}}) {
                runCase(t, {spec, flags, hasPartial, hasLocal, hasDst1, alias, count}, rng);
                if (HasFatalFailure()) return;
              }
            }
          }
        }
      }
      runCase(t, {spec, kApplyPre | kApplyPost, true, true, true, Case::kNone, 100003}, rng);
      runCase(t, {spec, kApplyPre | kApplyPost, true, true, false, Case::kDst0IsPartial, 100003}, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// ncclAvg through makeReduceSpec, run the way a ring runs it: the first rank's input enters with the
// pre-multiply, every later rank's input is combined into the running partial in place, and the
// final step applies the post-divide. Float types: sum of (x * round(1/n)) rounded at each step;
// integer types: the wrapped sum divided by n, truncating toward zero.
TEST_P(ReduceCopyTest, AverageAcrossRanks) {
  const TypeInfo& t = type();
  std::mt19937_64 rng(77 + static_cast<int>(t.dtype));
  for (int nranks : {1, 2, 3, 4, 7, 8, 16}) {
    ReduceSpec spec;
    ASSERT_TRUE(weft::makeReduceSpec(t.dtype, ncclAvg, nranks, &spec));
    for (size_t count : {size_t{1}, size_t{7}, size_t{1023}, size_t{100003}}) {
      if (count > 1023 && nranks != 3) continue;  // one long run is enough; keep the suite quick
      std::vector<Buffer> inputs;
      for (int r = 0; r < nranks; ++r) {
        inputs.emplace_back(count, t.size);
        for (size_t i = 0; i < count; ++i) inputs.back().set(i, randomElement(t, rng));
      }
      Buffer acc(count, t.size);
      for (int r = 0; r < nranks; ++r) {
        const unsigned flags = kApplyPre | (r == nranks - 1 ? kApplyPost : 0u);
        weft::reduceCopy(spec, acc.data(), nullptr, r == 0 ? nullptr : acc.data(), inputs[r].data(), count, flags);
      }
      const bool floating = t.kind != Kind::kSigned && t.kind != Kind::kUnsigned;
      const uint64_t scale = fromDouble(t, 1.0 / nranks);
      for (size_t i = 0; i < count; ++i) {
        uint64_t v = 0;
        for (int r = 0; r < nranks; ++r) {
          uint64_t x = inputs[r].get(i);
          if (floating && nranks > 1) x = refPre(t, x, scale);
          v = r == 0 ? x : refOp(t, BaseOp::kSum, v, x);
        }
        if (!floating) v = refPost(t, v, nranks);
        ASSERT_EQ(acc.get(i), v) << weft::dataTypeName(t.dtype) << " nranks " << nranks << " element " << i;
      }
      ASSERT_TRUE(acc.guardIntact(count));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ReduceCopyTest,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(std::size(kTypes))),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<int, bool>>& info) {
                           return std::string(weft::dataTypeName(kTypes[std::get<0>(info.param)].dtype)) +
                                  (std::get<1>(info.param) ? "_baseline" : "_best");
                         });

// ---- Specific values, spelled out.

// Two ranks' values combined in one step, as the last step of a reduction (both flags set).
template <typename T>
std::vector<T> reduce2(ncclDataType_t dtype, ncclRedOp_t op, const std::vector<T>& a, const std::vector<T>& b) {
  ReduceSpec spec;
  EXPECT_TRUE(weft::makeReduceSpec(dtype, op, 2, &spec));
  std::vector<T> out(a.size());
  weft::reduceCopy(spec, out.data(), nullptr, a.data(), b.data(), a.size(), kApplyPre | kApplyPost);
  return out;
}

TEST(Primitives, IntegerWraparound) {
  EXPECT_EQ(reduce2<int8_t>(ncclInt8, ncclSum, {127, -128}, {1, -1}), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(reduce2<uint8_t>(ncclUint8, ncclSum, {255}, {1}), (std::vector<uint8_t>{0}));
  EXPECT_EQ(reduce2<uint8_t>(ncclUint8, ncclProd, {16}, {17}), (std::vector<uint8_t>{16}));
  EXPECT_EQ(reduce2<int32_t>(ncclInt32, ncclSum, {INT32_MAX}, {1}), (std::vector<int32_t>{INT32_MIN}));
  EXPECT_EQ(reduce2<int32_t>(ncclInt32, ncclProd, {65536}, {65536}), (std::vector<int32_t>{0}));
  EXPECT_EQ(reduce2<int64_t>(ncclInt64, ncclSum, {INT64_MAX}, {1}), (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(reduce2<int64_t>(ncclInt64, ncclProd, {INT64_MIN}, {-1}), (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(reduce2<uint64_t>(ncclUint64, ncclSum, {~0ull}, {2}), (std::vector<uint64_t>{1}));
  EXPECT_EQ(reduce2<int8_t>(ncclInt8, ncclMax, {-1, 5}, {3, -7}), (std::vector<int8_t>{3, 5}));
  EXPECT_EQ(reduce2<uint8_t>(ncclUint8, ncclMin, {200, 5}, {3, 255}), (std::vector<uint8_t>{3, 5}));
}

TEST(Primitives, IntegerAverageTruncatesTowardZero) {
  // The sums are -7, 7, and 127 + 1 wrapped to -128.
  EXPECT_EQ(reduce2<int32_t>(ncclInt32, ncclAvg, {-3, 3}, {-4, 4}), (std::vector<int32_t>{-3, 3}));
  ReduceSpec spec;
  ASSERT_TRUE(weft::makeReduceSpec(ncclInt8, ncclAvg, 2, &spec));
  int8_t a[] = {127}, b[] = {1}, out[1];
  weft::reduceCopy(spec, out, nullptr, a, b, 1, kApplyPost);
  EXPECT_EQ(out[0], -64);
  ASSERT_TRUE(weft::makeReduceSpec(ncclUint32, ncclAvg, 3, &spec));
  uint32_t c[] = {0xffffffffu}, d[] = {2}, o[1];
  weft::reduceCopy(spec, o, nullptr, c, d, 1, kApplyPost);
  EXPECT_EQ(o[0], 0u);  // wrapped to 1, then 1 / 3
}

TEST(Primitives, FloatSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nanA = f32(0x7fc00001u), nanB = f32(0xffc12345u);
  auto bits = [](const std::vector<float>& v) {
    std::vector<uint64_t> r;
    for (float f : v) r.push_back(bitsF32(f));
    return r;
  };
  // Sum: Inf - Inf and any NaN give the canonical NaN, whichever payload came in.
  EXPECT_EQ(bits(reduce2<float>(ncclFloat32, ncclSum, {inf, nanA, 1.0f, nanA}, {-inf, 2.0f, nanB, nanB})),
            (std::vector<uint64_t>{kF32NaN, kF32NaN, kF32NaN, kF32NaN}));
  EXPECT_EQ(bits(reduce2<float>(ncclFloat32, ncclSum, {inf, -0.0f}, {1.0f, -0.0f})),
            (std::vector<uint64_t>{bitsF32(inf), bitsF32(-0.0f)}));
  EXPECT_EQ(bits(reduce2<float>(ncclFloat32, ncclProd, {0.0f, 3.0f}, {inf, -2.0f})),
            (std::vector<uint64_t>{kF32NaN, bitsF32(-6.0f)}));
  // Max/Min propagate NaN and are commutative on signed zeros.
  EXPECT_EQ(bits(reduce2<float>(ncclFloat32, ncclMax, {nanA, 1.0f, -0.0f, 0.0f, -inf},
                                {1.0f, nanB, 0.0f, -0.0f, -5.0f})),
            (std::vector<uint64_t>{kF32NaN, kF32NaN, bitsF32(0.0f), bitsF32(0.0f), bitsF32(-5.0f)}));
  EXPECT_EQ(bits(reduce2<float>(ncclFloat32, ncclMin, {-0.0f, 0.0f, inf}, {0.0f, -0.0f, 7.0f})),
            (std::vector<uint64_t>{bitsF32(-0.0f), bitsF32(-0.0f), bitsF32(7.0f)}));
  // Double the same.
  ReduceSpec spec;
  ASSERT_TRUE(weft::makeReduceSpec(ncclFloat64, ncclMax, 2, &spec));
  double x[] = {std::nan(""), -0.0}, y[] = {1.0, 0.0}, out[2];
  weft::reduceCopy(spec, out, nullptr, x, y, 2, 0);
  EXPECT_EQ(bitsF64(out[0]), kF64NaN);
  EXPECT_EQ(bitsF64(out[1]), bitsF64(0.0));
}

TEST(Primitives, NarrowFormatOverflowAndNaN) {
  // float16: 65504 + 65504 overflows to Inf; bfloat16 NaN is canonical.
  EXPECT_EQ(reduce2<uint16_t>(ncclFloat16, ncclSum, {0x7bff, 0x3c00}, {0x7bff, 0x7e01}),
            (std::vector<uint16_t>{0x7c00, 0x7fff}));
  EXPECT_EQ(reduce2<uint16_t>(ncclBfloat16, ncclSum, {0xffc1, 0x3f80}, {0x3f80, 0x3f80}),
            (std::vector<uint16_t>{0x7fff, 0x4000}));
  // e4m3: 448 + 448 saturates to 448; -448 * 2 to -448; NaN stays NaN.
  EXPECT_EQ(reduce2<uint8_t>(ncclFloat8e4m3, ncclSum, {0x7e, 0x7f}, {0x7e, 0x38}), (std::vector<uint8_t>{0x7e, 0x7f}));
  EXPECT_EQ(reduce2<uint8_t>(ncclFloat8e4m3, ncclProd, {0xfe}, {0x40}), (std::vector<uint8_t>{0xfe}));
  // e5m2: 57344 + 57344 overflows to Inf.
  EXPECT_EQ(reduce2<uint8_t>(ncclFloat8e5m2, ncclSum, {0x7b, 0xfb}, {0x7b, 0xfb}), (std::vector<uint8_t>{0x7c, 0xfc}));
  // Max on narrow formats: +0 beats -0 in either order, NaN propagates.
  EXPECT_EQ(reduce2<uint16_t>(ncclFloat16, ncclMax, {0x8000, 0x0000, 0x7c01}, {0x0000, 0x8000, 0x3c00}),
            (std::vector<uint16_t>{0x0000, 0x0000, 0x7fff}));
  EXPECT_EQ(reduce2<uint8_t>(ncclFloat8e4m3, ncclMin, {0x80, 0xff}, {0x00, 0x38}), (std::vector<uint8_t>{0x80, 0x7f}));
}

TEST(Primitives, MakeReduceSpec) {
  ReduceSpec s;
  ASSERT_TRUE(weft::makeReduceSpec(ncclFloat32, ncclSum, 4, &s));
  EXPECT_EQ(s.op, BaseOp::kSum);
  EXPECT_FALSE(s.preMul);
  EXPECT_FALSE(s.postDiv);
  ASSERT_TRUE(weft::makeReduceSpec(ncclInt8, ncclProd, 4, &s));
  EXPECT_EQ(s.op, BaseOp::kProd);
  ASSERT_TRUE(weft::makeReduceSpec(ncclUint64, ncclMax, 4, &s));
  EXPECT_EQ(s.op, BaseOp::kMax);
  ASSERT_TRUE(weft::makeReduceSpec(ncclBfloat16, ncclMin, 4, &s));
  EXPECT_EQ(s.op, BaseOp::kMin);

  ASSERT_TRUE(weft::makeReduceSpec(ncclFloat32, ncclAvg, 4, &s));
  EXPECT_EQ(s.op, BaseOp::kSum);
  EXPECT_TRUE(s.preMul);
  EXPECT_FALSE(s.postDiv);
  EXPECT_EQ(s.preMulScalar, bitsF32(0.25f));
  ASSERT_TRUE(weft::makeReduceSpec(ncclFloat64, ncclAvg, 3, &s));
  EXPECT_EQ(s.preMulScalar, bitsF64(1.0 / 3.0));
  ASSERT_TRUE(weft::makeReduceSpec(ncclFloat16, ncclAvg, 3, &s));
  EXPECT_EQ(s.preMulScalar, 0x3555u);  // 1/3 in float16
  ASSERT_TRUE(weft::makeReduceSpec(ncclBfloat16, ncclAvg, 3, &s));
  EXPECT_EQ(s.preMulScalar, 0x3eabu);
  ASSERT_TRUE(weft::makeReduceSpec(ncclFloat8e4m3, ncclAvg, 3, &s));
  EXPECT_EQ(s.preMulScalar, 0x2bu);  // 0.34375, the nearest e4m3 to 1/3
  ASSERT_TRUE(weft::makeReduceSpec(ncclFloat8e5m2, ncclAvg, 4, &s));
  EXPECT_EQ(s.preMulScalar, 0x34u);  // 0.25

  ASSERT_TRUE(weft::makeReduceSpec(ncclInt32, ncclAvg, 5, &s));
  EXPECT_EQ(s.op, BaseOp::kSum);
  EXPECT_FALSE(s.preMul);
  EXPECT_TRUE(s.postDiv);
  EXPECT_EQ(s.divisor, 5);

  // One rank: the average is the value itself; nothing to apply.
  ASSERT_TRUE(weft::makeReduceSpec(ncclFloat32, ncclAvg, 1, &s));
  EXPECT_FALSE(s.preMul);
  ASSERT_TRUE(weft::makeReduceSpec(ncclInt32, ncclAvg, 1, &s));
  EXPECT_FALSE(s.postDiv);

  EXPECT_FALSE(weft::makeReduceSpec(ncclFloat32, ncclAvg, 0, &s));
  EXPECT_FALSE(weft::makeReduceSpec(ncclFloat32, ncclNumOps, 2, &s));
  EXPECT_FALSE(weft::makeReduceSpec(ncclFloat32, static_cast<ncclRedOp_t>(-1), 2, &s));
  EXPECT_FALSE(weft::makeReduceSpec(ncclNumTypes, ncclSum, 2, &s));
  EXPECT_FALSE(weft::makeReduceSpec(static_cast<ncclDataType_t>(-1), ncclSum, 2, &s));
  EXPECT_FALSE(weft::makeReduceSpec(ncclFloat32, ncclSum, 2, nullptr));
}

// ncclPreMulSum: the user's scalar in the datatype's bits, applied to each rank's own input.
TEST(Primitives, PreMulSum) {
  ReduceSpec spec;
  spec.dtype = ncclFloat32;
  spec.op = BaseOp::kSum;
  spec.preMul = true;
  spec.preMulScalar = bitsF32(2.5f);
  float partial[] = {1.0f, -1.0f}, local[] = {2.0f, 4.0f}, out[2];
  weft::reduceCopy(spec, out, nullptr, partial, local, 2, kApplyPre);
  EXPECT_EQ(out[0], 6.0f);
  EXPECT_EQ(out[1], 9.0f);
  weft::reduceCopy(spec, out, nullptr, partial, local, 2, 0);  // without the flag: no pre-multiply
  EXPECT_EQ(out[0], 3.0f);
  spec.dtype = ncclInt32;
  spec.preMulScalar = static_cast<uint32_t>(-3);
  int32_t ip[] = {10}, il[] = {7}, io[1];
  weft::reduceCopy(spec, io, nullptr, ip, il, 1, kApplyPre);
  EXPECT_EQ(io[0], -11);
  // The product is rounded before the sum (no fused multiply-add): 3 * (1/3 in float) rounds to
  // exactly 1, so -1 + it is 0; a fused operation would leave the product's 2^-25 residue.
  spec.dtype = ncclFloat32;
  spec.preMulScalar = bitsF32(1.0f / 3.0f);
  float p2[] = {-1.0f}, l2[] = {3.0f}, o2[1];
  weft::reduceCopy(spec, o2, nullptr, p2, l2, 1, kApplyPre);
  EXPECT_EQ(bitsF32(o2[0]), bitsF32(0.0f));
}

TEST(Primitives, PlainCopiesAndNoOps) {
  ReduceSpec spec;
  ASSERT_TRUE(weft::makeReduceSpec(ncclFloat64, ncclSum, 2, &spec));
  double src[] = {1.5, std::nan(""), -0.0}, d0[3] = {}, d1[3] = {};
  const uint64_t nanBits = bitsF64(src[1]);
  weft::reduceCopy(spec, d0, d1, nullptr, src, 3, kApplyPre | kApplyPost);  // nothing to apply: copy
  EXPECT_EQ(bitsF64(d0[1]), nanBits);                                       // a copy keeps the payload
  EXPECT_EQ(bitsF64(d1[2]), bitsF64(-0.0));
  weft::reduceCopy(spec, src, nullptr, nullptr, src, 3, 0);  // in place: nothing to do
  EXPECT_EQ(src[0], 1.5);
  double untouched[] = {42.0};
  weft::reduceCopy(spec, untouched, nullptr, src, src, 0, 0);  // count 0
  EXPECT_EQ(untouched[0], 42.0);
}

TEST(Primitives, DataTypeSizeAndName) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  const char* names[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
                         "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  for (int d = 0; d < ncclNumTypes; ++d) {
    EXPECT_EQ(weft::dataTypeSize(static_cast<ncclDataType_t>(d)), sizes[d]);
    EXPECT_STREQ(weft::dataTypeName(static_cast<ncclDataType_t>(d)), names[d]);
  }
  EXPECT_EQ(weft::dataTypeSize(ncclNumTypes), 0u);
  EXPECT_EQ(weft::dataTypeSize(static_cast<ncclDataType_t>(-1)), 0u);
  EXPECT_STREQ(weft::dataTypeName(ncclNumTypes), "invalid");
}

}  // namespace
