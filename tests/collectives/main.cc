// Entry point of both collective suites. Weft reads WEFT_DEVICE once per process; ctest sets it
// for every test, and a direct run of the binary gets the same default here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "harness.h"

namespace {

// Counts the tests this process has started (see weft_test::processIsFresh).
class TestCounter : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { weft_test::noteTestStarted(); }
};

}  // namespace

// WEFT_TEST_ENV="NAME=value,NAME=value": variables to set before any test runs. CMake's
// gtest_discover_tests splits a list-valued ENVIRONMENT property apart and keeps only its first
// entry, so the suite's variants pass their settings through this one variable.
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

int main(int argc, char** argv) {
  applyTestEnv();
  setenv("WEFT_DEVICE", "host", 0);
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new TestCounter);
  return RUN_ALL_TESTS();
}
