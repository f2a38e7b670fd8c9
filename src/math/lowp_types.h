// Weft's own software types for the 16- and 8-bit floating-point formats it reduces: float16
// (IEEE binary16), bfloat16, float8 e4m3 (OCP "e4m3fn") and float8 e5m2 (OCP). Each holds raw bits;
// arithmetic is done in float and rounded back once per operation (reduce_ops.h).
//
// The conversions are written out in portable code (integer operations plus exact or
// round-to-nearest float additions): no FP16/BF16/FP8 hardware instructions and no lookup tables.
// That is what lets a host rank, an NVIDIA GPU and an AMD GPU produce the same bits from the same
// inputs: the result never depends on which converter a machine happens to have. Flush-to-zero
// and denormals-are-zero modes do not affect them.
//
// Rules (all conversions from float round to nearest, ties to even, with correct subnormals):
//   float16, bfloat16: finite values too large become +-Inf; Inf stays Inf.
//   float8 e5m2:       as above (IEEE-like: overflow becomes +-Inf).
//   float8 e4m3:       the format has no Inf. Finite values too large saturate to +-448 (the
//                      "satfinite" behaviour of common fp8 converters: an overflowing sum should
//                      give the largest value, not poison the tensor); +-Inf becomes NaN, since an
//                      infinity that was already there is not a rounding artefact.
//   NaN:               any NaN input becomes the format's canonical NaN, positive with every
//                      mantissa bit set (0x7fff, 0x7fff, 0x7f, 0x7f). These are the patterns NVIDIA's
//                      converters produce, so a Weft result does not depend on NaN payloads.
// Conversions to float are exact; a NaN stays a NaN (its payload is not part of the contract).
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "math/port.h"

namespace weft {

// ---- Bit casts usable in host and device code. memcpy between locals compiles to a register move
// under g++, nvcc and hipcc alike (std::bit_cast is not callable from nvcc device code).
WEFT_HOST_DEVICE WEFT_INLINE uint32_t floatToBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}
WEFT_HOST_DEVICE WEFT_INLINE float bitsToFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}
WEFT_HOST_DEVICE WEFT_INLINE uint64_t doubleToBits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
  return u;
}
WEFT_HOST_DEVICE WEFT_INLINE double bitsToDouble(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof(d));
  return d;
}

// Canonical NaN of each format (see the rules above). float and double use the same shape, which
// is also what NVIDIA GPUs return from arithmetic on NaN.
inline constexpr uint32_t kFloatCanonicalNaN = 0x7fffffffu;
inline constexpr uint64_t kDoubleCanonicalNaN = 0x7fffffffffffffffull;
inline constexpr uint16_t kFloat16CanonicalNaN = 0x7fff;
inline constexpr uint16_t kBFloat16CanonicalNaN = 0x7fff;
inline constexpr uint8_t kFloat8E4M3CanonicalNaN = 0x7f;
inline constexpr uint8_t kFloat8E5M2CanonicalNaN = 0x7f;

namespace lowp_detail {

// cond ? a : b, written with masks. GCC (under its default -ftrapping-math) will not turn a
// conditional that feeds on a floating-point operation into a vector select, because it first
// sinks the operation into the branch that uses it; with masks there is no branch to sink into,
// so the loops around these conversions vectorise. GPUs compile it to one logic instruction.
WEFT_HOST_DEVICE WEFT_INLINE uint32_t selectBits(bool cond, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(cond);
  return (a & mask) | (b & ~mask);
}

// Rounds the magnitude `a` (float bits without the sign, finite) to a narrower binary format with
// kExpBits exponent bits, kManBits mantissa bits and the IEEE bias, ties to even. Returns the
// target's magnitude bits; a value past the largest finite number comes back as a pattern above
// the largest finite one, and the caller picks Inf or saturation.
//
// Normal results: re-bias the exponent in place and drop the extra mantissa bits with an integer
// round-to-nearest-even; a carry out of the mantissa moves into the exponent, which is exactly the
// right encoding. Subnormal results: adding a power of two whose float ulp equals the target's
// smallest subnormal makes the float adder round the value at that position (exactly once, ties
// to even); the low bits of the sum are then the target's subnormal mantissa, and a round-up to the
// smallest normal comes out as its encoding. That sum is a normal float whatever the input, so
// flush-to-zero and denormals-are-zero modes cannot change it; it relies only on round-to-nearest,
// the mode every Weft thread and kernel computes in. Both results are computed and one selected:
// no data-dependent branch and no per-lane variable shift, so the host compiler vectorises this
// with the baseline SSE2 instruction set.
template <int kExpBits, int kManBits>
WEFT_HOST_DEVICE WEFT_INLINE uint32_t roundMagnitude(uint32_t a) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr int kEmin = 1 - kBias;                                           // exponent of the smallest normal number
  constexpr uint32_t kMinNormal = static_cast<uint32_t>(kEmin + 127) << 23;  // as float bits
  constexpr int kDrop = 23 - kManBits;                                       // float mantissa bits that do not fit
  // 2^(kEmin - kManBits + 23): its ulp in float is the target's smallest subnormal.
  constexpr uint32_t kSubnormalMagic = static_cast<uint32_t>(kEmin - kManBits + 23 + 127) << 23;

  const uint32_t rebased = a - (static_cast<uint32_t>(127 - kBias) << 23);
  const uint32_t normal = (rebased + ((1u << (kDrop - 1)) - 1u) + ((rebased >> kDrop) & 1u)) >> kDrop;
  const uint32_t sub = floatToBits(bitsToFloat(a) + bitsToFloat(kSubnormalMagic)) - kSubnormalMagic;
  return selectBits(a >= kMinNormal, normal, sub);
}

}  // namespace lowp_detail

// ---- float16 (IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits, bias 15).
WEFT_HOST_DEVICE WEFT_INLINE uint16_t float16BitsFromFloat(float f) {
  const uint32_t x = floatToBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  uint32_t m = lowp_detail::roundMagnitude<5, 10>(a);
  m = m > 0x7c00u ? 0x7c00u : m;  // overflow (and Inf itself) becomes Inf
  return static_cast<uint16_t>(lowp_detail::selectBits(a > 0x7f800000u, kFloat16CanonicalNaN, sign | m));
}

// Decoding, like encoding, computes every case and selects one (no branches, vectorisable). A
// subnormal is its mantissa times the smallest subnormal: an exact product that is a normal float,
// so no floating-point mode can change it.
WEFT_HOST_DEVICE WEFT_INLINE float floatFromFloat16Bits(uint16_t h) {
  const uint32_t v = h;
  const uint32_t sign = (v & 0x8000u) << 16;
  const uint32_t exp = (v >> 10) & 0x1fu;
  const uint32_t mag = (v & 0x7fffu) << 13;
  const uint32_t normal = mag + (static_cast<uint32_t>(127 - 15) << 23);
  const uint32_t special = mag | 0x7f800000u;  // Inf, or NaN keeping its payload
  const uint32_t sub = floatToBits(static_cast<float>(static_cast<int32_t>(v & 0x3ffu)) * 0x1p-24f);
  return bitsToFloat(sign |
                     lowp_detail::selectBits(exp == 0x1fu, special, lowp_detail::selectBits(exp == 0, sub, normal)));
}

// ---- bfloat16 (1 sign, 8 exponent, 7 mantissa bits: the top half of a float).
WEFT_HOST_DEVICE WEFT_INLINE uint16_t bfloat16BitsFromFloat(float f) {
  const uint32_t x = floatToBits(f);
  // Same exponent range as float, so one rounding add covers normals, subnormals and overflow
  // (a carry out of the largest finite value lands exactly on Inf).
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const bool nan = (x & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(lowp_detail::selectBits(nan, kBFloat16CanonicalNaN, rounded));
}

WEFT_HOST_DEVICE WEFT_INLINE float floatFromBFloat16Bits(uint16_t b) {
  return bitsToFloat(static_cast<uint32_t>(b) << 16);
}

// ---- float8 e4m3 (OCP e4m3fn: 1 sign, 4 exponent, 3 mantissa bits, bias 7, no Inf,
// S.1111.111 is NaN, largest finite 448 = S.1111.110).
// gfx940-gfx942 (MI300) convert to FP8 in hardware, but to e4m3 "FNUZ": exponent bias 8, no
// negative zero, and S.0000.000 as NaN instead of S.1111.111, so that every pattern below 0x7f has
// half its value in Weft's (OCP) format. The OCP pattern of x is therefore the FNUZ pattern of x/2,
// taking the sign from x (FNUZ rounds a negative to +0) and saturating at 0x7e (FNUZ's 0x7f, 240,
// is OCP's NaN). Finite inputs only; `fnuz` is the conversion (round to nearest even), passed in
// so that the unit tests can check this mapping with a reference FNUZ encoder on the host.
template <typename FnuzEncode>
WEFT_HOST_DEVICE WEFT_INLINE uint32_t float8e4m3FiniteBitsViaFnuz(float f, FnuzEncode fnuz) {
  float half = f * 0.5f;  // exact unless f is a float subnormal, which is 0 in FP8 either way
  half = half > 240.0f ? 240.0f : (half < -240.0f ? -240.0f : half);  // no overflow to rely on
  uint32_t m = fnuz(half) & 0x7fu;
  m = m > 0x7eu ? 0x7eu : m;
  return ((floatToBits(f) >> 24) & 0x80u) | m;
}

WEFT_HOST_DEVICE WEFT_INLINE uint8_t float8e4m3BitsFromFloat(float f) {
  const uint32_t x = floatToBits(f);
  const uint32_t a = x & 0x7fffffffu;
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
  // The hardware FNUZ conversion of the pair's first operand lands in the low byte.
  const uint32_t finite = float8e4m3FiniteBitsViaFnuz(f, [](float v) {
    return static_cast<uint32_t>(__builtin_amdgcn_cvt_pk_fp8_f32(v, v, 0, false));
  });
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  // sm_89 and later convert in hardware: round to nearest even, finite overflow saturated to +-448,
  // which is this function's software path bit for bit for every finite input (the unit tests
  // compare that path with the CUDA headers' reference for the instruction). Only Inf differs
  // (the instruction saturates it), so Inf and NaN keep the canonical NaN below. The low byte of
  // the pair is the second operand.
  uint16_t pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  const uint32_t finite = pair & 0xffu;
#else
  const uint32_t sign = (x >> 24) & 0x80u;
  uint32_t m = lowp_detail::roundMagnitude<4, 3>(a);
  m = m > 0x7eu ? 0x7eu : m;  // saturate finite overflow to 448
  const uint32_t finite = sign | m;
#endif
  // NaN and Inf (which the format cannot hold) become NaN.
  return static_cast<uint8_t>(lowp_detail::selectBits(a >= 0x7f800000u, kFloat8E4M3CanonicalNaN, finite));
}

WEFT_HOST_DEVICE WEFT_INLINE float floatFromFloat8e4m3Bits(uint8_t b) {
  const uint32_t v = b;
  const uint32_t sign = (v & 0x80u) << 24;
  const uint32_t exp = (v >> 3) & 0xfu;
  const uint32_t normal = ((v & 0x7fu) << 20) + (static_cast<uint32_t>(127 - 7) << 23);
  const uint32_t sub = floatToBits(static_cast<float>(static_cast<int32_t>(v & 0x7u)) * 0x1p-9f);
  const uint32_t bits = sign | lowp_detail::selectBits(exp == 0, sub, normal);
  return bitsToFloat(lowp_detail::selectBits((v & 0x7fu) == 0x7fu, kFloatCanonicalNaN, bits));
}

// ---- float8 e5m2 (OCP: 1 sign, 5 exponent, 2 mantissa bits, bias 15, IEEE Inf/NaN, largest
// finite 57344). Its layout is the top byte of a float16.
WEFT_HOST_DEVICE WEFT_INLINE uint8_t float8e5m2BitsFromFloat(float f) {
  const uint32_t x = floatToBits(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t a = x & 0x7fffffffu;
  uint32_t m = lowp_detail::roundMagnitude<5, 2>(a);
  m = m > 0x7cu ? 0x7cu : m;  // overflow (and Inf itself) becomes Inf
  return static_cast<uint8_t>(lowp_detail::selectBits(a > 0x7f800000u, kFloat8E5M2CanonicalNaN, sign | m));
}

WEFT_HOST_DEVICE WEFT_INLINE float floatFromFloat8e5m2Bits(uint8_t b) {
  // Exact: every e5m2 value is a float16 value with the low mantissa byte zero.
  return floatFromFloat16Bits(static_cast<uint16_t>(static_cast<uint32_t>(b) << 8));
}

// ---- The storage types. Trivially copyable, raw bits only, so that buffers of them can be
// memcpy'd, sent over the wire and reinterpreted from user memory. Construction from float
// rounds as above; conversion to float is exact.
#define WEFT_LOWP_TYPE(Name, Storage, fromFloatFn, toFloatFn, nanBits)                   \
  struct Name {                                                                          \
    using Bits = Storage;                                                                \
    static constexpr Storage kCanonicalNaN = nanBits;                                    \
    Storage bits;                                                                        \
    Name() = default;                                                                    \
    WEFT_HOST_DEVICE WEFT_INLINE explicit Name(float f) : bits(fromFloatFn(f)) {}        \
    WEFT_HOST_DEVICE WEFT_INLINE static Name fromBits(Storage b) {                       \
      Name v;                                                                            \
      v.bits = b;                                                                        \
      return v;                                                                          \
    }                                                                                    \
    WEFT_HOST_DEVICE WEFT_INLINE float toFloat() const { return toFloatFn(bits); }       \
    WEFT_HOST_DEVICE WEFT_INLINE explicit operator float() const { return toFloat(); }   \
  };                                                                                     \
  static_assert(sizeof(Name) == sizeof(Storage) && std::is_trivially_copyable_v<Name> && \
                std::is_trivially_default_constructible_v<Name>)

WEFT_LOWP_TYPE(Float16, uint16_t, float16BitsFromFloat, floatFromFloat16Bits, kFloat16CanonicalNaN);
WEFT_LOWP_TYPE(BFloat16, uint16_t, bfloat16BitsFromFloat, floatFromBFloat16Bits, kBFloat16CanonicalNaN);
WEFT_LOWP_TYPE(Float8E4M3, uint8_t, float8e4m3BitsFromFloat, floatFromFloat8e4m3Bits, kFloat8E4M3CanonicalNaN);
WEFT_LOWP_TYPE(Float8E5M2, uint8_t, float8e5m2BitsFromFloat, floatFromFloat8e5m2Bits, kFloat8E5M2CanonicalNaN);
#undef WEFT_LOWP_TYPE

// True for the four software formats above (their arithmetic goes through float).
template <typename T>
inline constexpr bool kIsLowPrecision = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16> ||
                                        std::is_same_v<T, Float8E4M3> || std::is_same_v<T, Float8E5M2>;

}  // namespace weft
