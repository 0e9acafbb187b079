// Optimizers against torch.optim goldens (tools/goldens/optim.py), the LR
// schedule against hand-worked values, and update-op errors.

#include <cmath>

#include "engine/autodiff/optimizer.h"
#include "engine/executor.h"
#include "ops/elementwise.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

struct Case {
  const char* name;
  OptimizerOptions options;
};

class OptimizerGolden : public ::testing::TestWithParam<Case> {};

TEST_P(OptimizerGolden, MatchesTorchOptimOverThreeSteps) {
  const Case& c = GetParam();
  ASSERT_OK_AND_ASSIGN(GoldenCase golden, LoadGolden("optim", c.name));
  Graph g;
  Value w1 = g.Parameter("w1", {3, 4}, Initializer::Zeros(), DType::kFloat64);
  Value w2 = g.Parameter("w2", {5}, Initializer::Zeros(), DType::kFloat64);
  Value a = g.Input("a", DType::kFloat64, {3, 4});
  Value b = g.Input("b", DType::kFloat64, {5});
  Value loss = Sum(w1 * a) + Sum(w2 * w2 * b);
  ASSERT_OK_AND_ASSIGN(TrainingStep ts, BuildTrainingStep(loss, {w1, w2}, c.options));
  Executor exec(g);
  ASSERT_OK(exec.Assign(w1, golden.inputs.at("w1")));
  ASSERT_OK(exec.Assign(w2, golden.inputs.at("w2")));
  std::vector<Value> fetches = {loss};
  if (!ts.grad_norm.is_null()) fetches.push_back(ts.grad_norm);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(fetches, ts.updates));
  const std::vector<double> lrs = golden.attrs["lrs"].get<std::vector<double>>();
  for (int step = 1; step <= 3; ++step) {
    ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{a, golden.inputs.at("a")},
                                                    {b, golden.inputs.at("b")},
                                                    {ts.lr, Tensor::Scalar<double>(lrs[step - 1])},
                                                    {ts.step, Tensor::Scalar<double>(step)}}));
    const std::string s = std::to_string(step);
    if (!ts.grad_norm.is_null()) {
      ExpectAllClose(out[1], AsDoubles(golden.outputs.at("grad_norm_" + s)), 1e-12, 0,
                     "grad norm " + s);
    }
    ExpectAllClose(*exec.Read(w1), AsDoubles(golden.outputs.at("w1_" + s)), 1e-10, 1e-12,
                   "w1 step " + s);
    ExpectAllClose(*exec.Read(w2), AsDoubles(golden.outputs.at("w2_" + s)), 1e-10, 1e-12,
                   "w2 step " + s);
  }
}

INSTANTIATE_TEST_SUITE_P(
    TorchOptim, OptimizerGolden,
    ::testing::Values(
        Case{"sgd_momentum", {.kind = OptimizerKind::kSgd, .momentum = 0.9, .weight_decay = 0.01}},
        Case{"sgd_nesterov_clip",
             {.kind = OptimizerKind::kSgd, .momentum = 0.8, .nesterov = true, .clip_norm = 0.5}},
        Case{"sgd_plain", {.kind = OptimizerKind::kSgd, .momentum = 0.0}},
        Case{"adam_l2", {.kind = OptimizerKind::kAdam, .weight_decay = 0.01}},
        Case{"adam_clip",
             {.kind = OptimizerKind::kAdam, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6,
              .clip_norm = 1.0}},
        Case{"adamw", {.kind = OptimizerKind::kAdamW, .weight_decay = 0.1}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(LrSchedule, WarmupThenCosine) {
  const LrSchedule s{.peak = 1.0, .warmup_steps = 10, .total_steps = 110, .final_fraction = 0.1};
  EXPECT_DOUBLE_EQ(LearningRate(s, 1), 0.1);
  EXPECT_DOUBLE_EQ(LearningRate(s, 10), 1.0);
  EXPECT_NEAR(LearningRate(s, 60), 0.1 + 0.9 * 0.5, 1e-12);  // half way: cos = 0
  EXPECT_NEAR(LearningRate(s, 110), 0.1, 1e-12);
  EXPECT_NEAR(LearningRate(s, 500), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(LearningRate({.peak = 0.5, .total_steps = 0}, 7), 0.5);  // no schedule
}

TEST(Optimizer, UpdatesRunAfterEveryReaderOfTheParameter) {
  // y = sum(w * x) is fetched in the same plan as w's update: it must see w
  // before the update, whatever order the graph was built in.
  Graph g;
  Value w = g.Parameter("w", {2}, Initializer::Ones());
  Value x = g.Input("x", DType::kFloat32, {2});
  Value loss = Sum(w * x);
  ASSERT_OK_AND_ASSIGN(TrainingStep ts,
                       BuildTrainingStep(loss, {w}, {.kind = OptimizerKind::kSgd, .momentum = 0}));
  Value late_reader = Sum(w);  // built after the update op
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({loss, late_reader}, ts.updates));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, T<float>({2}, {1, 2})},
                                                  {ts.lr, Tensor::Scalar<double>(0.5)},
                                                  {ts.step, Tensor::Scalar<double>(1)}}));
  ExpectAllClose(out[0], {3}, 0, 0, "loss before update");
  ExpectAllClose(out[1], {2}, 0, 0, "reader before update");
  ExpectAllClose(*exec.Read(w), {0.5, 0}, 0, 0, "w - 0.5 * x");
}

TEST(Optimizer, Errors) {
  Graph g;
  Value w = g.Parameter("w", {2}, Initializer::Ones());
  Value unused = g.Parameter("unused", {2}, Initializer::Ones());
  Value x = g.Input("x", DType::kFloat32, {2});
  EXPECT_STATUS(BuildTrainingStep(Sum(w), {w, unused}, {}).status(),
                absl::StatusCode::kInvalidArgument, "does not depend on parameter 'unused'");
  EXPECT_STATUS(BuildTrainingStep(Sum(w), {w}, {.clip_norm = -1}).status(),
                absl::StatusCode::kInvalidArgument, "clip_norm");
  EXPECT_STATUS(ParseOptimizerKind("rmsprop").status(), absl::StatusCode::kInvalidArgument,
                "unknown optimizer 'rmsprop'");
  Value lr = g.Input("lr", DType::kFloat64, {});
  Value lr32 = g.Input("lr32", DType::kFloat32, {});
  EXPECT_STATUS(SgdUpdate(x, x, x, lr, {}).status(), absl::StatusCode::kInvalidArgument,
                "input 0 is written in place and must be a variable");
  EXPECT_STATUS(SgdUpdate(w, x, w, lr32, {}).status(), absl::StatusCode::kInvalidArgument,
                "lr must be a float64 scalar");
  Value m = g.Variable("m", {3}, Initializer::Zeros());
  EXPECT_STATUS(AdamUpdate(w, x, m, m, lr, lr, {}).status(), absl::StatusCode::kInvalidArgument,
                "input 2 must match the param's type float32 (2,)");
  Value m2 = g.Variable("m2", {2}, Initializer::Zeros());
  EXPECT_STATUS(AdamUpdate(w, x, m2, m2, lr, lr, {.beta1 = 1.0}).status(),
                absl::StatusCode::kInvalidArgument, "betas must be in [0, 1)");
}

}  // namespace
}  // namespace dagrad::testing
