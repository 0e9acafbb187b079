// DropoutKeepMask (ops/dropout.h): the mask a Dropout applies, zeros of x
// included, in training runs; all true otherwise; refused for a non-dropout.

#include <cstdint>
#include <vector>

#include "engine/executor.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// x alternates 0 and i + 1: at p = 0.5 about half of its 600 zeros are
// dropped, which y != 0 cannot tell from kept ones.
TEST(DropoutKeepMask, IsTheMaskTheDropoutAppliesZerosIncluded) {
  Graph g;
  constexpr int64_t n = 1200;
  std::vector<float> xs(n);
  for (int64_t i = 0; i < n; ++i) xs[i] = i % 2 == 0 ? 0.0f : static_cast<float>(i + 1);
  const Value x = g.Input("x", DType::kFloat32, {n});
  const Value y = Dropout(x, 0.5);
  const Value kept = DropoutKeepMask(y);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y, kept}));
  const Feeds feeds = {{x, T<float>({n}, xs)}};
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, feeds, {.training = true, .step = 3}));
  const std::vector<float> ys = out[0].ToVector<float>();
  const std::vector<bool> mask = out[1].ToVector<bool>();
  int64_t zeros_dropped = 0, zeros_kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(ys[i], mask[i] ? xs[i] * 2.0f : 0.0f) << i;
    if (xs[i] == 0) ++(mask[i] ? zeros_kept : zeros_dropped);
  }
  EXPECT_GT(zeros_dropped, 200);
  EXPECT_GT(zeros_kept, 200);
  ASSERT_OK_AND_ASSIGN(out, exec.Run(*plan, feeds));
  for (bool m : out[1].ToVector<bool>()) ASSERT_TRUE(m) << "outside training every element is kept";
}

// Training runs that set no step draw a new mask each, as PyTorch's
// dropout does at every forward; runs of one explicit step draw one mask.
TEST(DropoutKeepMask, RunsWithoutAStepDrawAfreshAndAStepRepeatsItsMask) {
  Graph g;
  const Value x = g.Input("x", DType::kFloat32, {64});
  const Value kept = DropoutKeepMask(Dropout(x, 0.5));
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({kept}));
  const Feeds feeds = {{x, T<float>({64}, std::vector<float>(64, 1.0f))}};
  auto mask = [&](RunOptions options) {
    absl::StatusOr<std::vector<Tensor>> out = exec.Run(*plan, feeds, options);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0].ToVector<bool>() : std::vector<bool>();
  };
  const std::vector<bool> first = mask({.training = true});
  const std::vector<bool> second = mask({.training = true});
  const std::vector<bool> third = mask({.training = true});
  EXPECT_NE(first, second);
  EXPECT_NE(second, third);
  EXPECT_NE(first, third);
  EXPECT_EQ(mask({.training = true, .step = 7}), mask({.training = true, .step = 7}));
  EXPECT_NE(mask({.training = true, .step = 7}), mask({.training = true, .step = 8}));
}

TEST(DropoutKeepMask, RefusesAValueNoDropoutMade) {
  Graph g;
  const Value x = g.Input("x", DType::kFloat32, {3});
  EXPECT_STATUS(DropoutKeepMask(Neg(x)).status(), absl::StatusCode::kInvalidArgument,
                "is not a Dropout's output");
}

}  // namespace
}  // namespace dagrad::testing
