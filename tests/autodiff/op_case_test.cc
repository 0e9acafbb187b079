// The op cases' coverage test: every op of AllOps() has exactly one case,
// and its case runs it in every mode and every 16-bit float it takes; and
// tests that show the gradcheck and the coverage test failing. The modes
// themselves run in tests/autodiff/support/op_case_modes.cc.

#include "tests/autodiff/support/op_case.h"

#include <string>
#include <tuple>
#include <vector>

#include "ops/elementwise.h"
#include "ops/registry.h"
#include "tests/autodiff/support/op_coverage.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(OpCaseCoverage, EveryOpHasExactlyOneCaseThatRunsItInEveryMode) {
  ASSERT_OK_AND_ASSIGN(std::vector<OpCoverage> rows, CoverageRows());
  ExpectComplete(rows);
}

// The gradcheck can fail: at relu's kink the rule gives 0, the central
// difference half the weight there.
TEST(GradCheck, FailsWhereAutodiffAndFiniteDifferencesDisagree) {
  const Tensor zeros = *Tensor::Zeros(DType::kFloat64, {3});
  EXPECT_STATUS(GradCheck([&](CaseBuilder& b) { b.Out(Relu(b.Fixed("x", zeros))); }, {}, false, 1),
                absl::StatusCode::kInternal,
                "gradient of 'x' (3,) element 0: autodiff 0, finite differences 0.");
}

// The coverage test can fail: an op without a case gives an incomplete row.
TEST(OpCaseCoverage, AnOpWithoutACaseIsReported) {
  const OpDef uncovered = {.name = "op_without_a_case"};
  ASSERT_OK_AND_ASSIGN(OpCoverage row, CoverageOf(uncovered));
  EXPECT_EQ(row.cases, 0);
  EXPECT_EQ(row.gradcheck, "NO");
  EXPECT_EQ(row.problem, "0 cases (DAGRAD_OP_CASE), not 1");
}

// The coverage test can fail for a 16-bit float: an op that says it takes
// bfloat16 (tanh's OpDef, so marked here) without a config that runs it so.
TEST(OpCaseCoverage, AnOpThatTakesBFloat16WithoutABFloat16ConfigIsReported) {
  OpDef tanh = *FindOp("tanh");
  ASSERT_OK_AND_ASSIGN(OpCoverage plain, CoverageOf(tanh));
  EXPECT_EQ(plain.reduced, "-");
  tanh.reduced_floats = DTypeBit(DType::kBFloat16);
  ASSERT_OK_AND_ASSIGN(OpCoverage row, CoverageOf(tanh));
  EXPECT_EQ(row.reduced, "NO");
  EXPECT_EQ(row.problem, "takes bfloat16 but no reduced config runs it in bfloat16");
  ASSERT_OK_AND_ASSIGN(OpCoverage reshape, CoverageOf(*FindOp("reshape")));
  EXPECT_EQ(reshape.reduced, "bf16 f16");
  ASSERT_OK_AND_ASSIGN(OpCoverage matmul, CoverageOf(*FindOp("matmul")));
  EXPECT_EQ(matmul.reduced, "bf16");
}

// The flags on the cases, read against the OpDefs: a backward-only kernel,
// an always-a-view op, a backward op with a rule of its own.
TEST(OpCaseCoverage, FlagsAgreeWithTheOpDefs) {
  for (const auto& [op, gradcheck, cuda] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"layer_norm_grad", "backward-only", "yes"},
           {"reshape", "yes", "view"},
           {"relu_grad", "yes", "yes"},
           {"equal", "not differentiable", "yes"}}) {
    const OpDef* def = FindOp(op);
    ASSERT_NE(def, nullptr) << op;
    ASSERT_OK_AND_ASSIGN(OpCoverage row, CoverageOf(*def));
    EXPECT_EQ(row.gradcheck, gradcheck) << op;
    EXPECT_EQ(row.cuda, cuda) << op;
    EXPECT_EQ(row.problem, "") << op;
  }
}

}  // namespace
}  // namespace dagrad::testing
