// gpu_tests' main: gtest's, except that a run with no failure but skipped tests (no CUDA device
// here) exits with $SLUICE_TEST_SKIP_EXIT_CODE when that is set. ctest runs the suite as one
// process with that code as its SKIP_RETURN_CODE, so that a machine without a GPU shows the suite
// as skipped instead of passed, without one process per test (43 processes, each loading the
// CUDA libraries, took 30 s of CI's unit stage). Run by hand, or by tools/device_check.sh, it
// exits as gtest does.

#include <cstdlib>

#include "gtest/gtest.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  const char* skip_code = std::getenv("SLUICE_TEST_SKIP_EXIT_CODE");
  if (result == 0 && skip_code != nullptr &&
      ::testing::UnitTest::GetInstance()->skipped_test_count() > 0) {
    return std::atoi(skip_code);
  }
  return result;
}
