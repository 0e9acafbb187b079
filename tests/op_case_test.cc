// Runs every op case (tests/support/op_case.h) in every mode it has: the
// float64 gradcheck, CPU against CUDA (skipped, saying why, without a GPU),
// each CPU kernel level against the baseline (skipped, saying why, on a
// CPU that runs the baseline only), each 16-bit float against float32; and
// the coverage test: every op of AllOps() has exactly one case, and its
// case runs it in every mode and every 16-bit float it takes.

#include "tests/support/op_case.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "engine/cuda/cuda_device.h"
#include "ops/elementwise.h"
#include "ops/registry.h"
#include "tests/support/gpu_skip.h"
#include "tests/support/isa_check.h"
#include "tests/support/op_coverage.h"
#include "tests/support/reduced_check.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

struct ConfigParam {
  const OpCase* op_case;
  const OpConfig* config;
  DType dtype;
};

std::string NameOf(const ConfigParam& p) { return ConfigTestName(*p.op_case, *p.config, p.dtype); }

void PrintTo(const ConfigParam& p, std::ostream* os) { *os << NameOf(p); }

// Params lists the (config, dtype) pairs of `mode`: gradcheck runs float64
// only, reduced the 16-bit floats only, and neither a config that expects
// an error.
std::vector<ConfigParam> Params(OpMode mode) {
  std::vector<ConfigParam> out;
  for (const OpCase& c : AllOpCases()) {
    for (const OpConfig& config : c.configs) {
      if (!(config.modes & mode)) continue;
      if ((mode == kGradcheckMode || mode == kReducedMode) && config.expect_error) continue;
      for (DType d : config.dtypes) {
        if (mode == kGradcheckMode && d != DType::kFloat64) continue;
        if (mode == kReducedMode && !IsReducedFloat(d)) continue;
        out.push_back({&c, &config, d});
      }
    }
  }
  return out;
}

CrossCase CrossOf(const ConfigParam& p) { return ToCrossCase(*p.op_case, *p.config, p.dtype); }

class OpCaseGradcheck : public ::testing::TestWithParam<ConfigParam> {};

TEST_P(OpCaseGradcheck, MatchesFiniteDifferences) {
  ASSERT_OK(GradCheckConfig(*GetParam().op_case, *GetParam().config));
}

INSTANTIATE_TEST_SUITE_P(Ops, OpCaseGradcheck, ::testing::ValuesIn(Params(kGradcheckMode)),
                         [](const auto& info) { return NameOf(info.param); });

class OpCaseCuda : public ::testing::TestWithParam<ConfigParam> {};

TEST_P(OpCaseCuda, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  ASSERT_OK(CrossCheck(CrossOf(GetParam()), [] { return CudaDevice(); }));
}

INSTANTIATE_TEST_SUITE_P(Ops, OpCaseCuda, ::testing::ValuesIn(Params(kCudaMode)),
                         [](const auto& info) { return NameOf(info.param); });

class OpCaseIsa : public ::testing::TestWithParam<ConfigParam> {};

TEST_P(OpCaseIsa, MatchesBaseline) {
  const absl::Status st = IsaCheck(CrossOf(GetParam()));
  if (absl::IsUnavailable(st)) GTEST_SKIP() << "kernel levels not compared: " << st.message();
  ASSERT_OK(st);
}

INSTANTIATE_TEST_SUITE_P(Ops, OpCaseIsa, ::testing::ValuesIn(Params(kIsaMode)),
                         [](const auto& info) { return NameOf(info.param); });

class OpCaseReduced : public ::testing::TestWithParam<ConfigParam> {};

TEST_P(OpCaseReduced, MatchesFloat32) {
  const ConfigParam& p = GetParam();
  ASSERT_OK(ReducedCheck(CrossOf(p), ToCrossCase(*p.op_case, *p.config, DType::kFloat32), p.dtype,
                         p.config->reduced_ulps));
}

INSTANTIATE_TEST_SUITE_P(Ops, OpCaseReduced, ::testing::ValuesIn(Params(kReducedMode)),
                         [](const auto& info) { return NameOf(info.param); });

TEST(OpCaseCoverage, EveryOpHasExactlyOneCaseThatRunsItInEveryMode) {
  ASSERT_OK_AND_ASSIGN(std::vector<OpCoverage> rows, CoverageRows());
  for (const OpCoverage& row : rows) {
    EXPECT_TRUE(row.problem.empty()) << "op '" << row.op << "': " << row.problem;
  }
  if (HasFailure()) ADD_FAILURE() << "\n" << FormatCoverage(rows);
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
           {"gelu_grad", "backward-only", "yes"},
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
