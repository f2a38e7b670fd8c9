// Weft's uneven collectives, weftAllGatherv and weftReduceScatterv (weft.h), beyond the matrix's
// one layout (matrix.cc, vcollLayout): the layouts users have (everything empty, one rank holding
// everything, a vector that does not split evenly, skewed blocks out of rank order) at 2 to 8
// ranks, in place and out of place, with sum, avg and premulsum; and the layout checks: blocks that
// overlap are refused, and ranks that pass different arrays all fail naming both calls.
// The vring/vp2p/vdda variants (variants.cc) run this suite with each algorithm forced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

struct Layout {
  const char* name;
  std::vector<size_t> counts, displs;
  size_t extent() const {
    size_t e = 0;
    for (size_t r = 0; r < counts.size(); ++r) e = std::max(e, displs[r] + counts[r]);
    return e;
  }
};

// Rank order, no gaps: displacements are the running sum.
Layout packed(const char* name, std::vector<size_t> counts) {
  Layout l{name, std::move(counts), {}};
  size_t at = 0;
  for (size_t c : l.counts) {
    l.displs.push_back(at);
    at += c;
  }
  return l;
}

std::vector<Layout> layoutsFor(int n) {
  std::vector<Layout> out;
  out.push_back(packed("all empty", std::vector<size_t>(n, 0)));
  // Only the last rank contributes, more than a FIFO slot holds many times over.
  std::vector<size_t> last(n, 0);
  last[n - 1] = 70001;
  out.push_back(packed("one rank holds everything", last));
  // A vector of 10007 elements cut as evenly as it goes: what a distributed array does.
  std::vector<size_t> ragged;
  for (int r = 0; r < n; ++r) ragged.push_back(10007 / n + (r < 10007 % n ? 1 : 0));
  out.push_back(packed("uneven split", ragged));
  // Rank 0 large, the others tiny or empty, blocks in reverse rank order with gaps between them.
  Layout skew{"skewed, reversed, with gaps", std::vector<size_t>(n), std::vector<size_t>(n)};
  size_t at = 5;
  for (int r = n - 1; r >= 0; --r) {
    skew.counts[r] = r == 0 ? 50000 : (r % 3 == 1 ? 0 : size_t(r));
    skew.displs[r] = at;
    at += skew.counts[r] + 3;
  }
  out.push_back(skew);
  return out;
}

// Every rank's input element e of the vector it holds (ReduceScatterv) or of its block
// (AllGatherv): distinct per rank and element, exact in int64 for any sum here.
int64_t input(int rank, size_t e) { return int64_t(rank + 1) * 1000003 + int64_t(e) * 7 - 11; }
constexpr int64_t kUntouched = -424242;

enum class Call { kAllGathervOut, kAllGathervIn, kReduceScattervSum, kReduceScattervAvgIn, kReduceScattervPreMul };
const Call kCalls[] = {Call::kAllGathervOut, Call::kAllGathervIn, Call::kReduceScattervSum, Call::kReduceScattervAvgIn,
                       Call::kReduceScattervPreMul};
const char* callName(Call c) {
  switch (c) {
    case Call::kAllGathervOut: return "weftAllGatherv out of place";
    case Call::kAllGathervIn: return "weftAllGatherv in place";
    case Call::kReduceScattervSum: return "weftReduceScatterv sum out of place";
    case Call::kReduceScattervAvgIn: return "weftReduceScatterv avg in place";
    case Call::kReduceScattervPreMul: return "weftReduceScatterv premulsum out of place";
  }
  return "?";
}

// One call of one layout on this rank, checked element by element (gaps and the space around the
// blocks must keep what they held). False when the call itself failed.
bool runLayout(RankCtx& ctx, const Layout& l, Call call) {
  const int n = ctx.nranks, r = ctx.rank;
  const size_t ext = l.extent(), mine = l.counts[r], at = l.displs[r];
  const std::string what = std::string(callName(call)) + ", " + l.name + ", " + std::to_string(n) + " ranks";
  ctx.step(what);
  std::vector<int64_t> a, b;
  ncclResult_t res;
  if (call == Call::kAllGathervOut || call == Call::kAllGathervIn) {
    a.assign(ext + 2, kUntouched);  // one spare element: nothing may be written past the extent
    const bool in = call == Call::kAllGathervIn;
    if (!in) b.assign(mine, 0);
    int64_t* own = in ? a.data() + at : b.data();
    for (size_t e = 0; e < mine; ++e) own[e] = input(r, e);
    res = weftAllGatherv(own, a.data(), l.counts.data(), l.displs.data(), ncclInt64, ctx.comm, nullptr);
    if (!ctx.ok(res, what.c_str(), ctx.comm)) return false;
    std::vector<int64_t> want(ext + 2, kUntouched);
    for (int p = 0; p < n; ++p)
      for (size_t e = 0; e < l.counts[p]; ++e) want[l.displs[p] + e] = input(p, e);
    for (size_t i = 0; i < want.size(); ++i)
      if (a[i] != want[i]) {
        ctx.failf("%s: rank %d element %zu is %lld, expected %lld", what.c_str(), r, i, (long long)a[i],
                  (long long)want[i]);
        break;
      }
    return true;
  }
  // ReduceScatterv: the whole vector on every rank, the own block reduced.
  a.assign(ext, 0);
  for (size_t e = 0; e < ext; ++e) a[e] = input(r, e);
  const bool in = call == Call::kReduceScattervAvgIn;
  b.assign(mine + 1, kUntouched);
  int64_t* out = in ? a.data() + at : b.data();
  ncclRedOp_t op = call == Call::kReduceScattervAvgIn ? ncclAvg : ncclSum;
  const int64_t scalar = r + 2;
  if (call == Call::kReduceScattervPreMul &&
      !ctx.ok(ncclRedOpCreatePreMulSum(&op, const_cast<int64_t*>(&scalar), ncclInt64, ncclScalarHostImmediate,
                                       ctx.comm),
              "ncclRedOpCreatePreMulSum", ctx.comm))
    return false;
  res = weftReduceScatterv(a.data(), out, l.counts.data(), l.displs.data(), ncclInt64, op, ctx.comm, nullptr);
  if (call == Call::kReduceScattervPreMul) ctx.ok(ncclRedOpDestroy(op, ctx.comm), "ncclRedOpDestroy", ctx.comm);
  if (!ctx.ok(res, what.c_str(), ctx.comm)) return false;
  for (size_t e = 0; e < mine; ++e) {
    int64_t sum = 0;
    for (int p = 0; p < n; ++p) sum += (call == Call::kReduceScattervPreMul ? p + 2 : 1) * input(p, at + e);
    const int64_t want = call == Call::kReduceScattervAvgIn ? sum / n : sum;
    if (out[e] != want) {
      ctx.failf("%s: rank %d result element %zu is %lld, expected %lld", what.c_str(), r, e, (long long)out[e],
                (long long)want);
      break;
    }
  }
  if (!in && b[mine] != kUntouched) ctx.failf("%s: rank %d: the element after recvbuff was written", what.c_str(), r);
  return true;
}

void runAllLayouts(int nranks) {
  EXPECT_RUN_OK(runRanks(kTier, nranks, [](RankCtx& ctx) {
    for (const Layout& l : layoutsFor(ctx.nranks))
      for (Call c : kCalls)
        if (!runLayout(ctx, l, c)) return;
  }));
}

// Threads: every rank count from 2 to 8. Processes: a few (each run forks its ranks).
TEST(VColl, LayoutsOnTwoToEightRanks) {
  const std::vector<int> counts = kTier == Mode::kProcs ? std::vector<int>{2, 5, 8}
                                                        : std::vector<int>{2, 3, 4, 5, 6, 7, 8};
  for (int n : counts) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    runAllLayouts(n);
  }
}

TEST(VColl, OverlappingBlocksAreRefused) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    std::vector<float> buf(16, 1.0f);
    const size_t counts[] = {4, 4}, overlapping[] = {0, 2};
    ctx.expect(weftAllGatherv(buf.data(), buf.data() + 8, counts, overlapping, ncclFloat32, ctx.comm, nullptr),
               ncclInvalidArgument, "weftAllGatherv with overlapping blocks", ctx.comm);
    if (!mentionsAny(lastError(ctx.comm), {"overlap"}))
      ctx.failf("the error does not say the blocks overlap: \"%s\"", lastError(ctx.comm).c_str());
    ctx.expect(weftReduceScatterv(buf.data(), buf.data() + 8, counts, overlapping, ncclFloat32, ncclSum, ctx.comm,
                                  nullptr),
               ncclInvalidArgument, "weftReduceScatterv with overlapping blocks", ctx.comm);
    // Out of rank order too (block 1 at 0..3, block 0 at 3..6).
    const size_t reversed[] = {3, 0};
    ctx.expect(weftAllGatherv(buf.data(), buf.data() + 8, counts, reversed, ncclFloat32, ctx.comm, nullptr),
               ncclInvalidArgument, "weftAllGatherv with overlapping blocks out of rank order", ctx.comm);
    // An empty block may sit anywhere, even inside another: it covers nothing.
    const size_t oneEmpty[] = {0, 4}, sameStart[] = {2, 0};
    std::vector<float> out(8, 0.0f);
    if (!ctx.ok(weftAllGatherv(buf.data(), out.data(), oneEmpty, sameStart, ncclFloat32, ctx.comm, nullptr),
                "weftAllGatherv with an empty block inside another", ctx.comm))
      return;
    if (out[0] != 1.0f || out[3] != 1.0f || out[4] != 0.0f) ctx.failf("wrong result after the refused calls");
  }));
}

// Ranks that pass different arrays (same total, so only the arrays differ): every rank fails with
// ncclInvalidUsage naming both calls, within a second, instead of exchanging misplaced data.
void expectLayoutMismatch(bool reduceScatter) {
  RunOptions opts;
  opts.deadlineMs = 30000;
  EXPECT_RUN_OK(runRanks(
      kTier, 3,
      [reduceScatter](RankCtx& ctx) {
        std::vector<size_t> counts = {400, 800, 1200}, displs = {0, 400, 1200};
        if (ctx.rank == 0) {
          counts = {800, 400, 1200};
          displs = {0, 800, 1200};
        }
        std::vector<float> send(2400, 1.0f), recv(2400, 0.0f);
        const double t0 = nowSeconds();
        const ncclResult_t r = reduceScatter
                                   ? weftReduceScatterv(send.data(), recv.data(), counts.data(), displs.data(),
                                                        ncclFloat32, ncclSum, ctx.comm, nullptr)
                                   : weftAllGatherv(send.data(), recv.data(), counts.data(), displs.data(), ncclFloat32,
                                                    ctx.comm, nullptr);
        const double took = nowSeconds() - t0;
        const std::string msg = lastError(ctx.comm);
        ctx.expect(r, ncclInvalidUsage, "the call with another rank's arrays", ctx.comm);
        const char* fn = reduceScatter ? "weftReduceScatterv(2400 x float32 in all"
                                       : "weftAllGatherv(2400 x float32 in all";
        if (msg.find(fn) == std::string::npos || msg.find(" but rank ") == std::string::npos)
          ctx.failf("rank %d: the error does not name both calls: \"%s\"", ctx.rank, msg.c_str());
        if (took > 2.0) ctx.failf("rank %d: the mismatch took %.2f s to fail", ctx.rank, took);
      },
      opts));
}

TEST(VColl, AllGathervWithDifferentArraysFailsEveryRank) { expectLayoutMismatch(false); }
TEST(VColl, ReduceScattervWithDifferentArraysFailsEveryRank) { expectLayoutMismatch(true); }

}  // namespace
}  // namespace weft_test
