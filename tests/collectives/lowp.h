// Reference conversions for the small floating-point formats Weft reduces (float16, bfloat16,
// float8 e4m3 and e5m2). The suite computes expected results in double from the exact values of
// the low-precision inputs, so it needs its own decode/encode that do not depend on Weft's code.
// This header deliberately does not include nccl.h: a cross-check against CUDA's own conversion
// headers compiles it next to cuda_fp16.h without Weft's API.
#pragma once
#include <cstdint>

namespace weft_test {

// A binary floating-point format of 1 sign bit, expBits exponent bits and manBits mantissa bits.
// ieeeSpecials: the all-ones exponent encodes Inf (mantissa 0) and NaN (otherwise), as in IEEE 754.
// Without it (float8 e4m3, "fn" variant), the all-ones exponent holds normal numbers and only the
// all-ones exponent with the all-ones mantissa is NaN; there is no Inf.
struct MiniFloat {
  int expBits;
  int manBits;
  bool ieeeSpecials;

  int bias() const { return (1 << (expBits - 1)) - 1; }
  int totalBits() const { return 1 + expBits + manBits; }
  // Distance from 1.0 to the next larger value: the format's machine epsilon.
  double epsilon() const;
  // The largest finite value.
  double maxFinite() const;
  // The smallest positive (subnormal) value.
  double minSubnormal() const;
};

inline constexpr MiniFloat kFloat16{5, 10, true};
inline constexpr MiniFloat kBfloat16{8, 7, true};
inline constexpr MiniFloat kFloat8E4M3{4, 3, false};
inline constexpr MiniFloat kFloat8E5M2{5, 2, true};

// Exact value of the bit pattern (the low totalBits() bits of bits).
double decodeMiniFloat(const MiniFloat& f, uint32_t bits);
// Nearest value, ties to even. Values beyond the range become Inf (IEEE formats) or NaN (e4m3:
// it has no Inf). NaN becomes the format's canonical NaN.
uint32_t encodeMiniFloat(const MiniFloat& f, double value);
// True when the pattern is NaN (or Inf for IEEE formats): a value that compares badly.
bool isNonFinite(const MiniFloat& f, uint32_t bits);

}  // namespace weft_test
