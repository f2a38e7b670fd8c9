// Entry point of both collective suites. Weft reads its environment once per process, so a
// variant's settings (variants.cc) are set here, before any test runs:
//   --weft-variant=NAME     run with that variant's environment; without --gtest_filter, run its
//                           cases (CTest passes both: one case per test process); with a negative
//                           filter only (--gtest_filter=-PATTERNS), its cases less those
//                           (tools/test_sanitizers.sh leaves out the large cases that way)
//   --weft-list-variants    print the variant table resolved over this binary's cases (variants.h
//                           has the format) and exit; nonzero when the table does not fit the binary
// A run whose filter selects no test fails: a case that no longer exists must not pass as empty.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <utility>

#include "harness.h"
#include "variants.h"

namespace {

// Counts the tests this process has started (see weft_test::processIsFresh).
class TestCounter : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { weft_test::noteTestStarted(); }
};

// Stops a variant's run before its first test when the filter chose a case outside the variant.
class VariantGuard : public ::testing::EmptyTestEventListener {
 public:
  VariantGuard(std::string variant, std::set<std::string> cases)
      : variant_(std::move(variant)), cases_(std::move(cases)) {}

 private:
  void OnTestIterationStart(const ::testing::UnitTest& unit, int) override {
    for (int i = 0; i < unit.total_test_suite_count(); ++i) {
      const ::testing::TestSuite& s = *unit.GetTestSuite(i);
      for (int j = 0; j < s.total_test_count(); ++j) {
        const ::testing::TestInfo& t = *s.GetTestInfo(j);
        const std::string name = std::string(s.name()) + "." + t.name();
        if (t.should_run() && !cases_.count(name)) {
          fprintf(stderr, "%s is not a case of variant %s (variants.cc)\n", name.c_str(), variant_.c_str());
          std::exit(1);
        }
      }
    }
  }

  std::string variant_;
  std::set<std::string> cases_;
};

// WEFT_TEST_ENV="NAME=value,NAME=value": more variables to set before any test runs, for trying
// settings by hand; they override the variant's.
void applyTestEnv() {
  const char* spec = getenv("WEFT_TEST_ENV");
  if (spec == nullptr) return;
  std::string all(spec);
  for (size_t at = 0; at <= all.size();) {
    size_t end = all.find(',', at);
    if (end == std::string::npos) end = all.size();
    const std::string item = all.substr(at, end - at);
    const size_t eq = item.find('=');
    if (eq != std::string::npos && eq > 0) setenv(item.substr(0, eq).c_str(), item.substr(eq + 1).c_str(), 1);
    at = end + 1;
  }
}

// Removes the --weft-* arguments, which gtest does not know.
void takeOwnFlags(int* argc, char** argv, std::string* variant, bool* list) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    if (strncmp(argv[i], "--weft-variant=", 15) == 0) {
      *variant = argv[i] + 15;
    } else if (strcmp(argv[i], "--weft-list-variants") == 0) {
      *list = true;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  argv[out] = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  using weft_test::kTier;
  std::string variantName;
  bool list = false;
  takeOwnFlags(&argc, argv, &variantName, &list);
  // The cases are known only once gtest registered them, but the environment must be set first:
  // it comes from the table alone, and the table is checked against the cases right after.
  if (!variantName.empty()) {
    bool known = false;
    for (const weft_test::Variant& v : weft_test::variantTable(kTier).variants) {
      if (v.name != variantName) continue;
      known = true;
      for (const auto& [name, value] : weft_test::variantEnv(v)) setenv(name.c_str(), value.c_str(), 1);
    }
    if (!known) {
      fprintf(stderr, "no variant %s in the %s binary (variants.cc)\n", variantName.c_str(),
              weft_test::modeName(kTier));
      return 1;
    }
  }
  applyTestEnv();
  setenv("WEFT_DEVICE", "host", 0);
  // Below the harness's 60 s per-rank deadline (RunOptions): a wait stuck inside Weft then ends with
  // Weft's own message, which names the rank, the peer and the operation, instead of the harness
  // killing a rank that says nothing. Tests and variants that set their own keep it.
  setenv("WEFT_TIMEOUT_MS", "40000", 0);
  ::testing::InitGoogleTest(&argc, argv);

  weft_test::ResolvedTable table;
  if (list || !variantName.empty()) {
    if (!table.resolve(kTier, std::cerr)) return 1;
  }
  if (list) {
    weft_test::printVariants(kTier, table, std::cout);
    return 0;
  }
  if (const weft_test::ResolvedVariant* rv = table.find(variantName)) {
    std::set<std::string> cases;
    std::string filter;
    for (const weft_test::VariantCase& c : rv->cases) {
      cases.insert(c.test->fullName());
      if (c.disabledWhy.empty()) filter += (filter.empty() ? "" : ":") + c.test->fullName();
    }
    const std::string given = GTEST_FLAG_GET(filter);
    if (given == "*") {
      GTEST_FLAG_SET(filter, filter.empty() ? "-*" : filter);
    } else if (given.size() > 1 && given[0] == '-' && !filter.empty()) {
      GTEST_FLAG_SET(filter, filter + given);  // the variant's cases, less those the negative filter names
    }
    ::testing::UnitTest::GetInstance()->listeners().Append(new VariantGuard(variantName, std::move(cases)));
    printf("variant %s:", variantName.c_str());
    for (const auto& [name, value] : weft_test::variantEnv(rv->variant)) printf(" %s=%s", name.c_str(), value.c_str());
    printf("\n");
  }
  ::testing::UnitTest::GetInstance()->listeners().Append(new TestCounter);
  const int rc = RUN_ALL_TESTS();
  if (!GTEST_FLAG_GET(list_tests) && ::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    fprintf(stderr, "the filter selects no test: nothing ran\n");
    return 1;
  }
  return rc;
}
