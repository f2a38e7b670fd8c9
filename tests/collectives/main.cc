// Entry point of both collective suites. Weft reads WEFT_DEVICE once per process; ctest sets it
// for every test, and a direct run of the binary gets the same default here.
#include <gtest/gtest.h>

#include <cstdlib>

#include "harness.h"

namespace {

// Counts the tests this process has started (see weft_test::processIsFresh).
class TestCounter : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { weft_test::noteTestStarted(); }
};

}  // namespace

int main(int argc, char** argv) {
  setenv("WEFT_DEVICE", "host", 0);
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new TestCounter);
  return RUN_ALL_TESTS();
}
