#include "lowprec_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "lowp.h"

namespace weft_test {
namespace {

// Element i of rank r's input, as a double holding the exact value of the stored element.
struct Input {
  ncclDataType_t dt;
  LowpData data;
  double at(int r, size_t i) const {
    // A counter-based generator (splitmix64): any element of any rank in O(1), so every rank can
    // compute the exact result without the others' buffers.
    auto mix = [](uint64_t z) {
      z += 0x9e3779b97f4a7c15ull;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return z ^ (z >> 31);
    };
    const uint64_t a = mix((uint64_t(r) << 40) ^ i), b = mix(a);
    const double u1 = (double(a >> 11) + 0.5) * 0x1p-53, u2 = double(b >> 11) * 0x1p-53;
    double v;
    if (data == LowpData::kEqual)
      v = 3.25;
    else if (data == LowpData::kHuge && dt == ncclFloat16)  // 400..6300: sums of 8 stay finite
      v = ((b & 1) ? 1 : -1) * std::pow(10.0, 2.6 + 1.2 * u1);
    else if (data == LowpData::kHuge)
      v = ((b & 1) ? 1 : -1) * std::pow(10.0, 4.0 + 2.0 * u1);
    else
      v = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    return stored(v);
  }
  double stored(double v) const {
    if (dt == ncclFloat32) return double(float(v));
    const MiniFloat& f = dt == ncclBfloat16 ? kBfloat16 : kFloat16;
    return decodeMiniFloat(f, encodeMiniFloat(f, v));
  }
  void write(void* buf, size_t i, double v) const {
    if (dt == ncclFloat32) {
      float f = float(v);
      memcpy(static_cast<char*>(buf) + 4 * i, &f, 4);
    } else {
      uint16_t b = static_cast<uint16_t>(encodeMiniFloat(dt == ncclBfloat16 ? kBfloat16 : kFloat16, v));
      memcpy(static_cast<char*>(buf) + 2 * i, &b, 2);
    }
  }
  double read(const void* buf, size_t i) const {
    if (dt == ncclFloat32) {
      float f;
      memcpy(&f, static_cast<const char*>(buf) + 4 * i, 4);
      return f;
    }
    uint16_t b;
    memcpy(&b, static_cast<const char*>(buf) + 2 * i, 2);
    return decodeMiniFloat(dt == ncclBfloat16 ? kBfloat16 : kFloat16, b);
  }
  double outUlp(double v) const {
    return dt == ncclFloat32 ? 0 : std::fabs(v) * (dt == ncclBfloat16 ? 0x1p-8 : 0x1p-11);
  }
};

uint64_t hashBytes(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

struct Stats {
  double maxRel = 0, sumRel = 0;
  size_t n = 0;
  void add(double err, double exact, double rms) {
    double rel = err / std::max(std::fabs(exact), rms);
    maxRel = std::max(maxRel, rel);
    sumRel += rel;
    ++n;
  }
};

const char* dataName(LowpData d) {
  return d == LowpData::kNormal ? "normal" : d == LowpData::kHuge ? "1e4..1e6" : "equal";
}

const char* dataTypeName(ncclDataType_t dt) {
  return dt == ncclFloat32 ? "float32" : dt == ncclBfloat16 ? "bfloat16" : "float16";
}

const char* opName(LowpOp o) {
  return o == LowpOp::kAllReduce       ? "AllReduce"
         : o == LowpOp::kAllGather     ? "AllGather"
         : o == LowpOp::kReduceScatter ? "ReduceScatter"
                                       : "AlltoAll";
}

}  // namespace

size_t LowpCase::inElems() const {
  return op == LowpOp::kReduceScatter || op == LowpOp::kAlltoAll ? nranks * count : count;  // n blocks
}

size_t LowpCase::outElems() const {
  return op == LowpOp::kAllGather || op == LowpOp::kAlltoAll ? nranks * count : count;
}

std::string LowpCase::what() const {
  return std::string(opName(op)) + " " + dataTypeName(dt) + " " + dataName(data) + " count " + std::to_string(count);
}

void LowpCase::fillInput(void* buf) const {
  const Input in{dt, data};
  for (size_t i = 0; i < inElems(); ++i) in.write(buf, i, in.at(rank, i));
}

ncclResult_t LowpCase::issue(const void* send, void* recv, ncclComm_t comm, void* stream) const {
  auto s = static_cast<WEFT_STREAM_T>(stream);
  switch (op) {
    case LowpOp::kAllReduce: return ncclAllReduce(send, recv, count, dt, ncclSum, comm, s);
    case LowpOp::kAllGather: return ncclAllGather(send, recv, count, dt, comm, s);
    case LowpOp::kReduceScatter: return ncclReduceScatter(send, recv, count, dt, ncclSum, comm, s);
    case LowpOp::kAlltoAll: return ncclAlltoAll(send, recv, count, dt, comm, s);
  }
  return ncclInvalidArgument;
}

void LowpCase::check(const void* out, Reporter* rep) const {
  const Input in{dt, data};
  const int n = nranks, r = rank;
  const size_t outN = outElems();
  // Exact values and magnitudes in double. absMax, the largest input this rank's output depends
  // on, bounds the subnormal step of every block involved (blocks never straddle two ranks' data).
  double absMax = 0, sq = 0;
  std::vector<double> exact(outN), mag(outN);
  for (size_t i = 0; i < outN; ++i) {
    if (op == LowpOp::kAllGather || op == LowpOp::kAlltoAll) {
      const int p = int(i / count);
      exact[i] = in.at(p, op == LowpOp::kAllGather ? i % count : r * count + i % count);
      mag[i] = std::fabs(exact[i]);
      absMax = std::max(absMax, mag[i]);
    } else {
      const size_t at = op == LowpOp::kAllReduce ? i : r * count + i;
      for (int p = 0; p < n; ++p) {
        const double x = in.at(p, at);
        exact[i] += x;
        mag[i] += std::fabs(x);
        absMax = std::max(absMax, std::fabs(x));
      }
    }
    sq += exact[i] * exact[i];
  }
  const double rms = std::sqrt(sq / std::max<size_t>(1, outN)) + 1e-30;
  Stats st;
  for (size_t i = 0; i < outN; ++i) {
    const double got = in.read(out, i);
    const double twice = op == LowpOp::kAllReduce ? std::fabs(exact[i]) : 0;
    const double bound = 0x1p-4 * (mag[i] + twice) * 1.01 + n * absMax * 0x1p-18 + 1.1 * in.outUlp(exact[i]);
    const double err = std::fabs(got - exact[i]);
    st.add(err, exact[i], rms);
    if (!(err <= bound)) {
      rep->failf("%s: element %zu is %.9g, exact %.9g, error %.3g above the bound %.3g", what().c_str(), i, got,
                 exact[i], err, bound);
      return;
    }
  }
  if (op == LowpOp::kAllReduce || op == LowpOp::kAllGather) rep->digest(what(), hashBytes(out, outN * elemBytes()));
  if (r == 0)
    printf("  %-13s %-8s %-8s n=%d count=%-7zu max rel error %.4f  mean %.5f\n", opName(op), dataTypeName(dt),
           dataName(data), n, count, st.maxRel, st.n ? st.sumRel / st.n : 0.0);
  // Random data must show FP8's rounding: an exact result would mean the exact path ran instead.
  if (op == LowpOp::kAllReduce && data == LowpData::kNormal && count > 1000 && st.maxRel == 0)
    rep->fail(what() + ": the result is exact, so the low-precision path did not run");
}

}  // namespace weft_test
