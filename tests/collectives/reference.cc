#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dtypes.h"

namespace weft_test {
namespace {

uint64_t widthMask(size_t size) { return size == 8 ? ~0ull : ((1ull << (size * 8)) - 1); }

uint64_t caseHash(const CollCase& c, int rank, size_t idx, uint64_t salt) {
  uint64_t h = mix64(static_cast<uint64_t>(c.seed) * 0x9E3779B97F4A7C15ull ^ salt);
  h = mix64(h ^ (static_cast<uint64_t>(c.coll) << 40) ^ (static_cast<uint64_t>(c.red) << 48) ^
            (static_cast<uint64_t>(c.dtype) << 56) ^ c.count);
  h = mix64(h ^ (static_cast<uint64_t>(rank) + 1) * 0xD6E8FEB86659FD93ull);
  return mix64(h ^ idx);
}

// A finite value of the type from random bits: retry until finite.
uint64_t randomFinite(ncclDataType_t dtype, uint64_t h) {
  const DtypeInfo& d = dtypeInfo(dtype);
  uint64_t bits = h & widthMask(d.size);
  while (bitsNonFinite(dtype, bits)) {
    h = mix64(h);
    bits = h & widthMask(d.size);
  }
  return bits;
}

// Small values whose sums over up to 8 ranks are exact in the type: float32/64 quarter steps in
// [-64, 64], float16 half steps in [-8, 8], bfloat16 integers in [-8, 8], e4m3 integers in [-2, 2]
// (sums up to 16 have 4 significant bits), e5m2 integers in [-1, 1] (sums up to 8: 3 bits).
double smallFloat(ncclDataType_t dtype, uint64_t h) {
  switch (dtype) {
    case ncclFloat16: return (static_cast<double>(h % 33) - 16) * 0.5;
    case ncclBfloat16: return static_cast<double>(h % 17) - 8;
    case ncclFloat8e4m3: return static_cast<double>(h % 5) - 2;
    case ncclFloat8e5m2: return static_cast<double>(h % 3) - 1;
    default: return (static_cast<double>(h % 513) - 256) * 0.25;
  }
}

bool unsignedLess(ncclDataType_t dtype, uint64_t a, uint64_t b) {
  const DtypeInfo& d = dtypeInfo(dtype);
  if (d.isSigned) return bitsToInt(dtype, a) < bitsToInt(dtype, b);
  return (a & widthMask(d.size)) < (b & widthMask(d.size));
}

}  // namespace

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t inputBits(const CollCase& c, int rank, size_t idx) {
  const uint64_t h = caseHash(c, rank, idx, 0x1111);
  const DtypeInfo& d = dtypeInfo(c.dtype);
  if (!collReduces(c.coll)) return h & widthMask(d.size);  // data movement: any bit pattern at all
  if (!d.isFloat) {
    switch (c.red) {
      case Red::kProd: {
        static const int64_t kSigned[] = {1, 2, 3, -1};
        static const int64_t kUnsigned[] = {1, 2, 3, 1};
        return intToBits(c.dtype, static_cast<uint64_t>((d.isSigned ? kSigned : kUnsigned)[h % 4]));
      }
      case Red::kAvg:  // small, so the sum does not wrap and the division is unambiguous
        return intToBits(c.dtype, static_cast<uint64_t>(d.isSigned ? static_cast<int64_t>(h % 41) - 20
                                                                     : static_cast<int64_t>(h % 41)));
      default: return h & widthMask(d.size);  // sum, max, min, PreMulSum: full range, wrapping
    }
  }
  switch (c.red) {
    case Red::kMax:
    case Red::kMin: return randomFinite(c.dtype, h);
    case Red::kProd: {
      static const double kFactors[] = {1, 2, -1, 0.5, -2, -0.5};
      return doubleToBits(c.dtype, kFactors[h % 6]);
    }
    default: return doubleToBits(c.dtype, smallFloat(c.dtype, h));
  }
}

uint64_t junkBits(const CollCase& c, int rank, size_t idx) {
  return caseHash(c, rank, idx, 0x2222) & widthMask(dtypeInfo(c.dtype).size);
}

uint64_t scalarBits(ncclDataType_t dtype, int rank) {
  if (dtypeInfo(dtype).isFloat) {
    static const double kScalars[] = {0.5, 1.5, 2, 1};
    return doubleToBits(dtype, kScalars[rank % 4]);
  }
  static const uint64_t kScalars[] = {3, 1, 2, 5};
  return intToBits(dtype, kScalars[rank % 4]);
}

uint64_t wrongScalarBits(ncclDataType_t dtype) {
  return dtypeInfo(dtype).isFloat ? doubleToBits(dtype, 3.0) : intToBits(dtype, 7);
}

Expect reduceExpect(const CollCase& c, int nranks, size_t idx) {
  const DtypeInfo& d = dtypeInfo(c.dtype);
  if (!d.isFloat) {
    uint64_t acc = inputBits(c, 0, idx);
    if (c.red == Red::kPreMulImm || c.red == Red::kPreMulDev) {
      acc = static_cast<uint64_t>(bitsToInt(c.dtype, acc)) * static_cast<uint64_t>(bitsToInt(c.dtype, scalarBits(c.dtype, 0)));
    }
    acc = static_cast<uint64_t>(bitsToInt(c.dtype, intToBits(c.dtype, acc)));
    for (int r = 1; r < nranks; ++r) {
      const uint64_t x = static_cast<uint64_t>(bitsToInt(c.dtype, inputBits(c, r, idx)));
      switch (c.red) {
        case Red::kSum:
        case Red::kAvg: acc += x; break;
        case Red::kProd: acc *= x; break;
        case Red::kMax: acc = unsignedLess(c.dtype, acc, x) ? x : acc; break;
        case Red::kMin: acc = unsignedLess(c.dtype, x, acc) ? x : acc; break;
        case Red::kPreMulImm:
        case Red::kPreMulDev: acc += x * static_cast<uint64_t>(bitsToInt(c.dtype, scalarBits(c.dtype, r))); break;
      }
    }
    uint64_t bits = intToBits(c.dtype, acc);
    if (c.red == Red::kAvg) {
      // Integer average: the (wrapped) sum divided by nranks, truncating toward zero.
      if (d.isSigned) {
        bits = intToBits(c.dtype, static_cast<uint64_t>(bitsToInt(c.dtype, bits) / nranks));
      } else {
        bits = intToBits(c.dtype, bits / static_cast<uint64_t>(nranks));
      }
    }
    return exactly(bits);
  }

  // Floating types: reference in double from the exact input values.
  double acc = 0;
  double magnitude = 0;  // the largest |term|, for the tolerance
  for (int r = 0; r < nranks; ++r) {
    double x = bitsToDouble(c.dtype, inputBits(c, r, idx));
    if (c.red == Red::kPreMulImm || c.red == Red::kPreMulDev) x *= bitsToDouble(c.dtype, scalarBits(c.dtype, r));
    magnitude = std::max(magnitude, std::fabs(x));
    if (r == 0) {
      acc = x;
      continue;
    }
    switch (c.red) {
      case Red::kSum:
      case Red::kAvg:
      case Red::kPreMulImm:
      case Red::kPreMulDev: acc += x; break;
      case Red::kProd: acc *= x; break;
      case Red::kMax: acc = std::max(acc, x); break;
      case Red::kMin: acc = std::min(acc, x); break;
    }
  }
  if (c.red == Red::kAvg) acc /= nranks; if (c.red == Red::kSum && c.dtype == ncclFloat8e5m2) acc += 0.25;
  Expect e;
  e.approx = true;
  e.value = acc;
  if (c.red == Red::kMax || c.red == Red::kMin) {
    e.tol = 0;  // an input value, never rounded
  } else if (c.red == Red::kProd) {
    e.tol = 2 * d.epsilon * nranks * std::fabs(acc);
  } else {
    const double minSub = d.mini ? d.mini->minSubnormal() : 0.0;
    e.tol = 2 * d.epsilon * nranks * magnitude + nranks * minSub;
  }
  e.bits = doubleToBits(c.dtype, acc);
  return e;
}

bool matches(ncclDataType_t dtype, const Expect& e, uint64_t got) {
  const uint64_t mask = widthMask(dtypeInfo(dtype).size);
  if (!e.approx) return (got & mask) == (e.bits & mask);
  const double v = bitsToDouble(dtype, got & mask);
  if (!std::isfinite(v)) return false;
  return std::fabs(v - e.value) <= e.tol;
}

std::string describe(ncclDataType_t dtype, const Expect& e) {
  if (!e.approx) return formatBits(dtype, e.bits);
  char buf[96];
  snprintf(buf, sizeof(buf), "%.9g +- %.3g", e.value, e.tol);
  return buf;
}

size_t alltoallvCount(size_t c, int src, int dst) {
  if (c == 0) return 0;
  return c + static_cast<size_t>((src + 2 * dst) % 3) - 1;
}

}  // namespace weft_test
