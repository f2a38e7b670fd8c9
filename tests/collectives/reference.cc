#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace weft_test {
namespace {

uint64_t widthMask(size_t size) { return size == 8 ? ~0ull : ((1ull << (size * 8)) - 1); }

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

// Products of up to 8 of these are powers of two within every type's range: exact.
constexpr double kProdFactors[] = {1, 2, -1, 0.5, -2, -0.5};
constexpr int64_t kIntProdSigned[] = {1, 2, 3, -1};
constexpr int64_t kIntProdUnsigned[] = {1, 2, 3, 1};

}  // namespace

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
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

Reference::Reference(const CollCase& c, int nranks)
    : c_(c), nranks_(nranks), info_(&dtypeInfo(c.dtype)), mask_(widthMask(info_->size)) {
  preMul_ = collReduces(c.coll) && (c.red == Red::kPreMulImm || c.red == Red::kPreMulDev);
  if (!collReduces(c.coll)) {
    kind_ = Kind::kRawBits;  // data movement: any bit pattern at all
  } else if (!info_->isFloat) {
    kind_ = c.red == Red::kProd ? Kind::kIntProd : c.red == Red::kAvg ? Kind::kIntAvg : Kind::kRawBits;
  } else if (c.red == Red::kMax || c.red == Red::kMin) {
    kind_ = Kind::kFloatFinite;
  } else {
    kind_ = c.red == Red::kProd ? Kind::kFloatProd : Kind::kFloatSmall;
  }
  uint64_t h = mix64(static_cast<uint64_t>(c.seed) * 0x9E3779B97F4A7C15ull);
  h = mix64(h ^ (static_cast<uint64_t>(c.coll) << 40) ^ (static_cast<uint64_t>(c.red) << 48) ^
            (static_cast<uint64_t>(c.dtype) << 56) ^ c.count);
  for (int r = 0; r < nranks; ++r) {
    rankBase_.push_back(mix64(h ^ (static_cast<uint64_t>(r) + 1) * 0xD6E8FEB86659FD93ull));
    const uint64_t s = scalarBits(c.dtype, r);
    scalarValue_.push_back(info_->isFloat ? bitsToDouble(c.dtype, s) : 0.0);
    scalarInt_.push_back(info_->isFloat ? 0 : static_cast<uint64_t>(bitsToInt(c.dtype, s)));
  }
}

uint64_t Reference::hash(int rank, size_t idx, int stream) const {
  return mix64(rankBase_[rank] ^ (static_cast<uint64_t>(stream) << 62) ^ idx);
}

double Reference::floatValue(uint64_t h) const {
  switch (kind_) {
    case Kind::kFloatSmall: return smallFloat(c_.dtype, h);
    case Kind::kFloatProd: return kProdFactors[h % 6];
    default: return bitsToDouble(c_.dtype, bitsFromHash(h));
  }
}

uint64_t Reference::bitsFromHash(uint64_t h) const {
  switch (kind_) {
    case Kind::kRawBits: return h & mask_;
    case Kind::kIntProd:
      return intToBits(c_.dtype, static_cast<uint64_t>((info_->isSigned ? kIntProdSigned : kIntProdUnsigned)[h % 4]));
    case Kind::kIntAvg:  // small, so the sum does not wrap and the division is unambiguous
      return intToBits(c_.dtype, static_cast<uint64_t>(info_->isSigned ? static_cast<int64_t>(h % 41) - 20
                                                                       : static_cast<int64_t>(h % 41)));
    case Kind::kFloatFinite: {
      uint64_t bits = h & mask_;
      while (bitsNonFinite(c_.dtype, bits)) {
        h = mix64(h);
        bits = h & mask_;
      }
      return bits;
    }
    case Kind::kFloatProd:
    case Kind::kFloatSmall: return doubleToBits(c_.dtype, floatValue(h));
  }
  return 0;
}

uint64_t Reference::input(int rank, size_t idx) const { return bitsFromHash(hash(rank, idx, 0)); }

uint64_t Reference::junk(int rank, size_t idx) const { return hash(rank, idx, 1) & mask_; }

Expect Reference::reduced(size_t idx) const {
  const Red red = c_.red;
  if (!info_->isFloat) {
    auto term = [&](int r) {
      uint64_t x = static_cast<uint64_t>(bitsToInt(c_.dtype, input(r, idx)));
      return preMul_ ? x * scalarInt_[r] : x;  // wraps like the type (low bits kept below)
    };
    auto less = [&](uint64_t a, uint64_t b) {  // compare as the type
      if (info_->isSigned) return bitsToInt(c_.dtype, a) < bitsToInt(c_.dtype, b);
      return (a & mask_) < (b & mask_);
    };
    uint64_t acc = term(0);
    for (int r = 1; r < nranks_; ++r) {
      const uint64_t x = term(r);
      switch (red) {
        case Red::kProd: acc *= x; break;
        case Red::kMax: acc = less(acc, x) ? x : acc; break;
        case Red::kMin: acc = less(x, acc) ? x : acc; break;
        default: acc += x; break;  // sum, avg, PreMulSum
      }
    }
    uint64_t bits = intToBits(c_.dtype, acc);
    if (red == Red::kAvg) {
      // Integer average: the sum divided by nranks, truncating toward zero.
      if (info_->isSigned) {
        bits = intToBits(c_.dtype, static_cast<uint64_t>(bitsToInt(c_.dtype, bits) / nranks_));
      } else {
        bits = intToBits(c_.dtype, bits / static_cast<uint64_t>(nranks_));
      }
    }
    return exactly(bits);
  }

  // Floating types: reference in double from the exact input values.
  double acc = 0;
  double magnitude = 0;  // the largest |term|, for the tolerance
  for (int r = 0; r < nranks_; ++r) {
    double x = floatValue(hash(r, idx, 0));
    if (preMul_) x *= scalarValue_[r];
    magnitude = std::max(magnitude, std::fabs(x));
    if (r == 0) {
      acc = x;
      continue;
    }
    switch (red) {
      case Red::kProd: acc *= x; break;
      case Red::kMax: acc = std::max(acc, x); break;
      case Red::kMin: acc = std::min(acc, x); break;
      default: acc += x; break;  // sum, avg, PreMulSum
    }
  }
  if (red == Red::kAvg) acc /= nranks_;
  Expect e;
  e.approx = true;
  e.value = acc;
  if (red == Red::kMax || red == Red::kMin || red == Red::kSum || red == Red::kProd) {
    // Max/min pick an input; sums and products of these inputs are exact in every order (every
    // partial result is representable in the type), so no rounding is allowed at all.
    e.tol = 0;
  } else {
    const double minSub = info_->mini ? info_->mini->minSubnormal() : 0.0;
    e.tol = 2 * info_->epsilon * nranks_ * magnitude + nranks_ * minSub;
  }
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

size_t vcollLayout(size_t c, int n, std::vector<size_t>* counts, std::vector<size_t>* displs) {
  counts->assign(n, 0);
  displs->assign(n, 0);
  for (int p = 0; p < n && c > 0; ++p) (*counts)[p] = p == (n > 1 ? 1 : 0) ? c : p % 2 == 0 ? 0 : c / 16 + 1;
  size_t at = 0;
  for (int p = n - 1; p >= 0; --p) {
    (*displs)[p] = at;
    at += (*counts)[p] + 1;
  }
  return at;
}

size_t alltoallvCount(size_t c, int src, int dst) {
  if (c == 0) return 0;
  return c + static_cast<size_t>((src + 2 * dst) % 3) - 1;
}

}  // namespace weft_test
