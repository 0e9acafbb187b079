// Optimizers against torch.optim goldens (tools/goldens/optim.py), with
// parameter groups and clip_grad_norm_; the LR schedule against hand-worked
// values; unused parameters; and the errors.

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "ops/autodiff/optimizer.h"
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
  // The param groups of (w1, w2); null: the two as one list.
  std::function<std::vector<ParamGroup>(Value, Value)> groups;
  DType dtype = DType::kFloat64;
};
// gtest prints a parameter by its name (else byte by byte, padding too).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class OptimizerGolden : public ::testing::TestWithParam<Case> {};

TEST_P(OptimizerGolden, MatchesTorchOptimOverThreeSteps) {
  const Case& c = GetParam();
  ASSERT_OK_AND_ASSIGN(GoldenCase golden, LoadGolden("optim", c.name));
  Graph g;
  Value w1 = g.Parameter("w1", {3, 4}, Initializer::Zeros(), c.dtype);
  Value w2 = g.Parameter("w2", {5}, Initializer::Zeros(), c.dtype);
  Value a = g.Input("a", c.dtype, {3, 4});
  Value b = g.Input("b", c.dtype, {5});
  Value loss = Sum(w1 * a) + Sum(w2 * w2 * b);
  ASSERT_OK_AND_ASSIGN(TrainingStep ts,
                       c.groups ? BuildTrainingStep(loss, c.groups(w1, w2), c.options)
                                : BuildTrainingStep(loss, {w1, w2}, c.options));
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
    // float32: within a few roundings of torch's own float32 arithmetic.
    const double rtol = c.dtype == DType::kFloat32 ? 4e-7 : 1e-10;
    const double atol = c.dtype == DType::kFloat32 ? 1e-7 : 1e-12;
    ExpectAllClose(*exec.Read(w1), AsDoubles(golden.outputs.at("w1_" + s)), rtol, atol,
                   "w1 step " + s);
    ExpectAllClose(*exec.Read(w2), AsDoubles(golden.outputs.at("w2_" + s)), rtol, atol,
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
        Case{"adamw", {.kind = OptimizerKind::kAdamW, .weight_decay = 0.1}},
        Case{"adamw_decay_matrices",
             {.kind = OptimizerKind::kAdamW, .weight_decay = 0.7},  // unused: groups set it
             [](Value w1, Value w2) { return DecayMatrices({w1, w2}, 0.1); }},
        Case{"adam_groups_lr_scale_clip", {.kind = OptimizerKind::kAdam, .clip_norm = 0.8},
             [](Value w1, Value w2) {
               return std::vector<ParamGroup>{{.params = {w1}, .weight_decay = 0.05},
                                              {.params = {w2}, .lr_scale = 0.25}};
             }},
        Case{"sgd_groups_lr_scale", {.kind = OptimizerKind::kSgd, .momentum = 0.9},
             [](Value w1, Value w2) {
               return std::vector<ParamGroup>{{.params = {w1}, .lr_scale = 2.0},
                                              {.params = {w2}, .weight_decay = 0.3}};
             }},
        Case{"adam_l2_f32", {.kind = OptimizerKind::kAdam, .weight_decay = 0.01}, nullptr,
             DType::kFloat32},
        Case{"adamw_f32", {.kind = OptimizerKind::kAdamW, .weight_decay = 0.1}, nullptr,
             DType::kFloat32}),
    [](const auto& info) { return std::string(info.param.name); });

class ClipGradNormGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(ClipGradNormGolden, MatchesTorch) {
  ASSERT_OK_AND_ASSIGN(GoldenCase golden, LoadGolden("optim", GetParam()));
  const Tensor& t1 = golden.inputs.at("g1");
  const Tensor& t2 = golden.inputs.at("g2");
  Graph g;
  Value g1 = g.Input("g1", t1.dtype(), t1.shape()), g2 = g.Input("g2", t2.dtype(), t2.shape());
  ASSERT_OK_AND_ASSIGN(ClippedGrads c,
                       ClipGradNorm({g1, Value(), g2}, golden.attrs["max_norm"].get<double>()));
  ASSERT_EQ(c.grads.size(), 3u);
  EXPECT_TRUE(c.grads[1].is_null());
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {c.norm, c.grads[0], c.grads[2]},
                                         {{g1, t1}, {g2, t2}}));
  const double tol = t1.dtype() == DType::kFloat32 ? 1e-6 : 1e-13;
  EXPECT_EQ(out[1].dtype(), t1.dtype());
  ExpectAllClose(out[0], AsDoubles(golden.outputs.at("norm")), tol, 0, "norm");
  ExpectAllClose(out[1], AsDoubles(golden.outputs.at("clipped_g1")), tol, 1e-12, "g1");
  ExpectAllClose(out[2], AsDoubles(golden.outputs.at("clipped_g2")), tol, 1e-12, "g2");
}

INSTANTIATE_TEST_SUITE_P(TorchClip, ClipGradNormGolden,
                         ::testing::Values("clip_grad_norm_f64", "clip_grad_norm_f32",
                                           "clip_grad_norm_below_max"));

TEST(Optimizer, DecayMatricesSplitsByRank) {
  Graph g;
  Value emb = g.Parameter("emb", {10, 4}, Initializer::Zeros());
  Value bias = g.Parameter("bias", {4}, Initializer::Zeros());
  Value w = g.Parameter("w", {2, 4, 4}, Initializer::Zeros());
  const std::vector<ParamGroup> groups = DecayMatrices({emb, bias, w}, 0.1);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].params, (std::vector<Value>{emb, w}));
  EXPECT_EQ(groups[0].weight_decay, 0.1);
  EXPECT_EQ(groups[1].params, (std::vector<Value>{bias}));
  EXPECT_EQ(groups[1].weight_decay, 0.0);
}

TEST(Optimizer, AllowUnusedSkipsAndNamesParametersTheLossDoesNotReach) {
  Graph g;
  Value w = g.Parameter("w", {2}, Initializer::Ones());
  Value head = g.Parameter("head", {2}, Initializer::Ones());
  Value bias = g.Parameter("bias", {1}, Initializer::Ones());
  Value loss = Sum(w * w);
  EXPECT_STATUS(BuildTrainingStep(loss, {w, head, bias}, {}).status(),
                absl::StatusCode::kInvalidArgument,
                "the loss does not depend on parameters 'head', 'bias' (allow_unused skips them)");
  ASSERT_OK_AND_ASSIGN(TrainingStep ts,
                       BuildTrainingStep(loss, {w, head, bias},
                                         {.kind = OptimizerKind::kAdamW, .weight_decay = 0.5,
                                          .clip_norm = 1.0, .allow_unused = true}));
  EXPECT_EQ(ts.params, std::vector<Value>{w});
  EXPECT_EQ(ts.unused_params, (std::vector<std::string>{"head", "bias"}));
  EXPECT_EQ(ts.warning,
            "BuildTrainingStep: the loss does not depend on parameters 'head', 'bias'; they get "
            "no update");
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({loss}, ts.updates));
  ASSERT_OK(exec.Run(*plan, {{ts.lr, Tensor::Scalar<double>(0.1)},
                             {ts.step, Tensor::Scalar<double>(1)}})
                .status());
  ExpectAllClose(*exec.Read(head), {1, 1}, 0, 0, "unused: untouched");
  // AdamW's first step moves w by lr * sign(grad) plus the decay: 1 - 0.1 * (1 + 0.5).
  ExpectAllClose(*exec.Read(w), {0.85, 0.85}, 1e-6, 0, "w");
  // Nothing reaches the loss at all: still an error.
  EXPECT_STATUS(BuildTrainingStep(Sum(w * 0.0) + Sum(g.Input("x", DType::kFloat32, {2})),
                                  {head}, {.allow_unused = true, .scope = "second"})
                    .status(),
                absl::StatusCode::kInvalidArgument,
                "the loss does not depend on parameter 'head'");
}

TEST(Optimizer, GroupAndClipErrors) {
  Graph g;
  Value w = g.Parameter("w", {2}, Initializer::Ones());
  Value v = g.Parameter("v", {2}, Initializer::Ones());
  Value loss = Sum(w * v);
  EXPECT_STATUS(BuildTrainingStep(loss, {{.params = {w, v}}, {.params = {v}}}, {}).status(),
                absl::StatusCode::kInvalidArgument,
                "parameter 'v' is in more than one param group");
  EXPECT_STATUS(
      BuildTrainingStep(loss, {{.params = {w}}, {.params = {v}, .weight_decay = -1.0}}, {})
          .status(),
      absl::StatusCode::kInvalidArgument,
      "param group 1: weight_decay must be finite and >= 0, got -1");
  EXPECT_STATUS(
      BuildTrainingStep(loss, {{.params = {w, v}, .lr_scale = NAN}}, {}).status(),
      absl::StatusCode::kInvalidArgument, "param group 0: lr_scale must be finite and >= 0");
  EXPECT_STATUS(BuildTrainingStep(loss, std::vector<ParamGroup>{{}}, {}).status(),
                absl::StatusCode::kInvalidArgument, "no parameters");
  EXPECT_STATUS(ClipGradNorm({w}, 0.0).status(), absl::StatusCode::kInvalidArgument,
                "max_norm must be finite and > 0, got 0");
  EXPECT_STATUS(ClipGradNorm({Value()}, 1.0).status(), absl::StatusCode::kInvalidArgument,
                "ClipGradNorm: no gradients");
}

// Two training steps in one graph (a GAN's generator and discriminator),
// each in its own scope, as torch builds two optimizers: each updates its
// own parameters with its own state; a second step in a taken scope is
// refused, naming the fix.
TEST(Optimizer, ASecondTrainingStepTakesItsOwnScope) {
  Graph g;
  Value gen = g.Parameter("gen", {2}, Initializer::Ones());
  Value disc = g.Parameter("disc", {2}, Initializer::Ones());
  ASSERT_OK_AND_ASSIGN(TrainingStep first, BuildTrainingStep(Sum(gen * gen), {gen}, {}));
  const Value disc_loss = Sum(disc * disc * disc);
  const int64_t nodes = g.num_nodes();
  EXPECT_STATUS(BuildTrainingStep(disc_loss, {disc}, {}).status(),
                absl::StatusCode::kInvalidArgument,
                "already has a training step in scope 'optimizer' (its input 'optimizer/lr'); "
                "give a second one its own OptimizerOptions::scope");
  EXPECT_EQ(g.num_nodes(), nodes) << "a refused step adds no node";
  ASSERT_OK_AND_ASSIGN(TrainingStep second,
                       BuildTrainingStep(disc_loss, {disc}, {.scope = "disc_optimizer"}));
  EXPECT_EQ(first.state[0].path(), "optimizer/gen/exp_avg");
  EXPECT_EQ(second.state[0].path(), "disc_optimizer/disc/exp_avg");
  EXPECT_EQ(second.lr.path(), "disc_optimizer/lr");
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({first.loss, second.loss},
                                               {first.updates[0], second.updates[0]}));
  const Tensor lr = Tensor::Scalar(0.1), step = Tensor::Scalar(1.0);
  ASSERT_OK(exec.Run(*plan, {{first.lr, lr}, {first.step, step}, {second.lr, lr},
                             {second.step, step}}).status());
  // Adam's first step moves every element by lr, against its gradient's sign.
  for (const Value& p : {gen, disc}) {
    EXPECT_THAT(exec.Read(p)->ToVector<float>(),
                ::testing::Each(::testing::FloatNear(0.9f, 1e-6f))) << p.path();
  }
  EXPECT_STATUS(ValidateOptimizerOptions({.scope = ""}), absl::StatusCode::kInvalidArgument,
                "scope must not be empty");
}

TEST(Optimizer, NamesRoundTrip) {
  for (OptimizerKind k : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    EXPECT_EQ(*ParseOptimizerKind(OptimizerName(k)), k);
  }
}

TEST(LrSchedule, WarmupThenCosine) {
  const LrSchedule s{.peak = 1.0, .warmup_steps = 10, .total_steps = 110, .final_fraction = 0.1};
  EXPECT_DOUBLE_EQ(*LearningRate(s, 1), 0.1);
  EXPECT_DOUBLE_EQ(*LearningRate(s, 10), 1.0);
  EXPECT_NEAR(*LearningRate(s, 35), 0.1 + 0.9 * (1 + std::sqrt(0.5)) / 2, 1e-12);  // cos(pi/4)
  EXPECT_NEAR(*LearningRate(s, 60), 0.1 + 0.9 * 0.5, 1e-12);  // half way: cos = 0
  EXPECT_NEAR(*LearningRate(s, 110), 0.1, 1e-12);
  EXPECT_NEAR(*LearningRate(s, 500), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(*LearningRate({.peak = 0.5, .total_steps = 0}, 7), 0.5);  // no schedule
}

// Steps count from 1: step 0 or below gave a negative rate in the warmup
// (s / W) and one above the peak in the decay, without an error.
TEST(LrSchedule, AStepBelowOneIsAnError) {
  const LrSchedule warm{.peak = 1.0, .warmup_steps = 3, .total_steps = 10};
  const LrSchedule linear{.peak = 1.0, .total_steps = 10, .decay = LrDecay::kLinear};
  const LrSchedule custom{.custom = [](int64_t) { return 1.0; }};
  for (const LrSchedule* s : {&warm, &linear, &custom}) {
    for (int64_t step : {0, -5}) {
      EXPECT_STATUS(LearningRate(*s, step).status(), absl::StatusCode::kInvalidArgument,
                    absl::StrCat("step must be >= 1 (steps count from 1), got ", step));
    }
  }
}

// A schedule ValidateLrSchedule refuses gave a NaN, negative or above-peak
// rate without an error.
TEST(LrSchedule, AnInvalidScheduleIsAnError) {
  EXPECT_STATUS(LearningRate({.peak = NAN}, 1).status(), absl::StatusCode::kInvalidArgument,
                "lr (peak) must be finite and > 0, got nan");
  EXPECT_STATUS(LearningRate({.peak = -1}, 1).status(), absl::StatusCode::kInvalidArgument,
                "lr (peak) must be finite and > 0, got -1");
  EXPECT_STATUS(LearningRate({.peak = 1e-3, .total_steps = 10, .final_fraction = 1.5}, 1).status(),
                absl::StatusCode::kInvalidArgument, "final_lr_fraction must be in [0, 1], got 1.5");
}

TEST(LrSchedule, WarmupThenLinearOrConstant) {
  LrSchedule s{.peak = 2.0, .warmup_steps = 4, .total_steps = 14, .final_fraction = 0.25,
               .decay = LrDecay::kLinear};
  EXPECT_DOUBLE_EQ(*LearningRate(s, 2), 1.0);                  // 2 * 2 / 4
  EXPECT_DOUBLE_EQ(*LearningRate(s, 4), 2.0);
  EXPECT_DOUBLE_EQ(*LearningRate(s, 6), 2 * (0.25 + 0.75 * 0.8));  // progress 2 / 10
  EXPECT_DOUBLE_EQ(*LearningRate(s, 14), 0.5);
  EXPECT_DOUBLE_EQ(*LearningRate(s, 30), 0.5);
  s.decay = LrDecay::kConstant;
  EXPECT_DOUBLE_EQ(*LearningRate(s, 3), 1.5);
  EXPECT_DOUBLE_EQ(*LearningRate(s, 5), 2.0);
  EXPECT_DOUBLE_EQ(*LearningRate(s, 30), 2.0);
  for (LrDecay d : {LrDecay::kCosine, LrDecay::kLinear, LrDecay::kConstant}) {
    EXPECT_EQ(*ParseLrDecay(LrDecayName(d)), d);
  }
  EXPECT_STATUS(ParseLrDecay("step").status(), absl::StatusCode::kInvalidArgument,
                "unknown learning-rate decay 'step' (cosine, linear, constant)");
}

TEST(LrSchedule, CustomFunction) {
  // nanoGPT's get_lr(it) at it = s - 1: warmup (it + 1) / (W + 1), W = 2,
  // then cosine from 1 to 0.1 over it in [2, 6].
  auto nanogpt = [](int64_t s) {
    const double it = static_cast<double>(s - 1);
    if (it < 2) return (it + 1) / 3;
    return 0.1 + 0.45 * (1 + std::cos(M_PI * std::min(1.0, (it - 2) / 4)));
  };
  const LrSchedule s{.peak = 5.0, .decay = LrDecay::kConstant, .custom = nanogpt};
  ASSERT_OK(ValidateLrSchedule(s));
  EXPECT_DOUBLE_EQ(*LearningRate(s, 1), 1.0 / 3);
  EXPECT_DOUBLE_EQ(*LearningRate(s, 3), 1.0);
  EXPECT_NEAR(*LearningRate(s, 5), 0.55, 1e-12);
  const LrSchedule bad{.custom = [](int64_t s) { return s == 3 ? -1.0 : 1.0; }};
  EXPECT_TRUE(LearningRate(bad, 2).ok());
  EXPECT_STATUS(LearningRate(bad, 3).status(), absl::StatusCode::kInvalidArgument,
                "the learning-rate schedule's value at step 3 must be finite and >= 0, got -1");
  const LrSchedule nan{.custom = [](int64_t) { return std::nan(""); }};
  EXPECT_FALSE(LearningRate(nan, 1).ok());
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
  Value m2 = g.Variable("m2", {2}, Initializer::Zeros());
  Value v2 = g.Variable("v2", {2}, Initializer::Zeros());
  EXPECT_STATUS(SgdUpdate(w, x, m2, lr32, {}).status(), absl::StatusCode::kInvalidArgument,
                "lr must be a float64 scalar");
  EXPECT_STATUS(SgdUpdate(w, x, w, lr, {}).status(), absl::StatusCode::kInvalidArgument,
                "inputs 0 and 2 are both written in place and are the same variable 'w'");
  Value m = g.Variable("m", {3}, Initializer::Zeros());
  EXPECT_STATUS(AdamUpdate(w, x, m, v2, lr, lr, {}).status(), absl::StatusCode::kInvalidArgument,
                "input 2 must match the param's type float32 (2,)");
  EXPECT_STATUS(AdamUpdate(w, x, m2, m2, lr, lr, {}).status(), absl::StatusCode::kInvalidArgument,
                "inputs 2 and 3 are both written in place and are the same variable 'm2'");
  EXPECT_STATUS(AdamUpdate(w, x, m2, v2, lr, lr, {.beta1 = 1.0}).status(),
                absl::StatusCode::kInvalidArgument, "betas must be in [0, 1)");
  // 1e-46 > 0 passed, and the float32 kernel divided by 0 + 0.
  EXPECT_STATUS(AdamUpdate(w, x, m2, v2, lr, lr, {.eps = 1e-46}).status(),
                absl::StatusCode::kInvalidArgument, "eps 1e-46 rounds to 0 in float32");
}

}  // namespace
}  // namespace dagrad::testing
