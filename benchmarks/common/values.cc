// Weft perf tools: types, operators, input data and the reference check (see values.h).
#include "values.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace weftbench {

namespace {

// The layout of a small floating-point format: sign, expBits, manBits. ieee: the all-ones
// exponent holds infinities and NaNs (half, bfloat16, e5m2); otherwise only S.1111.111 is NaN
// (e4m3, "fn" flavour: no infinities, largest finite 448).
struct MiniFormat {
  int expBits;
  int manBits;
  int bias;
  bool ieee;
};
constexpr MiniFormat kHalf{5, 10, 15, true};
constexpr MiniFormat kBf16{8, 7, 127, true};
constexpr MiniFormat kE4m3{4, 3, 7, false};
constexpr MiniFormat kE5m2{5, 2, 15, true};

const MiniFormat* miniFormat(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return &kHalf;
    case ncclBfloat16: return &kBf16;
    case ncclFloat8e4m3: return &kE4m3;
    case ncclFloat8e5m2: return &kE5m2;
    default: return nullptr;
  }
}

double decodeMini(const MiniFormat& f, uint64_t bits) {
  const uint64_t manMask = (1ull << f.manBits) - 1;
  const uint64_t expMax = (1ull << f.expBits) - 1;
  const bool neg = (bits >> (f.expBits + f.manBits)) & 1;
  const uint64_t e = (bits >> f.manBits) & expMax;
  const uint64_t m = bits & manMask;
  double v;
  if (f.ieee && e == expMax) {
    v = m ? NAN : INFINITY;
  } else if (!f.ieee && e == expMax && m == manMask) {
    v = NAN;
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias - f.manBits);
  } else {
    v = std::ldexp(static_cast<double>(m + (1ull << f.manBits)), static_cast<int>(e) - f.bias - f.manBits);
  }
  return neg ? -v : v;
}

uint64_t encodeMini(const MiniFormat& f, double v) {
  const uint64_t signBit = 1ull << (f.expBits + f.manBits);
  const uint64_t manMask = (1ull << f.manBits) - 1;
  const int64_t expMax = (1ll << f.expBits) - 1;
  const uint64_t nanBits = f.ieee ? ((uint64_t(expMax) << f.manBits) | (1ull << (f.manBits - 1)))
                                  : ((uint64_t(expMax) << f.manBits) | manMask);
  const uint64_t sign = std::signbit(v) ? signBit : 0;
  if (std::isnan(v)) return nanBits;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  const uint64_t overflow = f.ieee ? (uint64_t(expMax) << f.manBits) : nanBits;
  if (std::isinf(a)) return sign | overflow;
  int ex = 0;
  std::frexp(a, &ex);                  // a = fr * 2^ex, fr in [0.5, 1)
  int64_t biased = (ex - 1) + f.bias;  // exponent field for a = 1.x * 2^(ex-1)
  if (biased <= 0) {
    // Subnormal: a = m * 2^(1 - bias - manBits). A rounding carry into 2^manBits is exactly
    // the smallest normal number, which the same bit pattern encodes.
    const double q = std::nearbyint(std::ldexp(a, f.manBits - 1 + f.bias));
    return sign | static_cast<uint64_t>(q);
  }
  double q = std::nearbyint(std::ldexp(a, f.manBits - (ex - 1)));  // in [2^m, 2^(m+1)]
  if (q >= std::ldexp(1.0, f.manBits + 1)) {
    q = std::ldexp(1.0, f.manBits);
    ++biased;
  }
  const uint64_t m = static_cast<uint64_t>(q) - (1ull << f.manBits);
  if (f.ieee ? biased >= expMax : (biased > expMax || (biased == expMax && m == manMask))) {
    return sign | overflow;
  }
  return sign | (static_cast<uint64_t>(biased) << f.manBits) | m;
}

// Decoding tables for the 8- and 16-bit floating-point types (built on first use).
struct DecodeTables {
  std::vector<float> half, bf16, e4m3, e5m2;
};
const DecodeTables& decodeTables() {
  static DecodeTables t;
  static std::once_flag once;
  std::call_once(once, [] {
    t.half.resize(1 << 16);
    t.bf16.resize(1 << 16);
    for (uint64_t b = 0; b < (1u << 16); b++) {
      t.half[b] = static_cast<float>(decodeMini(kHalf, b));
      t.bf16[b] = static_cast<float>(decodeMini(kBf16, b));
    }
    t.e4m3.resize(256);
    t.e5m2.resize(256);
    for (uint64_t b = 0; b < 256; b++) {
      t.e4m3[b] = static_cast<float>(decodeMini(kE4m3, b));
      t.e5m2[b] = static_cast<float>(decodeMini(kE5m2, b));
    }
  });
  return t;
}

inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline int64_t signExtend(uint64_t v, size_t bytes) {
  if (bytes >= 8) return static_cast<int64_t>(v);
  const int shift = 64 - 8 * static_cast<int>(bytes);
  return static_cast<int64_t>(v << shift) >> shift;
}

inline uint64_t loadElem(const void* base, size_t i, size_t size) {
  const char* p = static_cast<const char*>(base) + i * size;
  switch (size) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

inline void storeElem(void* base, size_t i, size_t size, uint64_t bits) {
  char* p = static_cast<char*>(base) + i * size;
  switch (size) {
    case 1: {
      uint8_t v = static_cast<uint8_t>(bits);
      std::memcpy(p, &v, 1);
      break;
    }
    case 2: {
      uint16_t v = static_cast<uint16_t>(bits);
      std::memcpy(p, &v, 2);
      break;
    }
    case 4: {
      uint32_t v = static_cast<uint32_t>(bits);
      std::memcpy(p, &v, 4);
      break;
    }
    default: std::memcpy(p, &bits, 8); break;
  }
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const std::vector<TypeDesc>& allTypes() {
  static const std::vector<TypeDesc> types = {
      {ncclInt8, "int8", 1, false, true, 0, 0},
      {ncclUint8, "uint8", 1, false, false, 0, 0},
      {ncclInt32, "int32", 4, false, true, 0, 0},
      {ncclUint32, "uint32", 4, false, false, 0, 0},
      {ncclInt64, "int64", 8, false, true, 0, 0},
      {ncclUint64, "uint64", 8, false, false, 0, 0},
      {ncclFloat16, "half", 2, true, true, 2048, 0x1p-10},
      {ncclFloat32, "float", 4, true, true, 16777216, 0x1p-23},
      {ncclFloat64, "double", 8, true, true, 9007199254740992.0, 0x1p-52},
      {ncclBfloat16, "bfloat16", 2, true, true, 256, 0x1p-7},
      {ncclFloat8e4m3, "f8e4m3", 1, true, true, 16, 0x1p-3},
      {ncclFloat8e5m2, "f8e5m2", 1, true, true, 8, 0x1p-2},
  };
  return types;
}

const TypeDesc& typeDesc(ncclDataType_t type) {
  for (const auto& t : allTypes())
    if (t.type == type) return t;
  return allTypes()[7];
}

const std::vector<OpDesc>& allOps() {
  static const std::vector<OpDesc> ops = {
      {OpKind::kSum, "sum"}, {OpKind::kProd, "prod"}, {OpKind::kMax, "max"},
      {OpKind::kMin, "min"}, {OpKind::kAvg, "avg"},   {OpKind::kMulSum, "mulsum"},
  };
  return ops;
}

const char* opName(OpKind op) {
  for (const auto& o : allOps())
    if (o.kind == op) return o.name;
  return "none";
}

bool parseTypes(const std::string& arg, std::vector<ncclDataType_t>* out) {
  const std::string a = lower(arg);
  out->clear();
  if (a == "all") {
    for (const auto& t : allTypes()) out->push_back(t.type);
    return true;
  }
  struct Alias {
    const char* name;
    ncclDataType_t type;
  };
  static const Alias aliases[] = {
      {"char", ncclInt8},       {"int", ncclInt32},          {"float16", ncclFloat16},    {"fp16", ncclFloat16},
      {"bf16", ncclBfloat16},   {"float32", ncclFloat32},    {"fp32", ncclFloat32},       {"float64", ncclFloat64},
      {"fp64", ncclFloat64},    {"fp8e4m3", ncclFloat8e4m3}, {"fp8e5m2", ncclFloat8e5m2}, {"e4m3", ncclFloat8e4m3},
      {"e5m2", ncclFloat8e5m2},
  };
  for (const auto& t : allTypes())
    if (a == t.name) {
      out->push_back(t.type);
      return true;
    }
  for (const auto& al : aliases)
    if (a == al.name) {
      out->push_back(al.type);
      return true;
    }
  return false;
}

bool parseOps(const std::string& arg, std::vector<OpKind>* out) {
  const std::string a = lower(arg);
  out->clear();
  if (a == "all") {
    for (const auto& o : allOps()) out->push_back(o.kind);
    return true;
  }
  if (a == "premulsum") {
    out->push_back(OpKind::kMulSum);
    return true;
  }
  for (const auto& o : allOps())
    if (a == o.name) {
      out->push_back(o.kind);
      return true;
    }
  return false;
}

ncclRedOp_t builtinOp(OpKind op) {
  switch (op) {
    case OpKind::kProd: return ncclProd;
    case OpKind::kMax: return ncclMax;
    case OpKind::kMin: return ncclMin;
    case OpKind::kAvg: return ncclAvg;
    default: return ncclSum;
  }
}

double decodeFloat(ncclDataType_t type, uint64_t bits) {
  switch (type) {
    case ncclFloat32: {
      const uint32_t b = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    case ncclFloat64: {
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    case ncclFloat16: return decodeTables().half[bits & 0xffff];
    case ncclBfloat16: return decodeTables().bf16[bits & 0xffff];
    case ncclFloat8e4m3: return decodeTables().e4m3[bits & 0xff];
    case ncclFloat8e5m2: return decodeTables().e5m2[bits & 0xff];
    default: return NAN;
  }
}

uint64_t encodeFloat(ncclDataType_t type, double v) {
  if (type == ncclFloat32) {
    const float f = static_cast<float>(v);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  if (type == ncclFloat64) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return b;
  }
  const MiniFormat* f = miniFormat(type);
  return f ? encodeMini(*f, v) : 0;
}

uint64_t mulSumScalarBits(ncclDataType_t type) {
  const TypeDesc& td = typeDesc(type);
  if (td.isFloat) return encodeFloat(type, kMulSumScalar);
  return static_cast<uint64_t>(kMulSumScalar);
}

Generator::Generator(const DataSpec& spec) : spec_(spec), td_(typeDesc(spec.type)) {
  mask_ = td_.size >= 8 ? ~0ull : ((1ull << (8 * td_.size)) - 1);
  if (td_.isFloat) {
    // Partial sums stay within exactInt whatever order the library adds in.
    const double mult = spec_.op == OpKind::kMulSum ? kMulSumScalar : 1;
    const double k = std::floor(td_.exactInt / (2.0 * std::max(spec_.nranks, 1) * mult));
    range_ = static_cast<int64_t>(std::clamp(k, 1.0, 64.0));
    // Sums of integers that stay within exactInt are exact in any order: no tolerance then.
    // Products (|result| <= 4), max and min are always exact; ncclAvg divides and is not.
    exact_ = spec_.op != OpKind::kAvg &&
             (spec_.op == OpKind::kProd || spec_.op == OpKind::kMax || spec_.op == OpKind::kMin ||
              static_cast<double>(range_) * mult * std::max(spec_.nranks, 1) <= td_.exactInt);
    minmaxRange_ = static_cast<int64_t>(std::min(td_.exactInt, 1048576.0));
    if (td_.size <= 2) {
      tableHalf_ = static_cast<int64_t>(td_.exactInt);
      encodeTable_.resize(2 * tableHalf_ + 1);
      for (int64_t v = -tableHalf_; v <= tableHalf_; v++)
        encodeTable_[v + tableHalf_] = encodeFloat(spec_.type, static_cast<double>(v));
    }
  } else {
    range_ = 50;  // integer arithmetic wraps exactly like the library's
    minmaxRange_ = 0;
  }
}

uint64_t Generator::hash(int rank, size_t index) const {
  return mix64(spec_.seed * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(rank + 1) * 0xABC98388FB8FAC03ull +
               static_cast<uint64_t>(index) * 0x8CB92BA72F3D8DD7ull);
}

int64_t Generator::value(int rank, size_t index) const {
  const uint64_t h = hash(rank, index);
  switch (spec_.op) {
    case OpKind::kProd: {
      // |value| in {1, 2}, at most two factors of 2 per element: products stay exact and small.
      const int n = std::max(spec_.nranks, 1);
      const bool two = static_cast<size_t>(rank) == index % n || static_cast<size_t>(rank) == (index * 7 + 3) % n;
      int64_t v = two ? 2 : 1;
      if (td_.isSigned && (h & 7) == 0) v = -v;
      return v;
    }
    case OpKind::kMax:
    case OpKind::kMin:
      if (!td_.isFloat) return static_cast<int64_t>(h & mask_);
      return static_cast<int64_t>(h % static_cast<uint64_t>(2 * minmaxRange_ + 1)) - minmaxRange_;
    default:  // sum, avg, mulsum
      if (td_.isSigned) return static_cast<int64_t>(h % static_cast<uint64_t>(2 * range_ + 1)) - range_;
      return static_cast<int64_t>(h % static_cast<uint64_t>(range_ + 1));
  }
}

uint64_t Generator::encodeInt(int64_t v) const {
  if (!td_.isFloat) return static_cast<uint64_t>(v) & mask_;
  if (!encodeTable_.empty() && v >= -tableHalf_ && v <= tableHalf_) return encodeTable_[v + tableHalf_];
  return encodeFloat(spec_.type, static_cast<double>(v));
}

void Generator::fill(int rank, size_t first, size_t count, void* dst) const {
  const size_t sz = td_.size;
  if (spec_.op == OpKind::kNone) {
    for (size_t i = 0; i < count; i++) storeElem(dst, i, sz, rawBits(rank, first + i));
  } else {
    for (size_t i = 0; i < count; i++) storeElem(dst, i, sz, encodeInt(value(rank, first + i)));
  }
}

uint64_t Generator::expectReduceInt(size_t index) const {
  const int n = std::max(spec_.nranks, 1);
  const size_t sz = td_.size;
  auto bitsOf = [&](int r) { return static_cast<uint64_t>(value(r, index)) & mask_; };
  uint64_t acc = bitsOf(0);
  switch (spec_.op) {
    case OpKind::kProd:
      for (int r = 1; r < n; r++) acc *= bitsOf(r);
      break;
    case OpKind::kMax:
    case OpKind::kMin:
      for (int r = 1; r < n; r++) {
        const uint64_t b = bitsOf(r);
        const bool greater = td_.isSigned ? signExtend(b, sz) > signExtend(acc, sz) : b > acc;
        const bool less = td_.isSigned ? signExtend(b, sz) < signExtend(acc, sz) : b < acc;
        if (spec_.op == OpKind::kMax ? greater : less) acc = b;
      }
      break;
    case OpKind::kMulSum:
      acc *= kMulSumScalar;
      for (int r = 1; r < n; r++) acc += kMulSumScalar * bitsOf(r);
      break;
    default:  // sum, avg
      for (int r = 1; r < n; r++) acc += bitsOf(r);
      break;
  }
  acc &= mask_;
  if (spec_.op == OpKind::kAvg) {
    // Integer average: the (wrapped) sum divided by nranks, truncating like C.
    if (td_.isSigned)
      acc = static_cast<uint64_t>(signExtend(acc, sz) / n) & mask_;
    else
      acc = acc / static_cast<uint64_t>(n);
  }
  return acc;
}

double Generator::expectReduceFloat(size_t index, double* magnitude) const {
  const int n = std::max(spec_.nranks, 1);
  double acc = static_cast<double>(value(0, index));
  double mag = std::fabs(acc);
  switch (spec_.op) {
    case OpKind::kProd:
      for (int r = 1; r < n; r++) acc *= static_cast<double>(value(r, index));
      break;
    case OpKind::kMax:
      for (int r = 1; r < n; r++) acc = std::max(acc, static_cast<double>(value(r, index)));
      break;
    case OpKind::kMin:
      for (int r = 1; r < n; r++) acc = std::min(acc, static_cast<double>(value(r, index)));
      break;
    case OpKind::kMulSum:
      acc *= kMulSumScalar;
      mag *= kMulSumScalar;
      for (int r = 1; r < n; r++) {
        const double v = kMulSumScalar * static_cast<double>(value(r, index));
        acc += v;
        mag += std::fabs(v);
      }
      break;
    default:
      for (int r = 1; r < n; r++) {
        const double v = static_cast<double>(value(r, index));
        acc += v;
        mag += std::fabs(v);
      }
      if (spec_.op == OpKind::kAvg) {
        acc /= n;
        mag /= n;
      }
      break;
  }
  // Rounding errors of a sum scale with its terms, not with the (possibly cancelled) result.
  if (spec_.op == OpKind::kProd || spec_.op == OpKind::kMax || spec_.op == OpKind::kMin) mag = std::fabs(acc);
  *magnitude = mag;
  return acc;
}

double Generator::tolerance() const {
  if (exact_) return 0;
  const double n = std::max(spec_.nranks, 1);
  switch (spec_.type) {
    case ncclFloat32: return 1e-5;
    case ncclFloat64: return 1e-12;
    default: return td_.eps * n;  // half, bfloat16 and the fp8 types: loose on purpose
  }
}

int64_t Generator::check(const std::vector<Segment>& segs, const void* out, std::string* firstMismatch) const {
  const size_t sz = td_.size;
  const double tol = td_.isFloat ? tolerance() : 0;
  int64_t wrong = 0;
  auto note = [&](size_t i, const char* what, double got, double want, uint64_t gotBits, uint64_t wantBits) {
    if (wrong == 0 && firstMismatch) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s element %zu: got %.9g (0x%llx) expected %.9g (0x%llx)", what, i, got,
                    static_cast<unsigned long long>(gotBits), want, static_cast<unsigned long long>(wantBits));
      *firstMismatch = buf;
    }
  };
  for (const Segment& s : segs) {
    for (size_t k = 0; k < s.count; k++) {
      const size_t oi = s.outOffset + k;
      const uint64_t got = loadElem(out, oi, sz) & mask_;
      if (s.kind == Segment::kCopy) {
        const size_t si = s.srcOffset + k;
        const uint64_t want = spec_.op == OpKind::kNone ? rawBits(s.srcRank, si) : encodeInt(value(s.srcRank, si));
        if (got != want) {
          note(oi, "copy", static_cast<double>(got), static_cast<double>(want), got, want);
          wrong++;
        }
      } else if (!td_.isFloat) {
        const uint64_t want = expectReduceInt(s.srcOffset + k);
        if (got != want) {
          note(oi, "reduce", td_.isSigned ? static_cast<double>(signExtend(got, sz)) : static_cast<double>(got),
               td_.isSigned ? static_cast<double>(signExtend(want, sz)) : static_cast<double>(want), got, want);
          wrong++;
        }
      } else {
        double mag = 0;
        const double want = expectReduceFloat(s.srcOffset + k, &mag);
        const double g = decodeFloat(spec_.type, got);
        const bool ok = !std::isnan(g) && std::fabs(g - want) <= tol * std::max(1.0, mag);
        if (!ok) {
          note(oi, "reduce", g, want, got, encodeFloat(spec_.type, want));
          wrong++;
        }
      }
    }
  }
  return wrong;
}

void fillSentinel(void* dst, size_t bytes) { std::memset(dst, 0xA5, bytes); }

}  // namespace weftbench
