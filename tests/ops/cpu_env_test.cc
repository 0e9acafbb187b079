// A CPU setting the environment gets wrong (DAGRAD_NUM_THREADS,
// DAGRAD_WAIT_POLICY, BLIS_ARCH_TYPE) fails every graph whose kernels pick
// a kernel level, as it fails a matrix product, naming the variable:
// ConfigureCpu's error. ctest runs this in processes of their own with a
// bad value (tests/CMakeLists.txt, cpu_env_bad_*); where ConfigureCpu
// succeeds there is nothing to check.

#include <cstdlib>

#include "engine/executor.h"
#include "gtest/gtest.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(CpuEnv, ABadSettingFailsAGraphWithoutProductsNamingIt) {
  const absl::Status configured = ConfigureCpu();
  if (configured.ok()) {
    // ctest's cpu_env_bad_* set this beside the setting that must be refused.
    ASSERT_EQ(std::getenv("DAGRAD_TEST_BAD_CPU_ENV"), nullptr) << "the bad setting was accepted";
    GTEST_SKIP() << "runs under ctest's cpu_env_bad_* with a bad setting";
  }
  for (Value (*op)(Value) : {+[](Value x) { return Softmax(x); },
                             +[](Value x) { return Sum(x); },
                             +[](Value x) { return Tanh(x); }}) {
    Graph g;
    const Value x = g.Input("x", DType::kFloat32, {2, 3});
    const Value y = op(x);
    Executor exec(g);
    ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
    const absl::Status run = exec.Run(*plan, {{x, Random(DType::kFloat32, {2, 3}, 1)}}).status();
    EXPECT_EQ(run.code(), configured.code()) << y.path() << ": " << run;
    EXPECT_NE(run.message().find(configured.message()), absl::string_view::npos)
        << y.path() << ": " << run;
  }
}

}  // namespace
}  // namespace dagrad::testing
