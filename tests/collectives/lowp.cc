// Straightforward (slow, exact) conversions between double and the small float formats. The
// reference side of the suite wants obviously-correct code, so everything goes through frexp and
// ldexp on doubles, which represent every value of these formats exactly.
#include "lowp.h"

#include <cmath>

namespace weft_test {
namespace {

uint32_t expMask(const MiniFloat& f) { return ((1u << f.expBits) - 1) << f.manBits; }
uint32_t manMask(const MiniFloat& f) { return (1u << f.manBits) - 1; }
uint32_t signBit(const MiniFloat& f) { return 1u << (f.expBits + f.manBits); }
// Exponent of the smallest normal number.
int minNormalExp(const MiniFloat& f) { return 1 - f.bias(); }

uint32_t canonicalNaN(const MiniFloat& f) {
  if (f.ieeeSpecials) return expMask(f) | (1u << (f.manBits - 1));
  return expMask(f) | manMask(f);
}

}  // namespace

double MiniFloat::epsilon() const { return std::ldexp(1.0, -manBits); }

double MiniFloat::maxFinite() const {
  const int topField = (1 << expBits) - 1;
  if (ieeeSpecials) {
    // The all-ones exponent is reserved; the largest binade is the one below, mantissa all ones.
    return (2.0 - std::ldexp(1.0, -manBits)) * std::ldexp(1.0, topField - 1 - bias());
  }
  // e4m3fn: the all-ones exponent is a normal binade, minus its all-ones mantissa (NaN).
  return (2.0 - std::ldexp(1.0, 1 - manBits)) * std::ldexp(1.0, topField - bias());
}

double MiniFloat::minSubnormal() const { return std::ldexp(1.0, minNormalExp(*this) - manBits); }

bool isNonFinite(const MiniFloat& f, uint32_t bits) {
  const uint32_t e = bits & expMask(f);
  const uint32_t m = bits & manMask(f);
  if (f.ieeeSpecials) return e == expMask(f);
  return e == expMask(f) && m == manMask(f);
}

double decodeMiniFloat(const MiniFloat& f, uint32_t bits) {
  const bool negative = (bits & signBit(f)) != 0;
  const uint32_t expField = (bits & expMask(f)) >> f.manBits;
  const uint32_t man = bits & manMask(f);
  const uint32_t topField = (1u << f.expBits) - 1;
  double magnitude;
  if (f.ieeeSpecials && expField == topField) {
    magnitude = man == 0 ? INFINITY : NAN;
  } else if (!f.ieeeSpecials && expField == topField && man == manMask(f)) {
    magnitude = NAN;
  } else if (expField == 0) {
    magnitude = std::ldexp(static_cast<double>(man), minNormalExp(f) - f.manBits);
  } else {
    magnitude = std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -f.manBits),
                           static_cast<int>(expField) - f.bias());
  }
  return negative ? -magnitude : magnitude;
}

uint32_t encodeMiniFloat(const MiniFloat& f, double value) {
  if (std::isnan(value)) return canonicalNaN(f);
  const uint32_t sign = std::signbit(value) ? signBit(f) : 0;
  const double a = std::fabs(value);
  if (std::isinf(a)) return f.ieeeSpecials ? (sign | expMask(f)) : (sign | canonicalNaN(f));
  if (a == 0.0) return sign;

  int e2 = 0;
  std::frexp(a, &e2);  // a = m * 2^e2 with m in [0.5, 1): the leading bit has weight 2^(e2-1)
  int exponent = e2 - 1;
  if (exponent < minNormalExp(f)) exponent = minNormalExp(f);  // subnormal range: fixed quantum
  const double quantum = std::ldexp(1.0, exponent - f.manBits);
  // a / quantum is exact (a power-of-two scale); nearbyint rounds half to even by default.
  const double rounded = std::nearbyint(a / quantum) * quantum;
  if (rounded > f.maxFinite()) return f.ieeeSpecials ? (sign | expMask(f)) : (sign | canonicalNaN(f));

  if (rounded < std::ldexp(1.0, minNormalExp(f))) {
    const uint32_t man = static_cast<uint32_t>(std::ldexp(rounded, f.manBits - minNormalExp(f)));
    return sign | man;  // subnormal (or zero after rounding)
  }
  std::frexp(rounded, &e2);
  const int unbiased = e2 - 1;
  const double fraction = std::ldexp(rounded, -unbiased) - 1.0;  // in [0, 1)
  const uint32_t man = static_cast<uint32_t>(std::ldexp(fraction, f.manBits));
  const uint32_t expField = static_cast<uint32_t>(unbiased + f.bias());
  return sign | (expField << f.manBits) | man;
}

}  // namespace weft_test
