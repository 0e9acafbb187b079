// Training at shapes that vary between runs: one Optimizer (MakeOptimizer),
// a ShapeFamily building each batch size's step on it, against torch.optim
// over the same five batches of 4, 3, 4, 2 and 3 rows
// (tools/goldens/optim.py, adamw_clip_varying_batch), and with gradients
// accumulated over micro-batches (adamw_clip_accumulated); the state the
// steps share; and the errors.

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/shape_family.h"
#include "engine/status_macros.h"
#include "ops/autodiff/optimizer.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Mlp is the golden's model, cross_entropy(tanh(x @ w1 + b1) @ w2, y), with
// one AdamW over its parameters and a family of its training step over the
// batch size.
struct Mlp {
  Graph g;
  Value w1 = g.Parameter("w1", {4, 3}, Initializer::Zeros(), DType::kFloat64);
  Value b1 = g.Parameter("b1", {3}, Initializer::Zeros(), DType::kFloat64);
  Value w2 = g.Parameter("w2", {3, 5}, Initializer::Zeros(), DType::kFloat64);
  Executor exec{g};
  Optimizer adamw;
  std::unique_ptr<ShapeFamily> steps;
  std::vector<TrainingStep> built;  // each binding's step, as built

  Value Loss(Value x, Value y) { return CrossEntropy(MatMul(Tanh(MatMul(x, w1) + b1), w2), y); }

  absl::Status Start(const OptimizerOptions& options) {
    DAGRAD_ASSIGN_OR_RETURN(adamw, MakeOptimizer(g.Parameters(), options));
    DAGRAD_ASSIGN_OR_RETURN(
        steps, ShapeFamily::Create(
                   g, exec,
                   {.inputs = {{"x", DType::kFloat64, {"batch", 4}},
                               {"y", DType::kInt64, {"batch"}}},
                    .bounds = {{"batch", 8}}},
                   [this](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
                     DAGRAD_ASSIGN_OR_RETURN(
                         TrainingStep ts,
                         BuildTrainingStep(Loss(b.input("x"), b.input("y")), adamw));
                     built.push_back(ts);
                     Specialized out{.fetches = {ts.loss}, .targets = ts.updates};
                     if (!ts.grad_norm.is_null()) out.fetches.push_back(ts.grad_norm);
                     return out;
                   }));
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<Tensor>> Step(const Tensor& x, const Tensor& y, double lr,
                                           double step) {
    return steps->Run({{"x", x}, {"y", y}}, {},
                      {{adamw.lr(), Tensor::Scalar(lr)}, {adamw.step(), Tensor::Scalar(step)}});
  }
};

TEST(VaryingShapeTraining, OneAdamWOverBatchesOfFiveSizesMatchesTorch) {
  ASSERT_OK_AND_ASSIGN(GoldenCase golden, LoadGolden("optim", "adamw_clip_varying_batch"));
  Mlp m;
  ASSERT_OK(m.Start({.kind = OptimizerKind::kAdamW, .weight_decay = 0.1, .clip_norm = 0.5}));
  for (const char* name : {"w1", "b1", "w2"}) {
    ASSERT_OK(m.exec.Assign(m.g.Find(name), golden.inputs.at(name)));
  }
  const std::vector<double> lrs = golden.attrs["lrs"].get<std::vector<double>>();
  for (int step = 1; step <= 5; ++step) {
    const std::string s = std::to_string(step);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         m.Step(golden.inputs.at("x_" + s), golden.inputs.at("y_" + s),
                                lrs[step - 1], step));
    ExpectAllClose(out[0], AsDoubles(golden.outputs.at("loss_" + s)), 1e-12, 0, "loss " + s);
    ExpectAllClose(out[1], AsDoubles(golden.outputs.at("grad_norm_" + s)), 1e-12, 0,
                   "grad norm " + s);
    for (const char* name : {"w1", "b1", "w2"}) {
      ExpectAllClose(*m.exec.Read(m.g.Find(name)), AsDoubles(golden.outputs.at(name + ("_" + s))),
                     1e-10, 1e-12, name + (" step " + s));
    }
  }
  EXPECT_EQ(m.steps->builds(), 3);  // batches of 4, 3 and 2: the second 4 reuses the first
}

// Every binding's step updates the one Optimizer's moments, named as a
// fixed-shape step names them (its checkpoint is the same).
TEST(VaryingShapeTraining, EveryShapesStepUpdatesTheSameMoments) {
  Mlp m;
  ASSERT_OK(m.Start({.kind = OptimizerKind::kAdam}));
  for (const int64_t rows : {2, 5}) {
    ASSERT_OK(m.Step(Random(DType::kFloat64, {rows, 4}, rows),
                     RandomInts({rows}, rows, 0, 4), 0.01, 1.0).status());
  }
  ASSERT_EQ(m.built.size(), 2u);
  ASSERT_EQ(m.built[0].state.size(), 6u);
  for (size_t i = 0; i < m.built[0].state.size(); ++i) {
    EXPECT_EQ(m.built[0].state[i].id(), m.built[1].state[i].id()) << i;
  }
  EXPECT_EQ(m.built[0].lr.id(), m.built[1].lr.id());
  EXPECT_EQ(m.built[0].state[0].path(), "optimizer/w1/exp_avg");
  EXPECT_EQ(m.g.Variables().size(), 9u);  // 3 parameters and their 6 moments, no more
  EXPECT_EQ(m.adamw.lr().path(), "optimizer/lr");
}

// A step may leave parameters out under SGD (with allow_unused), as torch
// skips a None .grad. Under Adam the fed step would bias-correct a left-out
// parameter for steps it never took, and with accumulation its sum would
// keep other micro-batches' gradients: both are refused, with or without
// allow_unused, saying why (not that allow_unused would skip them).
TEST(VaryingShapeTraining, AStepThatLeavesAParameterOutIsNamedAndUnderAdamRefused) {
  Graph g;
  const Value w = g.Parameter("w", {3}, Initializer::Ones());
  const Value unused = g.Parameter("unused", {2}, Initializer::Ones());
  const Value x = g.Input("x", DType::kFloat32, {3});
  const Value loss = Sum(w * x);
  ASSERT_OK_AND_ASSIGN(Optimizer strict, MakeOptimizer({w, unused}, {.kind = OptimizerKind::kSgd}));
  EXPECT_STATUS(BuildTrainingStep(loss, strict).status(), absl::StatusCode::kInvalidArgument,
                "does not depend on parameter 'unused' (allow_unused skips them)");
  for (const bool allow : {false, true}) {
    const std::string scope = allow ? "lenient" : "strict_adam";
    ASSERT_OK_AND_ASSIGN(Optimizer adam, MakeOptimizer({w, unused}, {.allow_unused = allow,
                                                                     .scope = scope}));
    EXPECT_STATUS(BuildTrainingStep(loss, adam).status(), absl::StatusCode::kInvalidArgument,
                  "does not depend on parameter 'unused': adam's bias correction counts");
    ASSERT_OK_AND_ASSIGN(Optimizer summed,
                         MakeOptimizer({w, unused}, {.kind = OptimizerKind::kSgd,
                                                     .allow_unused = allow,
                                                     .accumulate_gradients = true,
                                                     .scope = scope + "_summed"}));
    EXPECT_STATUS(BuildTrainingStep(loss, summed).status(), absl::StatusCode::kInvalidArgument,
                  "does not depend on parameter 'unused': with accumulate_gradients");
  }
  ASSERT_OK_AND_ASSIGN(Optimizer sgd, MakeOptimizer({w, unused}, {.kind = OptimizerKind::kSgd,
                                                                  .allow_unused = true,
                                                                  .scope = "sgd"}));
  ASSERT_OK_AND_ASSIGN(TrainingStep ts, BuildTrainingStep(loss, sgd));
  EXPECT_EQ(ts.unused_params, std::vector<std::string>{"unused"});
  EXPECT_EQ(ts.updates.size(), 1u);
  EXPECT_EQ(ts.state.size(), 1u);  // w's momentum; unused's exists, and no step moves it
}

// Gradients accumulated over micro-batches of 4, 3 and 2 rows (a family
// whose plans only add them, and one whose plans add the last and update),
// against torch's backward() per micro-batch and one AdamW step.
TEST(VaryingShapeTraining, GradientsAccumulatedOverMicroBatchesMatchTorch) {
  ASSERT_OK_AND_ASSIGN(GoldenCase golden, LoadGolden("optim", "adamw_clip_accumulated"));
  Mlp m;
  ASSERT_OK_AND_ASSIGN(m.adamw, MakeOptimizer(m.g.Parameters(), {.kind = OptimizerKind::kAdamW,
                                                                 .weight_decay = 0.1,
                                                                 .clip_norm = 0.5,
                                                                 .accumulate_gradients = true}));
  auto family = [&m](bool last) {
    return ShapeFamily::Create(
        m.g, m.exec,
        {.inputs = {{"x", DType::kFloat64, {"batch", 4}}, {"y", DType::kInt64, {"batch"}}},
         .bounds = {{"batch", 8}}},
        [&m, last](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
          DAGRAD_ASSIGN_OR_RETURN(
              TrainingStep ts,
              BuildTrainingStep(Scale(m.Loss(b.input("x"), b.input("y")), 1.0 / 3), m.adamw));
          if (!last) return Specialized{.targets = ts.accumulate};
          return Specialized{.fetches = {ts.grad_norm}, .targets = ts.updates};
        });
  };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShapeFamily> micro, family(false));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShapeFamily> last, family(true));
  for (const char* name : {"w1", "b1", "w2"}) {
    ASSERT_OK(m.exec.Assign(m.g.Find(name), golden.inputs.at(name)));
  }
  for (int step = 1; step <= 2; ++step) {
    const std::string s = std::to_string(step);
    auto batch = [&](int i) -> NamedFeeds {
      return {{"x", golden.inputs.at(absl::StrCat("x_", s, "_", i))},
              {"y", golden.inputs.at(absl::StrCat("y_", s, "_", i))}};
    };
    ASSERT_OK_AND_ASSIGN(const Tensor w1_before, m.exec.Read(m.g.Find("w1")));
    ASSERT_OK(micro->Run(batch(1)).status());
    ASSERT_OK(micro->Run(batch(2)).status());
    ExpectAllClose(*m.exec.Read(m.g.Find("w1")), AsDoubles(w1_before), 0, 0, "micro-batches");
    const double lr = golden.attrs["lrs"][step - 1].get<double>();
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         last->Run(batch(3), {}, {{m.adamw.lr(), Tensor::Scalar(lr)},
                                                 {m.adamw.step(), Tensor::Scalar<double>(step)}}));
    ExpectAllClose(out[0], AsDoubles(golden.outputs.at("grad_norm_" + s)), 1e-12, 0, "norm " + s);
    for (const char* name : {"w1", "b1", "w2"}) {
      ExpectAllClose(*m.exec.Read(m.g.Find(name)), AsDoubles(golden.outputs.at(name + ("_" + s))),
                     1e-10, 1e-12, name + (" step " + s));
      ExpectAllClose(*m.exec.Read(m.adamw.state(m.g.Find(name)).back()),
                     std::vector<double>(m.g.Find(name).shape().num_elements(), 0.0), 0, 0,
                     name + (" cleared " + s));
    }
  }
  EXPECT_EQ(m.adamw.state(m.g.Find("w1")).back().path(), "optimizer/w1/grad_sum");
}

// The fixed-shape step with accumulation, by hand: SGD without momentum on
// loss = Sum(w * x) + s * c moves w by -lr * (the micro-batches' x summed)
// and the rank-0 s by -lr * (their c summed). A non-finite micro-batch
// makes the update skip (skip_nonfinite) and still clears the sums.
TEST(VaryingShapeTraining, AccumulatedSgdByHandSkipsANonFiniteStepAndClearsItsSums) {
  Graph g;
  const Value w = g.Parameter("w", {3}, Initializer::Zeros(), DType::kFloat64);
  const Value s = g.Parameter("s", {}, Initializer::Zeros(), DType::kFloat64);
  const Value x = g.Input("x", DType::kFloat64, {3}), c = g.Input("c", DType::kFloat64, {});
  ASSERT_OK_AND_ASSIGN(TrainingStep ts, BuildTrainingStep(Sum(w * x) + s * c, {w, s},
                                                          {.kind = OptimizerKind::kSgd,
                                                           .momentum = 0.0,
                                                           .skip_nonfinite = true,
                                                           .accumulate_gradients = true}));
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto micro, exec.Compile({ts.loss}, ts.accumulate));
  ASSERT_OK_AND_ASSIGN(auto last, exec.Compile({ts.loss}, ts.updates));
  auto batch = [&](std::vector<double> xs, double cs) -> Feeds {
    return {{x, T<double>({3}, xs)}, {c, Tensor::Scalar(cs)}};
  };
  auto update = [&](std::vector<double> xs, double cs) {
    Feeds f = batch(xs, cs);
    f.push_back({ts.lr, Tensor::Scalar(0.5)});
    f.push_back({ts.step, Tensor::Scalar(1.0)});
    return exec.Run(*last, f).status();
  };
  ASSERT_OK(exec.Run(*micro, batch({1, 2, 3}, 4)).status());
  ASSERT_OK(update({10, 20, 30}, 40));
  ExpectAllClose(*exec.Read(w), {-5.5, -11, -16.5}, 0, 0, "w after a step");
  ExpectAllClose(*exec.Read(s), {-22}, 0, 0, "s after a step");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ASSERT_OK(exec.Run(*micro, batch({nan, 0, 0}, 1)).status());
  ASSERT_OK(update({1, 1, 1}, 1));
  ExpectAllClose(*exec.Read(w), {-5.5, -11, -16.5}, 0, 0, "w after a skipped step");
  for (const Value& p : {w, s}) {
    const Value sum = g.Find(absl::StrCat("optimizer/", p.path(), "/grad_sum"));
    ExpectAllClose(*exec.Read(sum), std::vector<double>(p.shape().num_elements(), 0), 0, 0,
                   sum.path());
  }
  ASSERT_OK(update({2, 2, 2}, 2));
  ExpectAllClose(*exec.Read(w), {-6.5, -12, -17.5}, 0, 0, "w after the next step");
  ExpectAllClose(*exec.Read(s), {-23}, 0, 0, "s after the next step");
}

TEST(VaryingShapeTraining, RefusesAnOptimizerOfAnotherGraphOrScope) {
  Graph g, other;
  const Value w = g.Parameter("w", {3}, Initializer::Ones());
  const Value v = other.Parameter("v", {3}, Initializer::Ones());
  const Value loss = Sum(w * w);
  EXPECT_STATUS(BuildTrainingStep(loss, Optimizer{}).status(),
                absl::StatusCode::kInvalidArgument, "not one MakeOptimizer made");
  ASSERT_OK_AND_ASSIGN(Optimizer elsewhere, MakeOptimizer({v}, {}));
  EXPECT_STATUS(BuildTrainingStep(loss, elsewhere).status(), absl::StatusCode::kInvalidArgument,
                "in the loss's graph");
  EXPECT_STATUS(MakeOptimizer({w, v}, {}).status(), absl::StatusCode::kInvalidArgument,
                "MakeOptimizer: parameter 'v' belongs to another graph than the first");
  ASSERT_OK(MakeOptimizer({w}, {}).status());
  EXPECT_STATUS(MakeOptimizer({w}, {}).status(), absl::StatusCode::kInvalidArgument,
                "MakeOptimizer: the graph already has a training step in scope 'optimizer'");
  EXPECT_STATUS(BuildTrainingStep(loss, {w}, {}).status(), absl::StatusCode::kInvalidArgument,
                "BuildTrainingStep: the graph already has a training step in scope 'optimizer'");
  EXPECT_STATUS(MakeOptimizer({w}, {.beta1 = 1.0, .scope = "b"}).status(),
                absl::StatusCode::kInvalidArgument, "beta1 must be in [0, 1), got 1");
}

TEST(VaryingShapeTraining, ASharedFeedOfTheFamilysOwnInputIsRefused) {
  Mlp m;
  ASSERT_OK(m.Start({}));
  const Tensor x = Random(DType::kFloat64, {2, 4}, 1), y = RandomInts({2}, 1, 0, 4);
  ASSERT_OK(m.Step(x, y, 0.01, 1.0).status());
  const Value family_x = m.g.Find("batch=2/x");
  ASSERT_FALSE(family_x.is_null());
  EXPECT_STATUS(m.steps->Run({{"x", x}, {"y", y}}, {}, {{family_x, x}}).status(),
                absl::StatusCode::kInvalidArgument,
                "the shared feed 'batch=2/x' is the family's input 'x'; feed it by name");
}

}  // namespace
}  // namespace dagrad::testing
