// Entry point of both collective suites. Weft reads WEFT_DEVICE once per process; ctest sets it
// for every test, and a direct run of the binary gets the same default here.
#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  setenv("WEFT_DEVICE", "host", 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
