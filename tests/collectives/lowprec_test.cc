// Low-precision (FP8 e4m3 + one float32 scale per 256 elements) AllReduce, AllGather,
// ReduceScatter and AlltoAll, run under RCCL_LOW_PRECISION_ENABLE=1 and
// WEFT_LOW_PRECISION_MIN_BYTES=0 (set for these tests only, by the lowprec variant in variants.cc).
//
// Tolerances, from the format: each quantization keeps 3 mantissa bits (relative error <= 2^-4
// of the element) plus half an e4m3 subnormal step of its block (<= blockMax * 2^-18). AllReduce
// rounds twice (the inputs, then the sum), so an element's error is bounded by
//   2^-4 * (sum_p |x_p| + |exact|) + nranks * max|x| * 2^-18 + the output type's rounding,
// ReduceScatter by 2^-4 * sum_p |x_p| + ..., AllGather and AlltoAll by 2^-4 * |x| + .... Every case
// prints its max and mean relative error (|error| / max(|exact|, rms of the exact output)).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"
#include "lowp.h"

namespace weft_test {
namespace {

enum class Data { kNormal, kHuge, kEqual };

const char* dataName(Data d) { return d == Data::kNormal ? "normal" : d == Data::kHuge ? "1e4..1e6" : "equal"; }

// Element i of rank r's input, as a double holding the exact value of the stored element.
struct Input {
  ncclDataType_t dt;
  Data data;
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
    if (data == Data::kEqual)
      v = 3.25;
    else if (data == Data::kHuge && dt == ncclFloat16)  // 400..6300: sums of 8 stay finite
      v = ((b & 1) ? 1 : -1) * std::pow(10.0, 2.6 + 1.2 * u1);
    else if (data == Data::kHuge)
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
  size_t size() const { return dt == ncclFloat32 ? 4 : 2; }
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

const char* dataTypeName(ncclDataType_t dt) {
  return dt == ncclFloat32 ? "float32" : dt == ncclBfloat16 ? "bfloat16" : "float16";
}

enum class Op { kAllReduce, kAllGather, kReduceScatter, kAlltoAll };
const char* opName(Op o) {
  return o == Op::kAllReduce       ? "AllReduce"
         : o == Op::kAllGather     ? "AllGather"
         : o == Op::kReduceScatter ? "ReduceScatter"
                                   : "AlltoAll";
}

// Runs one collective on every rank and checks its output element by element against the bound.
void runCase(RankCtx& ctx, Op op, const Input& in, size_t count) {
  const int n = ctx.nranks, r = ctx.rank;
  const bool blocks = op == Op::kReduceScatter || op == Op::kAlltoAll;  // input is n blocks
  const size_t inElems = blocks ? n * count : count;
  const size_t outElems = op == Op::kAllGather || op == Op::kAlltoAll ? n * count : count;
  std::vector<char> send(inElems * in.size() + 16), recv(outElems * in.size() + 16);
  // Buffers one element past an aligned start: the low-precision path takes any alignment.
  void* sbuf = send.data() + in.size();
  void* rbuf = recv.data() + in.size();
  for (size_t i = 0; i < inElems; ++i) in.write(sbuf, i, in.at(r, i));
  ncclResult_t res = ncclSuccess;
  switch (op) {
    case Op::kAllReduce: res = ncclAllReduce(sbuf, rbuf, count, in.dt, ncclSum, ctx.comm, nullptr); break;
    case Op::kAllGather: res = ncclAllGather(sbuf, rbuf, count, in.dt, ctx.comm, nullptr); break;
    case Op::kReduceScatter: res = ncclReduceScatter(sbuf, rbuf, count, in.dt, ncclSum, ctx.comm, nullptr); break;
    case Op::kAlltoAll: res = ncclAlltoAll(sbuf, rbuf, count, in.dt, ctx.comm, nullptr); break;
  }
  const std::string what = std::string(opName(op)) + " " + dataTypeName(in.dt) + " " + dataName(in.data) + " count " +
                           std::to_string(count);
  if (!ctx.ok(res, what.c_str(), ctx.comm)) return;
  // Exact values and magnitudes in double. absMax, the largest input this rank's output depends
  // on, bounds the subnormal step of every block involved (blocks never straddle two ranks' data).
  double absMax = 0, sq = 0;
  std::vector<double> exact(outElems), mag(outElems);
  for (size_t i = 0; i < outElems; ++i) {
    if (op == Op::kAllGather || op == Op::kAlltoAll) {
      const int p = int(i / count);
      exact[i] = in.at(p, op == Op::kAllGather ? i % count : r * count + i % count);
      mag[i] = std::fabs(exact[i]);
      absMax = std::max(absMax, mag[i]);
    } else {
      const size_t at = op == Op::kAllReduce ? i : r * count + i;
      for (int p = 0; p < n; ++p) {
        const double x = in.at(p, at);
        exact[i] += x;
        mag[i] += std::fabs(x);
        absMax = std::max(absMax, std::fabs(x));
      }
    }
    sq += exact[i] * exact[i];
  }
  const double rms = std::sqrt(sq / std::max<size_t>(1, outElems)) + 1e-30;
  Stats st;
  for (size_t i = 0; i < outElems; ++i) {
    const double got = in.read(rbuf, i);
    const double twice = op == Op::kAllReduce ? std::fabs(exact[i]) : 0;
    const double bound = 0x1p-4 * (mag[i] + twice) * 1.01 + n * absMax * 0x1p-18 + 1.1 * in.outUlp(exact[i]);
    const double err = std::fabs(got - exact[i]);
    st.add(err, exact[i], rms);
    if (!(err <= bound)) {
      ctx.failf("%s: element %zu is %.9g, exact %.9g, error %.3g above the bound %.3g", what.c_str(), i, got, exact[i],
                err, bound);
      return;
    }
  }
  if (op == Op::kAllReduce || op == Op::kAllGather) ctx.digest(what, hashBytes(rbuf, outElems * in.size()));
  if (r == 0)
    printf("  %-13s %-8s %-8s n=%d count=%-7zu max rel error %.4f  mean %.5f\n", opName(op), dataTypeName(in.dt),
           dataName(in.data), n, count, st.maxRel, st.n ? st.sumRel / st.n : 0.0);
  // Random data must show FP8's rounding: an exact result would mean the exact path ran instead.
  if (op == Op::kAllReduce && in.data == Data::kNormal && count > 1000 && st.maxRel == 0)
    ctx.fail(what + ": the result is exact, so the low-precision path did not run");
}

void runAll(RankCtx& ctx, const std::vector<size_t>& counts, const std::vector<ncclDataType_t>& types) {
  for (ncclDataType_t dt : types)
    for (Data d : {Data::kNormal, Data::kHuge, Data::kEqual})
      for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kAlltoAll})
        for (size_t count : counts) {
          if (d != Data::kNormal && count > 5000) continue;
          runCase(ctx, op, Input{dt, d}, count);
          if (ctx.failed()) return;
        }
}

TEST(LowPrecisionColl, AllCollectivesWithinBound) {
  for (int n : kTier == Mode::kProcs ? std::vector<int>{3} : std::vector<int>{2, 5})
    EXPECT_RUN_OK(runRanks(kTier, n, [&](RankCtx& ctx) {
      runAll(ctx, {1, 255, 257, 4099, 50003}, {ncclFloat32, ncclBfloat16, ncclFloat16});
    }));
}

TEST(LowPrecisionColl, EightRanks) {
  EXPECT_RUN_OK(runRanks(kTier, 8, [&](RankCtx& ctx) { runAll(ctx, {3, 20001}, {ncclFloat32, ncclBfloat16}); }));
}

// Ops other than sum, and types other than float32/bfloat16/float16, keep their exact algorithms.
TEST(LowPrecisionColl, OtherOpsAndTypesStayExact) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [&](RankCtx& ctx) {
    const size_t count = 10007;
    std::vector<float> in(count), out(count);
    std::vector<double> din(count), dout(count);
    for (size_t i = 0; i < count; ++i) {
      in[i] = float(i % 977) * 0.37f + float(ctx.rank);
      din[i] = in[i];
    }
    if (!ctx.ok(ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclMax, ctx.comm, nullptr), "max")) return;
    for (size_t i = 0; i < count; ++i)
      if (out[i] != float(i % 977) * 0.37f + float(ctx.nranks - 1))
        return ctx.failf("max: element %zu is %g", i, out[i]);
    if (!ctx.ok(ncclAllReduce(din.data(), dout.data(), count, ncclFloat64, ncclSum, ctx.comm, nullptr), "f64 sum"))
      return;
    for (size_t i = 0; i < count; ++i) {
      double e = 0;
      for (int p = 0; p < ctx.nranks; ++p) e += double(float(i % 977) * 0.37f + float(p));
      if (std::fabs(dout[i] - e) > 1e-9 * std::fabs(e))
        return ctx.failf("float64 sum: element %zu is %.17g, exact %.17g", i, dout[i], e);
    }
  }));
}

}  // namespace
}  // namespace weft_test
