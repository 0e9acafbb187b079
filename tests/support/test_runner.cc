#include <cstdlib>

#include "gtest/gtest.h"
#include "tests/support/test_main.h"

namespace dagrad::testing {

void UseSpinWaitPolicy() { setenv("DAGRAD_WAIT_POLICY", "spin", /*overwrite=*/0); }

int RunTests(int argc, char** argv) {
  UseSpinWaitPolicy();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace dagrad::testing
