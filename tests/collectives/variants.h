// The collective test matrix: which of a binary's gtest cases run under which settings. A variant
// is a named environment (tiny FIFOs, a forced algorithm, the network transport, ...) with the
// cases worth running under it. variants.cc holds the table; variant_cases.cc checks it against
// the cases the binary registered and prints it for CTest (--weft-list-variants), so a case is
// picked by its suite, name or matrix parameters and can never drop out of a variant unnoticed.
#pragma once
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "api.h"
#include "coll_cases.h"
#include "harness.h"
#include "matrix.h"

namespace weft_test {

// Matrix cases by parameter; an empty field matches every value. Every value listed must be met by
// a case the selector picks: a value the matrix no longer has is an error, not a silent no-op.
// (Members of MatrixSel and Variant have initializers: GCC 12 warns about designated initializers
// that leave out a member without one.)
struct MatrixSel {
  std::vector<Mode> modes{};  // kThreads and kClique in the threads binary, kProcs in the procs one
  std::vector<Coll> colls{};
  std::vector<int> nranks{};
  std::vector<ncclDataType_t> dtypes{};
  std::string tag{};  // "small" or "big"; empty: both
};

// A set of cases; it must contain at least one case of the binary.
struct Pick {
  enum class Kind { kEvery, kSuite, kTest, kMatrix };
  Kind kind = Kind::kEvery;
  std::string suite;  // kSuite, kTest
  std::string test;   // kTest
  MatrixSel matrix;   // kMatrix
  std::string describe() const;
};
Pick everyCase();
Pick suite(std::string name);
Pick test(std::string suite, std::string name);
Pick matrix(MatrixSel sel);

// Cases that stay registered (CTest shows them as disabled) but do not run, and why.
struct Disabled {
  Pick pick;
  std::string why;
};

struct Variant {
  std::string name{};                 // --weft-variant=NAME; unique within a binary
  std::string prefix{};               // CTest name: "<tier>.<prefix><suite>.<test>" (as before the table existed)
  std::vector<std::string> labels{};  // CTest labels besides the tier's own
  // Set before any test runs, after WEFT_DEVICE=host (every variant runs in host mode).
  std::vector<std::pair<std::string, std::string>> env{};
  std::vector<Pick> picks{};   // the union of these,
  std::vector<Pick> except{};  // less these;
  std::vector<Pick> serial{};  // of the cases picked, those that must run alone (RUN_SERIAL)
  std::vector<Disabled> disabled{};
  int timeoutS = 300;
};

// A binary's variants, and the cases it compiles but runs in none of them (each with why): every
// other case must be in some variant.
struct TierTable {
  std::vector<Variant> variants;
  std::vector<Disabled> notRun;
};
TierTable variantTable(Mode tier);

// The environment a variant's tests run with, WEFT_DEVICE=host first.
std::vector<std::pair<std::string, std::string>> variantEnv(const Variant& v);

// One gtest case of the binary.
struct TestCase {
  std::string suite;                    // "P2P", "Matrix/CollMatrix", "Cases/Mismatch"
  std::string name;                     // "RingShift", "MatchesReference/threads_AllReduce_n4_int8_small"
  const MatrixParam* matrix = nullptr;  // set for the correctness matrix's cases
  std::string fullName() const { return suite + "." + name; }
};

struct VariantCase {
  const TestCase* test = nullptr;
  bool serial = false;
  std::string disabledWhy;  // empty: the case runs
};

struct ResolvedVariant {
  Variant variant;
  std::vector<VariantCase> cases;  // in gtest's registration order
};

// The binary's registered gtest cases and its variants resolved over them. False, with every
// problem written to err, when the table does not fit the binary (a pick that matches nothing, a
// variant without cases, a case in no variant, two tests with one CTest name, ...).
class ResolvedTable {
 public:
  bool resolve(Mode tier, std::ostream& err);
  const std::vector<ResolvedVariant>& variants() const { return variants_; }
  const ResolvedVariant* find(const std::string& name) const;

 private:
  std::vector<TestCase> cases_;
  std::vector<ResolvedVariant> variants_;
};

// --weft-list-variants: one line per variant, then one per case, for the CTest registration
// script (variants.cmake) and the registration check (check_variants.cmake):
//   variant NAME prefix=PREFIX labels=TIER[,LABEL...] timeout=SECONDS env=NAME=value[,...]
//   case VARIANT SUITE.TEST [serial] [disabled: WHY]
void printVariants(Mode tier, const ResolvedTable& table, std::ostream& out);

}  // namespace weft_test
