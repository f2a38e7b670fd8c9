// Test data for the program tests (program_sim.h): inputs that show summation order, reference
// reductions with tolerances, buffers with guard zones, whole-buffer expectations, and the shape
// of one collective case.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "math/reduce_host.h"
#include "task/task.h"

namespace weft::sim {

inline bool isRingKind(CollKind k) {
  return k == CollKind::kAllReduce || k == CollKind::kBroadcast || k == CollKind::kReduce ||
         k == CollKind::kAllGather || k == CollKind::kReduceScatter;
}

inline bool reducesKind(CollKind k) { return collReduces(k); }

// The spec group.cc resolves for a built-in op (reductions only; other kinds keep a plain copy).
inline ReduceSpec resolveSpec(CollKind kind, ncclDataType_t dtype, ncclRedOp_t op, int nranks) {
  ReduceSpec spec;
  spec.dtype = dtype;
  if (reducesKind(kind)) makeReduceSpec(dtype, op, nranks, &spec);
  return spec;
}

// ---- Test data: inputs, reference reductions, buffers with guard zones, comparisons ----

inline uint64_t mix64(uint64_t x) {  // splitmix64: cheap, well spread, the same on every platform
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline bool isFloatType(ncclDataType_t dt) { return dt == ncclFloat32 || dt == ncclFloat64; }

// The element types the tests use: a 1-, 4- and 8-byte type change how many elements fit a slot.
inline double loadValue(ncclDataType_t dt, const void* p) {
  switch (dt) {
    case ncclInt8: {
      int8_t v;
      memcpy(&v, p, 1);
      return v;
    }
    case ncclInt32: {
      int32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    case ncclFloat32: {
      float v;
      memcpy(&v, p, 4);
      return v;
    }
    case ncclFloat64: {
      double v;
      memcpy(&v, p, 8);
      return v;
    }
    default: return 0;
  }
}
inline void storeValue(ncclDataType_t dt, void* p, double x) {
  switch (dt) {
    case ncclInt8: {
      auto v = static_cast<int8_t>(static_cast<int64_t>(x));
      memcpy(p, &v, 1);
      break;
    }
    case ncclInt32: {
      auto v = static_cast<int32_t>(static_cast<int64_t>(x));
      memcpy(p, &v, 4);
      break;
    }
    case ncclFloat32: {
      auto v = static_cast<float>(x);
      memcpy(p, &v, 4);
      break;
    }
    case ncclFloat64: memcpy(p, &x, 8); break;
    default: break;
  }
}

// Element i of the input `salt` of rank `rank`, exactly representable in dt. Floats carry a full
// mantissa so that summation order shows in the low bits; integers stay small enough that sums of
// 16 ranks do not wrap except in int8, which wraps on purpose.
inline double inputValue(ncclDataType_t dt, int rank, size_t i, uint64_t salt = 0) {
  uint64_t h = mix64((uint64_t(rank) << 40) ^ (uint64_t(i) * 0x100000001b3ull) ^ (salt << 56) ^ salt);
  switch (dt) {
    case ncclInt8: return static_cast<double>(int64_t(h % 200) - 100);
    case ncclInt32: return static_cast<double>(int64_t(h % 2000001) - 1000000);
    case ncclFloat32: return static_cast<double>(h >> 40) / 8388608.0 - 1.0;  // k/2^23 - 1, k < 2^24
    case ncclFloat64: return static_cast<double>(h >> 11) / 4503599627370496.0 - 1.0;
    default: return 0;
  }
}

// A reduction as a test asks for it: a built-in op, or premulsum with a scalar.
enum class Red { kSum, kMax, kAvg, kPreMulSum };
struct Variant {
  ncclDataType_t dtype;
  Red red;
  double scalar = 0;  // kPreMulSum only
  std::string name() const {
    static const char* const reds[] = {"sum", "max", "avg", "premulsum"};
    std::string n = std::string(dataTypeName(dtype)) + "/" + reds[int(red)];
    if (red == Red::kPreMulSum) n += "(" + std::to_string(scalar) + ")";
    return n;
  }
};

// The spec the library resolves for v: makeReduceSpec for built-in ops, and for premulsum what
// ncclRedOpCreatePreMulSum records (the scalar's bits in the datatype's own format).
inline ReduceSpec specFor(const Variant& v, CollKind kind, int nranks) {
  static const ncclRedOp_t ops[] = {ncclSum, ncclMax, ncclAvg, ncclSum};
  ReduceSpec spec = resolveSpec(kind, v.dtype, ops[int(v.red)], nranks);
  if (v.red == Red::kPreMulSum && reducesKind(kind)) {
    spec.op = BaseOp::kSum;
    spec.preMul = true;
    spec.postDiv = false;
    unsigned char b[8] = {};
    storeValue(v.dtype, b, v.scalar);
    spec.preMulScalar = 0;
    memcpy(&spec.preMulScalar, b, dataTypeSize(v.dtype));
  }
  return spec;
}

// Expected result of reducing `xs` (one input per rank): the value and a tolerance, negative for
// an exact comparison. Integers follow the documented rules (wrapping sums, avg truncating the
// wrapped sum toward zero); floats are summed in double and allowed a few ulps per addend, since
// the ring adds in an order that depends on the rank and the chunk.
struct Expected {
  double value;
  double tol;
};
inline Expected reference(const Variant& v, const std::vector<double>& xs) {
  const int n = static_cast<int>(xs.size());
  if (v.red == Red::kMax) return Expected{*std::max_element(xs.begin(), xs.end()), -1};
  if (!isFloatType(v.dtype)) {
    const int bits = v.dtype == ncclInt8 ? 8 : 32;
    auto wrap = [bits](int64_t x) {
      uint64_t m = (uint64_t(1) << bits) - 1, u = uint64_t(x) & m;
      return (u >> (bits - 1)) ? int64_t(u) - int64_t(m) - 1 : int64_t(u);
    };
    int64_t acc = 0;
    for (double x : xs) acc += v.red == Red::kPreMulSum ? wrap(int64_t(v.scalar) * int64_t(x)) : int64_t(x);
    acc = wrap(acc);
    if (v.red == Red::kAvg && n > 1) acc /= n;  // C++ '/' truncates toward zero, as documented
    return Expected{double(acc), -1};
  }
  const double eps = v.dtype == ncclFloat32 ? 1.0 / 16777216.0 : 1.0 / 9007199254740992.0;
  auto rounded = [&](double x) { return v.dtype == ncclFloat32 ? double(float(x)) : x; };
  double mul = 1.0;
  if (v.red == Red::kAvg && n > 1) mul = rounded(1.0 / n);  // the pre-multiply by 1/nranks
  if (v.red == Red::kPreMulSum) mul = rounded(v.scalar);
  if (n == 1 && mul == 1.0) return Expected{xs[0], -1};  // a plain copy: exact
  double sum = 0, mag = 0;
  for (double x : xs) {
    sum += x * mul;
    mag += std::fabs(x * mul);
  }
  return Expected{sum, 4.0 * (n + 1) * eps * mag + 1e-300};
}

// A buffer with guard zones on both sides, so writes past either end are caught. Everything starts
// as a fill byte that no computed value is likely to have.
class Buffer {
 public:
  static constexpr size_t kGuard = 8;  // elements on each side
  Buffer(size_t elems, ncclDataType_t dt, unsigned char fill = 0xA5)
      : dt_(dt), es_(dataTypeSize(dt)), elems_(elems), raw_((elems + 2 * kGuard) * dataTypeSize(dt), fill) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* at(size_t i) { return raw_.data() + (kGuard + i) * es_; }
  double get(size_t i) { return loadValue(dt_, at(i)); }
  void set(size_t i, double x) { storeValue(dt_, at(i), x); }
  size_t elems() const { return elems_; }
  ncclDataType_t dtype() const { return dt_; }
  const std::vector<unsigned char>& raw() const { return raw_; }

 private:
  ncclDataType_t dt_;
  size_t es_, elems_;
  std::vector<unsigned char> raw_;
};

// What a whole buffer must hold after the operation: by default exactly what it held before (the
// guards, inputs that are not outputs, elements an operation must not touch), with the outputs
// set by expect(). Checking the whole buffer catches stray writes as well as wrong results.
class Expectation {
 public:
  Expectation(Buffer* b, std::string name)
      : buf_(b), name_(std::move(name)), want_(b->raw()), tol_(b->elems(), -1), ref_(b->elems(), 0) {}
  void expect(size_t i, const Expected& e) {
    storeValue(buf_->dtype(), want_.data() + (Buffer::kGuard + i) * dataTypeSize(buf_->dtype()), e.value);
    tol_[i] = e.tol;
    ref_[i] = e.value;
  }
  void expectExact(size_t i, double v) { expect(i, Expected{v, -1}); }
  // Copies element `from` of another buffer's current (input) contents, bit for bit.
  void expectCopyOf(size_t i, Buffer* src, size_t from) {
    const size_t es = dataTypeSize(buf_->dtype());
    memcpy(want_.data() + (Buffer::kGuard + i) * es, src->at(from), es);
    tol_[i] = -1;
  }
  // Empty when the buffer matches; otherwise the first few differences.
  std::string check() const {
    const size_t es = dataTypeSize(buf_->dtype());
    const auto& got = buf_->raw();
    std::string d;
    int shown = 0;
    size_t bad = 0;
    for (size_t e = 0; e < got.size() / es; ++e) {
      const long i = long(e) - long(Buffer::kGuard);
      const bool body = i >= 0 && size_t(i) < buf_->elems();
      bool ok;
      if (body && tol_[i] >= 0)
        ok = std::fabs(loadValue(buf_->dtype(), &got[e * es]) - ref_[i]) <= tol_[i];
      else
        ok = memcmp(&got[e * es], &want_[e * es], es) == 0;
      if (ok) continue;
      ++bad;
      if (shown++ < 4)
        d += "\n    " + name_ + (body ? "[" : " guard[") + std::to_string(i) +
             "] = " + std::to_string(loadValue(buf_->dtype(), &got[e * es])) + ", want " +
             std::to_string(loadValue(buf_->dtype(), &want_[e * es])) +
             (body && tol_[i] >= 0 ? " +- " + std::to_string(tol_[i]) : std::string(" exactly"));
    }
    if (bad) d = "\n  " + name_ + ": " + std::to_string(bad) + " wrong element(s):" + d;
    return d;
  }

 private:
  Buffer* buf_;
  std::string name_;
  std::vector<unsigned char> want_;
  std::vector<double> tol_, ref_;
};

// One collective case of a program test: kind, ranks, channels, count, FIFO geometry, datatype and
// op, root, placement.
struct CollCase {
  weft::CollKind kind = weft::CollKind::kAllReduce;
  int nranks = 2;
  int channels = 1;
  size_t count = 0;
  uint32_t slotBytes = 4096;
  uint32_t nSlots = 8;
  Variant v{ncclInt32, Red::kSum};
  int root = 0;
  bool inPlace = false;

  std::string str() const {
    return std::string(collName(kind)) + " nranks=" + std::to_string(nranks) + " channels=" + std::to_string(channels) +
           " count=" + std::to_string(count) + " slotBytes=" + std::to_string(slotBytes) +
           " nSlots=" + std::to_string(nSlots) + " " + v.name() + " root=" + std::to_string(root) +
           (inPlace ? " in-place" : " out-of-place");
  }
};

}  // namespace weft::sim
