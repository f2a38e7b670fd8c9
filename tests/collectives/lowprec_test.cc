// Low-precision (FP8 e4m3 + one float32 scale per 256 elements) AllReduce, AllGather,
// ReduceScatter and AlltoAll, run under RCCL_LOW_PRECISION_ENABLE=1 and
// WEFT_LOW_PRECISION_MIN_BYTES=0 (set for these tests only, by the lowprec variant in variants.cc).
//
// The tolerances are lowprec_check.h's.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness.h"
#include "lowprec_check.h"

namespace weft_test {
namespace {

// Runs one collective on every rank (host buffers, one element past an aligned start: the
// low-precision path takes any alignment) and checks its output.
void runCase(RankCtx& ctx, const LowpCase& c) {
  const size_t es = c.elemBytes();
  std::vector<char> send(c.inElems() * es + 16), recv(c.outElems() * es + 16);
  void* sbuf = send.data() + es;
  void* rbuf = recv.data() + es;
  c.fillInput(sbuf);
  if (!ctx.ok(c.issue(sbuf, rbuf, ctx.comm, nullptr), c.what().c_str(), ctx.comm)) return;
  c.check(rbuf, &ctx);
}

void runAll(RankCtx& ctx, const std::vector<size_t>& counts, const std::vector<ncclDataType_t>& types) {
  for (ncclDataType_t dt : types)
    for (LowpData d : {LowpData::kNormal, LowpData::kHuge, LowpData::kEqual})
      for (LowpOp op : {LowpOp::kAllReduce, LowpOp::kAllGather, LowpOp::kReduceScatter, LowpOp::kAlltoAll})
        for (size_t count : counts) {
          if (d != LowpData::kNormal && count > 5000) continue;
          runCase(ctx, LowpCase{op, dt, d, count, ctx.rank, ctx.nranks});
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
