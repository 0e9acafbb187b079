// Runs every op case (tests/autodiff/support/op_case.h) linked into the
// binary in every mode it has: the float64 gradcheck, CPU against CUDA
// (skipped, saying why, without a GPU), each CPU kernel level against the
// baseline (skipped, saying why, on a CPU that runs the baseline only),
// each 16-bit float against float32. Compiled into each binary that holds
// op cases: dagrad_autodiff_tests (the ops' cases) and dagrad_models_tests
// (the models layer's composite cases).

#include <string>
#include <vector>

#include "engine/cuda/cuda_device.h"
#include "tests/autodiff/support/isa_check.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/autodiff/support/reduced_check.h"
#include "tests/support/gpu_skip.h"
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

// A binary's cases need not have a config in every mode (the composite
// cases run no 16-bit float): a mode without one is no test, not an error.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpCaseGradcheck);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpCaseCuda);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpCaseIsa);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpCaseReduced);

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

}  // namespace
}  // namespace dagrad::testing
