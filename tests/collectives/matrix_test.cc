// The correctness matrix (its cases: matrix.cc). One test case is one (mode, collective, nranks,
// datatype) with its own communicator; inside it every rank walks the same list of calls (ops x
// counts x placements x roots), so a case costs one init, not hundreds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coll_cases.h"
#include "harness.h"
#include "matrix.h"

namespace weft_test {
namespace {

std::string paramName(const ::testing::TestParamInfo<MatrixParam>& info) { return matrixCaseName(info.param); }

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

class CollMatrix : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(CollMatrix, MatchesReference) {
  const MatrixParam& p = GetParam();
  const std::vector<CollCase> cases = expand(p);
  RunOptions opts;
  opts.deadlineMs = 120000;
  if (p.mode == Mode::kClique) {
    EXPECT_RUN_OK(runClique(
        p.nranks,
        [&](CliqueCtx& ctx) {
          for (const CollCase& c : cases)
            if (!runCaseOnClique(c, ctx)) return;
        },
        opts));
  } else {
    EXPECT_RUN_OK(runRanks(
        p.mode, p.nranks,
        [&](RankCtx& ctx) {
          for (const CollCase& c : cases)
            if (!runCaseOnRank(c, ctx)) return;  // the ranks may now be out of step: stop here
        },
        opts));
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, CollMatrix, ::testing::ValuesIn(matrixFor(kTier)), paramName);

}  // namespace
}  // namespace weft_test
