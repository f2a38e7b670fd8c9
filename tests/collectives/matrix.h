// The correctness matrix's test cases: one (mode, collective, nranks, datatype) with the
// reductions and element counts it walks. matrix_test.cc runs them; variants.cc picks among them
// by these fields, so they live apart from the test itself.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "api.h"
#include "coll_cases.h"
#include "harness.h"

namespace weft_test {

struct MatrixParam {
  Mode mode = Mode::kThreads;
  Coll coll = Coll::kAllReduce;
  int nranks = 2;
  ncclDataType_t dtype = ncclFloat32;
  std::vector<Red> reds;
  std::vector<size_t> counts;
  const char* tag = "";  // "small" or "big": part of the test name
};

// The gtest suite and test of the matrix (INSTANTIATE_TEST_SUITE_P(Matrix, CollMatrix, ...) over
// TEST_P(CollMatrix, MatchesReference)): a case is kMatrixSuite "." kMatrixTest "/" its name.
inline constexpr const char* kMatrixSuite = "Matrix/CollMatrix";
inline constexpr const char* kMatrixTest = "MatchesReference";

// "threads_AllReduce_n4_float32_small": the case's part of its gtest name.
std::string matrixCaseName(const MatrixParam& p);
// gtest prints the parameter of a failing case with this (instead of its raw bytes).
void PrintTo(const MatrixParam& p, std::ostream* os);

// Every case of a tier's binary: threads (with the clique cases) or procs.
const std::vector<MatrixParam>& matrixFor(Mode tier);

}  // namespace weft_test
