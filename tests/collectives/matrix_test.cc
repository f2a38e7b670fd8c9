// The correctness matrix: every collective x datatype x reduction x in-place/out-of-place x rank
// count x element count, trimmed to what 2 cores can run in a few minutes. One test case is one
// (mode, collective, nranks, datatype) with its own communicator; inside it every rank walks the
// same list of calls (ops x counts x placements x roots), so a case costs one init, not hundreds.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "coll_cases.h"
#include "dtypes.h"
#include "harness.h"

namespace weft_test {
namespace {

struct MatrixParam {
  Mode mode = Mode::kThreads;
  Coll coll = Coll::kAllReduce;
  int nranks = 2;
  ncclDataType_t dtype = ncclFloat32;
  std::vector<Red> reds;
  std::vector<size_t> counts;
  const char* tag = "";  // "small" or "big": part of the test name
};

std::string describe(const MatrixParam& p) {
  return std::string(modeName(p.mode)) + "_" + collName(p.coll) + "_n" + std::to_string(p.nranks) + "_" +
         dtypeInfo(p.dtype).name + "_" + p.tag;
}

std::string paramName(const ::testing::TestParamInfo<MatrixParam>& info) { return describe(info.param); }

// gtest prints the parameter of a failing case with this (instead of its raw bytes).
void PrintTo(const MatrixParam& p, std::ostream* os) { *os << describe(p); }

std::vector<CollCase> expand(const MatrixParam& p) {
  std::vector<CollCase> cases;
  const std::vector<Red> onlySum = {Red::kSum};
  const std::vector<Red>& reds = collReduces(p.coll) ? p.reds : onlySum;
  for (Red red : reds) {
    for (size_t count : p.counts) {
      // 0: out of place, 1: in place, 2: in place on even ranks only (placement is per rank).
      for (int inPlace = 0; inPlace < 3; ++inPlace) {
        if (inPlace ? !collAllowsInPlace(p.coll) : !collAllowsOutOfPlace(p.coll)) continue;
        if (inPlace == 2 && (p.nranks < 2 || !collAllowsOutOfPlace(p.coll) || count < 1023)) continue;
        // Large counts also run on buffers aligned only to their element size.
        for (int shifted = 0; shifted < (count >= 1023 ? 2 : 1); ++shifted) {
          const std::vector<int> roots = collHasRoot(p.coll) ? rootsFor(p.nranks) : std::vector<int>{0};
          for (int root : roots) {
            CollCase c;
            c.coll = p.coll;
            c.dtype = p.dtype;
            c.red = red;
            c.count = count;
            c.inPlace = inPlace != 0;
            c.evenRanksOnly = inPlace == 2;
            c.shifted = shifted != 0;
            c.root = root;
            c.seed = static_cast<uint32_t>(cases.size() + 1);
            cases.push_back(c);
          }
        }
      }
    }
  }
  return cases;
}

const std::vector<size_t> kSmallCounts = {0, 1, 7, 1023};
constexpr size_t kBigCount = 1000003;

// One datatype of each element size: enough for collectives that only move bytes.
const std::vector<ncclDataType_t> kOneTypePerSize = {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64};
// The reducing types worth repeating at larger rank counts (every format and signedness family).
const std::vector<ncclDataType_t> kReduceTypes = {ncclUint8,   ncclInt32,    ncclInt64,      ncclFloat16,   ncclFloat32,
                                                  ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};

void addFull(std::vector<MatrixParam>* out, Mode mode, int nranks, const std::vector<ncclDataType_t>& dataTypes,
             const std::vector<ncclDataType_t>& reduceTypes, const std::vector<Red>& reds,
             const std::vector<size_t>& counts) {
  for (Coll coll : allColls()) {
    for (ncclDataType_t dt : collReduces(coll) ? reduceTypes : dataTypes) {
      out->push_back({mode, coll, nranks, dt, reds, counts, "small"});
    }
  }
}

void addBig(std::vector<MatrixParam>* out, Mode mode, Coll coll, int nranks, ncclDataType_t dt, Red red) {
  out->push_back({mode, coll, nranks, dt, {red}, {kBigCount}, "big"});
}

std::vector<MatrixParam> threadsMatrix() {
  std::vector<MatrixParam> v;
  // Every datatype x every op at small counts for 1 to 5 ranks.
  for (int n : {1, 2, 3, 4, 5}) addFull(&v, Mode::kThreads, n, allDtypes(), allDtypes(), allReds(), kSmallCounts);
  // 8 ranks on 2 cores: every format family and op, one type per size for data movement.
  addFull(&v, Mode::kThreads, 8, kOneTypePerSize, kReduceTypes, allReds(), kSmallCounts);
  // A prime and a larger rank count, on a few combinations.
  for (int n : {7, 16})
    addFull(&v, Mode::kThreads, n, {ncclInt8}, {ncclFloat32, ncclBfloat16}, {Red::kSum, Red::kAvg, Red::kPreMulDev},
            {0, 7, 1023});
  // A million and three elements: float sum and int32 max everywhere but 8 ranks x all, and
  // every collective once.
  for (int n : {2, 3, 4, 5, 8}) addBig(&v, Mode::kThreads, Coll::kAllReduce, n, ncclFloat32, Red::kSum);
  for (int n : {2, 3, 4, 5}) addBig(&v, Mode::kThreads, Coll::kAllReduce, n, ncclInt32, Red::kMax);
  addBig(&v, Mode::kThreads, Coll::kAllReduce, 4, ncclBfloat16, Red::kAvg);
  addBig(&v, Mode::kThreads, Coll::kAllReduce, 3, ncclFloat8e4m3, Red::kPreMulDev);
  addBig(&v, Mode::kThreads, Coll::kReduceScatter, 3, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kReduceScatter, 5, ncclInt32, Red::kMax);
  addBig(&v, Mode::kThreads, Coll::kReduce, 3, ncclFloat64, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kReduce, 4, ncclInt32, Red::kMax);
  addBig(&v, Mode::kThreads, Coll::kAllGather, 4, ncclBfloat16, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kBroadcast, 5, ncclInt8, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kBcast, 2, ncclUint8, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kAlltoAll, 3, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kGather, 3, ncclFloat16, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kScatter, 3, ncclFloat16, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kAlltoAllv, 3, ncclInt32, Red::kSum);
  // One thread driving every rank (ncclCommInitAll + groups), as single-process multi-GPU code does.
  for (int n : {2, 3, 4})
    addFull(&v, Mode::kClique, n, {ncclInt8, ncclFloat32}, {ncclFloat32, ncclBfloat16, ncclInt8, ncclFloat8e5m2},
            {Red::kSum, Red::kMin, Red::kAvg, Red::kPreMulImm, Red::kPreMulDev}, {0, 1, 1023});
  addBig(&v, Mode::kClique, Coll::kAllReduce, 3, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kClique, Coll::kReduceScatter, 2, ncclInt32, Red::kMax);
  return v;
}

std::vector<MatrixParam> procsMatrix() {
  std::vector<MatrixParam> v;
  for (int n : {2, 3}) addFull(&v, Mode::kProcs, n, kOneTypePerSize, allDtypes(), allReds(), kSmallCounts);
  for (int n : {4, 5})
    addFull(&v, Mode::kProcs, n, {ncclInt8, ncclFloat64}, {ncclInt32, ncclFloat32, ncclBfloat16, ncclFloat8e4m3},
            {Red::kSum, Red::kProd, Red::kMax, Red::kAvg, Red::kPreMulDev}, kSmallCounts);
  addFull(&v, Mode::kProcs, 8, {ncclFloat16}, {ncclFloat32, ncclInt64}, {Red::kSum, Red::kMin, Red::kPreMulImm},
          {1, 1023});
  for (int n : {2, 3, 4, 8}) addBig(&v, Mode::kProcs, Coll::kAllReduce, n, ncclFloat32, Red::kSum);
  for (int n : {3, 5}) addBig(&v, Mode::kProcs, Coll::kAllReduce, n, ncclInt32, Red::kMax);
  addBig(&v, Mode::kProcs, Coll::kReduceScatter, 2, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kReduce, 3, ncclBfloat16, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kBroadcast, 3, ncclInt8, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kAllGather, 3, ncclFloat64, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kAlltoAll, 3, ncclFloat16, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kAlltoAllv, 4, ncclInt8, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kGather, 4, ncclInt32, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kScatter, 2, ncclFloat32, Red::kSum);
  return v;
}

std::vector<MatrixParam> matrixFor(Mode tier) { return tier == Mode::kProcs ? procsMatrix() : threadsMatrix(); }

class CollMatrix : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(CollMatrix, MatchesReference) {
  const MatrixParam& p = GetParam();
  const std::vector<CollCase> cases = expand(p);
  RunOptions opts;
  opts.deadlineMs = 120000;
  if (p.mode == Mode::kClique) {
    EXPECT_RUN_OK(runClique(p.nranks, [&](CliqueCtx& ctx) {
      for (const CollCase& c : cases)
        if (!runCaseOnClique(c, ctx)) return;
    }, opts));
  } else {
    EXPECT_RUN_OK(runRanks(p.mode, p.nranks, [&](RankCtx& ctx) {
      for (const CollCase& c : cases)
        if (!runCaseOnRank(c, ctx)) return;  // the ranks may now be out of step: stop here
    }, opts));
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, CollMatrix, ::testing::ValuesIn(matrixFor(kTier)), paramName);

}  // namespace
}  // namespace weft_test
