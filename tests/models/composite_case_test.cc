// The coverage test of the models layer's composite cases
// (tests/models/model_cases.cc, nn_cases.cc): each runs in every mode it
// names. The ops' cases, and their coverage test, are dagrad_autodiff_tests'
// (tests/autodiff/op_case_test.cc); the modes run in
// tests/autodiff/support/op_case_modes.cc, compiled into both binaries.

#include <vector>

#include "tests/autodiff/support/op_coverage.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(OpCaseCoverage, EveryCompositeCaseRunsInEveryMode) {
  ASSERT_OK_AND_ASSIGN(std::vector<OpCoverage> rows, CompositeCoverageRows());
  EXPECT_FALSE(rows.empty()) << "no composite case is linked into this binary";
  ExpectComplete(rows);
}

}  // namespace
}  // namespace dagrad::testing
