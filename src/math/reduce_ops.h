// The element operations of Weft's reductions, shared by the host executor and the GPU kernels.
// Every rank must produce the same bits from the same operands, on any of the three compilers, so
// each operation here is defined down to the bit, including the corner cases:
//
//   Integers   Sum and Prod wrap around modulo 2^bits (computed in the unsigned type, so a signed
//              overflow is not undefined behaviour). Max/Min compare as usual.
//   float,     Sum and Prod are the IEEE operation in the type itself, except that a NaN result is
//   double     replaced by the canonical NaN (lowp_types.h). IEEE leaves the payload of a NaN result
//              open (x86 keeps an operand's payload, NVIDIA GPUs return the canonical pattern), and
//              canonicalising makes host and GPU ranks agree whatever NaNs the inputs carried.
//   float16,   the operands are widened to float (exactly), the operation is done once in float and
//   bfloat16,  rounded back once. float's 24 bits are at least 2p+2 for each of these formats'
//   fp8        p-bit significands, so this double rounding equals a single correctly rounded
//              operation in the narrow format: what a native instruction (__hadd, __hmul) gives.
//   complex    (Complex<float>, Complex<double>) Sum adds the parts separately, by the float/double
//              rule. Prod is (a+bi)(c+di) = (ac - bd) + (ad + bc)i: each of the four products is
//              FuncProd (rounded on its own, never fused into the add that follows), then FuncSum
//              of the pairs, the imaginary part as ad + bc in that order. No Annex G recovery of
//              infinities: a NaN part stays the canonical NaN. Max/Min do not exist for complex
//              types (instantiating them fails to compile; the API refuses the ops).
//   Max, Min   on floating types NaN-propagating: if either operand is NaN the result is the
//              canonical NaN (fmax/fmin would drop the NaN, hiding a bad value on some ranks and
//              not others). They are also exactly commutative: max(-0, +0) = +0 and
//              min(-0, +0) = -0 whichever operand comes first, so the order in which an algorithm
//              combines ranks cannot change the bits. Otherwise the result is one of the operands,
//              bit for bit.
//
// The result of arithmetic depends on the floating-point environment of the thread running it
// (rounding mode, flush-to-zero); Weft's host threads run with the default (round to nearest, no
// flushing), which is also what the GPU kernels use.
#pragma once
#include <cstdint>
#include <type_traits>

#include "math/complex_types.h"
#include "math/lowp_types.h"
#include "math/port.h"

namespace weft {

namespace ops_detail {

template <typename T>
inline constexpr bool kIsInteger = std::is_integral_v<T>;
template <typename T>
inline constexpr bool kIsIeee = std::is_same_v<T, float> || std::is_same_v<T, double>;

// Bits of float/double with the canonical NaN substituted for any NaN.
WEFT_HOST_DEVICE WEFT_INLINE float canonicalize(float v) { return v != v ? bitsToFloat(kFloatCanonicalNaN) : v; }
WEFT_HOST_DEVICE WEFT_INLINE double canonicalize(double v) { return v != v ? bitsToDouble(kDoubleCanonicalNaN) : v; }

// What Max/Min need to know about a floating format, on its raw bits.
template <typename T>
struct FloatFormat;
template <>
struct FloatFormat<float> {
  using Bits = uint32_t;
  using Key = int32_t;
  static constexpr Bits kMagnitude = 0x7fffffffu;
  WEFT_HOST_DEVICE WEFT_INLINE static Bits bits(float v) { return floatToBits(v); }
  WEFT_HOST_DEVICE WEFT_INLINE static float make(Bits b) { return bitsToFloat(b); }
  WEFT_HOST_DEVICE WEFT_INLINE static bool eitherNaN(float a, float b) { return a != a || b != b; }
  static constexpr Bits kNaN = kFloatCanonicalNaN;
};
template <>
struct FloatFormat<double> {
  using Bits = uint64_t;
  using Key = int64_t;
  static constexpr Bits kMagnitude = 0x7fffffffffffffffull;
  WEFT_HOST_DEVICE WEFT_INLINE static Bits bits(double v) { return doubleToBits(v); }
  WEFT_HOST_DEVICE WEFT_INLINE static double make(Bits b) { return bitsToDouble(b); }
  WEFT_HOST_DEVICE WEFT_INLINE static bool eitherNaN(double a, double b) { return a != a || b != b; }
  static constexpr Bits kNaN = kDoubleCanonicalNaN;
};
// The narrow formats are tested on their bits: no conversion needed. `kNaNAbove`: magnitudes
// above it are NaN (for e4m3 only S.1111.111 is).
template <typename T, uint32_t kMag, uint32_t kNaNAbove>
struct NarrowFormat {
  using Bits = typename T::Bits;
  using Key = int32_t;
  static constexpr Bits kMagnitude = kMag;
  WEFT_HOST_DEVICE WEFT_INLINE static Bits bits(T v) { return v.bits; }
  WEFT_HOST_DEVICE WEFT_INLINE static T make(Bits b) { return T::fromBits(b); }
  WEFT_HOST_DEVICE WEFT_INLINE static bool eitherNaN(T a, T b) {
    return (a.bits & kMag) > kNaNAbove || (b.bits & kMag) > kNaNAbove;
  }
  static constexpr Bits kNaN = T::kCanonicalNaN;
};
template <>
struct FloatFormat<Float16> : NarrowFormat<Float16, 0x7fffu, 0x7c00u> {};
template <>
struct FloatFormat<BFloat16> : NarrowFormat<BFloat16, 0x7fffu, 0x7f80u> {};
template <>
struct FloatFormat<Float8E4M3> : NarrowFormat<Float8E4M3, 0x7fu, 0x7eu> {};
template <>
struct FloatFormat<Float8E5M2> : NarrowFormat<Float8E5M2, 0x7fu, 0x7cu> {};

// Max/Min of floating operands per the rules at the top of this file, on raw bits. IEEE formats
// order their non-NaN sign-magnitude patterns by value, so flipping the magnitude bits of
// negative patterns gives a signed integer key in the same order, with -0 (key -1) just below
// +0 (key 0). Different patterns have different keys, so the larger key picks the same operand
// whichever order the two come in, and the narrow formats return an operand untouched instead
// of a re-rounded copy. Integer compares also vectorise better than a chain of float compares.
template <typename T, bool kMax>
WEFT_HOST_DEVICE WEFT_INLINE T floatingMinMax(T a, T b) {
  using F = FloatFormat<T>;
  using Bits = typename F::Bits;
  using Key = typename F::Key;
  const Bits ba = F::bits(a);
  const Bits bb = F::bits(b);
  // Sign-extend to Key, then flip the magnitude of negatives (an arithmetic shift gives the mask).
  // For the 8-bit formats the sign extension is from signed char, which is what is wanted here.
  // NOLINTBEGIN(bugprone-signed-char-misuse)
  const Key sa = static_cast<Key>(static_cast<std::make_signed_t<Bits>>(ba));
  const Key sb = static_cast<Key>(static_cast<std::make_signed_t<Bits>>(bb));
  // NOLINTEND(bugprone-signed-char-misuse)
  constexpr int kTop = static_cast<int>(sizeof(Key) * 8 - 1);
  const Key ka = sa ^ ((sa >> kTop) & static_cast<Key>(F::kMagnitude));
  const Key kb = sb ^ ((sb >> kTop) & static_cast<Key>(F::kMagnitude));
  const Bits r = (kMax ? ka > kb : ka < kb) ? ba : bb;
  return F::make(F::eitherNaN(a, b) ? F::kNaN : r);
}

}  // namespace ops_detail

template <typename T>
struct FuncSum {
  WEFT_HOST_DEVICE WEFT_INLINE T operator()(T a, T b) const {
    if constexpr (ops_detail::kIsInteger<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else if constexpr (ops_detail::kIsIeee<T>) {
      return ops_detail::canonicalize(a + b);
    } else if constexpr (kIsComplex<T>) {
      const FuncSum<typename T::Part> add;
      return T{add(a.re, b.re), add(a.im, b.im)};
    } else {
      return T(a.toFloat() + b.toFloat());
    }
  }
};

template <typename T>
struct FuncProd {
  WEFT_HOST_DEVICE WEFT_INLINE T operator()(T a, T b) const {
    if constexpr (ops_detail::kIsInteger<T>) {
      // 8-bit operands are multiplied as unsigned int rather than promoted to signed int.
      using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else if constexpr (ops_detail::kIsIeee<T>) {
      // The product must be rounded on its own: fused into a following add (an FMA) it would
      // round once instead of twice, and a pre-multiplied sum would differ between a GPU that
      // fuses and a host that does not. nvcc fuses unless told not to; clang honours the pragma.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
#if defined(__CUDA_ARCH__)
      if constexpr (std::is_same_v<T, float>)
        return ops_detail::canonicalize(__fmul_rn(a, b));
      else
        return ops_detail::canonicalize(__dmul_rn(a, b));
#else
      return ops_detail::canonicalize(a * b);
#endif
    } else if constexpr (kIsComplex<T>) {
      // Every product goes through FuncProd, so none is fused into the add (see above), and the
      // subtraction ac - bd is the addition of -(bd), which IEEE defines to be the same operation.
      const FuncProd<typename T::Part> mul;
      const FuncSum<typename T::Part> add;
      return T{add(mul(a.re, b.re), -mul(a.im, b.im)), add(mul(a.re, b.im), mul(a.im, b.re))};
    } else {
      return T(a.toFloat() * b.toFloat());
    }
  }
};

template <typename T>
struct FuncMax {
  static_assert(!kIsComplex<T>, "complex numbers have no order");
  WEFT_HOST_DEVICE WEFT_INLINE T operator()(T a, T b) const {
    if constexpr (ops_detail::kIsInteger<T>)
      return a < b ? b : a;
    else
      return ops_detail::floatingMinMax<T, true>(a, b);
  }
};

template <typename T>
struct FuncMin {
  static_assert(!kIsComplex<T>, "complex numbers have no order");
  WEFT_HOST_DEVICE WEFT_INLINE T operator()(T a, T b) const {
    if constexpr (ops_detail::kIsInteger<T>)
      return a < b ? a : b;
    else
      return ops_detail::floatingMinMax<T, false>(a, b);
  }
};

// Pre-multiply (ncclAvg on real floating types, ncclPreMulSum): x * scalar in the type itself, with
// the same rules as FuncProd (wrapping for integers, one rounding for the narrow formats, complex
// multiplication by a complex scalar).
template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE T preMultiply(T x, T scalar) {
  return FuncProd<T>()(x, scalar);
}

// Post-divide (ncclAvg on integer and complex types): the wrapped sum divided by nranks, truncating
// toward zero like C++ '/'. The divisor is a positive rank count, so there is no overflow case.
// Complex sums have each part divided, correctly rounded: a pre-multiply by 1/nranks would have to
// be a complex product by (1/nranks + 0i), whose 0 * Inf turns an infinite part into NaN. Real
// floating types do not use it (their average is a pre-multiply), but it is defined for them too,
// as one correctly rounded division, so that no combination is left undefined.
template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE T postDivide(T x, int divisor) {
  if constexpr (ops_detail::kIsInteger<T>) {
    // 8-bit sums are divided as int, so a divisor larger than the type can hold (more ranks than
    // 255) still divides correctly; wider types divide in their own type.
    using W = std::conditional_t<(sizeof(T) < sizeof(int)), int, T>;
    return static_cast<T>(static_cast<W>(x) / static_cast<W>(divisor));
  } else if constexpr (ops_detail::kIsIeee<T>) {
    return ops_detail::canonicalize(x / static_cast<T>(divisor));
  } else if constexpr (kIsComplex<T>) {
    // The complex average: each part of the sum divided by nranks, correctly rounded.
    return T{postDivide(x.re, divisor), postDivide(x.im, divisor)};
  } else {
    return T(x.toFloat() / static_cast<float>(divisor));
  }
}

}  // namespace weft
