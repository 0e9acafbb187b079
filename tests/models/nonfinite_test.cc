// Non-finite values never change a parameter or reach a file: the guarded
// update ops (OptimizerOptions::skip_nonfinite), ToyTrainer's stop and skip
// policies, RequireFinite before every save, and the validation of every
// hyper-parameter (NaN, Inf, out of range).

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "gmock/gmock.h"
#include "models/gpt/gpt_trainer.h"
#include "models/toy/toy_trainer.h"
#include "ops/autodiff/optimizer.h"
#include "ops/elementwise.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A small training step: loss = sum(w * x) + sum(w * w) + c, so that x can
// make the gradients NaN and c the loss alone Inf.
struct SmallStep {
  Graph g;
  Value w, x, c, loss;
  TrainingStep ts;
  std::unique_ptr<Executor> exec;
  std::unique_ptr<Plan> plan;

  explicit SmallStep(OptimizerOptions o) {
    w = g.Parameter("w", {3, 4}, Initializer::Ones());
    x = g.Input("x", DType::kFloat32, {3, 4});
    c = g.Input("c", DType::kFloat32, {});
    loss = Sum(w * x) + Sum(w * w) + c;
    ts = *BuildTrainingStep(loss, {w}, o);
    exec = std::make_unique<Executor>(g);
    plan = *exec->Compile({loss, ts.grad_norm}, ts.updates);
  }

  // Run feeds x filled with `xv` (element 5 replaced by `x5`) and c; returns
  // whether the update was skipped.
  bool Run(double xv, double x5, double cv, double step) {
    std::vector<float> xs(12, static_cast<float>(xv));
    xs[5] = static_cast<float>(x5);
    auto out = exec->Run(*plan, {{x, T<float>({3, 4}, xs)},
                                 {c, Tensor::Scalar<float>(static_cast<float>(cv))},
                                 {ts.lr, Tensor::Scalar<double>(0.1)},
                                 {ts.step, Tensor::Scalar<double>(step)}});
    EXPECT_TRUE(out.ok()) << out.status();
    return UpdateSkipped((*out)[0].data<float>()[0], (*out)[1].data<double>()[0]);
  }

  std::vector<Tensor> Variables() {
    std::vector<Tensor> v = {*exec->Read(w)};
    for (const Value& s : ts.state) v.push_back(*exec->Read(s));
    return v;
  }
};

void ExpectSameVariables(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                         const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(SameBits(a[i], b[i])) << what << " " << i;
}

class SkipNonFinite : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(SkipNonFinite, SkippedUpdateChangesNothingAndTheRunGoesOnAsWithoutIt) {
  const OptimizerOptions o{.kind = GetParam(), .weight_decay = 0.01, .skip_nonfinite = true};
  SmallStep run(o), reference(o);
  EXPECT_FALSE(run.Run(0.5, 0.5, 0, 1));
  EXPECT_FALSE(reference.Run(0.5, 0.5, 0, 1));
  const std::vector<Tensor> before = run.Variables();
  // NaN gradients, then an Inf loss with finite gradients: both skipped.
  EXPECT_TRUE(run.Run(0.5, kNaN, 0, 2));
  ExpectSameVariables(run.Variables(), before, "after a NaN gradient");
  EXPECT_TRUE(run.Run(0.5, 0.5, kInf, 2));
  ExpectSameVariables(run.Variables(), before, "after an Inf loss");
  // The step count fed is the applied updates + 1: 2 again.
  EXPECT_FALSE(run.Run(-0.25, 1.0, 0, 2));
  EXPECT_FALSE(reference.Run(-0.25, 1.0, 0, 2));
  ExpectSameVariables(run.Variables(), reference.Variables(), "against the run without them");
}

INSTANTIATE_TEST_SUITE_P(Optimizers, SkipNonFinite,
                         ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdam,
                                           OptimizerKind::kAdamW));

TEST(SkipNonFinite, WithoutTheOptionANaNGradientReachesTheParameters) {
  SmallStep run({.kind = OptimizerKind::kAdam, .clip_norm = 1.0});
  run.Run(0.5, kNaN, 0, 1);
  EXPECT_TRUE(std::isnan(run.Variables()[0].data<float>()[5]));
}

TEST(RequireFinite, NamesTheFirstNonFiniteTensor) {
  SafetensorsFile f;
  f.tensors.emplace_back("ok", T<float>({2}, {1, 2}));
  f.tensors.emplace_back("ids", T<int64_t>({2}, {1, 2}));
  ASSERT_OK(RequireFinite(f));
  f.tensors.emplace_back("layer.weight", T<double>({3}, {0, kInf, kNaN}));
  f.tensors.emplace_back("later", T<float>({1}, {static_cast<float>(kNaN)}));
  EXPECT_STATUS(RequireFinite(f), absl::StatusCode::kFailedPrecondition,
                "tensor 'layer.weight' holds inf at element 1");
}

// ---- hyper-parameters -------------------------------------------------------

TEST(ValidateOptimizerOptions, RejectsNonFiniteAndOutOfRangeFields) {
  const OptimizerKind sgd = OptimizerKind::kSgd, adam = OptimizerKind::kAdam;
  const struct {
    OptimizerOptions o;
    const char* message;
  } cases[] = {
      {{.kind = sgd, .momentum = kNaN}, "momentum must be in [0, 1), got nan"},
      {{.kind = sgd, .momentum = -0.1}, "momentum must be in [0, 1), got -0.1"},
      {{.kind = sgd, .momentum = 1}, "momentum must be in [0, 1), got 1"},
      {{.kind = sgd, .momentum = 0, .nesterov = true}, "momentum must be > 0 for nesterov"},
      {{.kind = adam, .beta1 = kNaN}, "beta1 must be in [0, 1), got nan"},
      {{.kind = adam, .beta2 = 1}, "beta2 must be in [0, 1), got 1"},
      {{.kind = adam, .eps = 0}, "eps must be finite and > 0, got 0"},
      {{.kind = adam, .eps = kInf}, "eps must be finite and > 0, got inf"},
      {{.kind = adam, .eps = kNaN}, "eps must be finite and > 0, got nan"},
      {{.kind = adam, .weight_decay = kNaN}, "weight_decay must be finite and >= 0, got nan"},
      {{.kind = sgd, .weight_decay = kInf}, "weight_decay must be finite and >= 0, got inf"},
      {{.kind = adam, .weight_decay = -1}, "weight_decay must be finite and >= 0, got -1"},
      {{.kind = adam, .clip_norm = kNaN}, "clip_norm must be finite and >= 0, got nan"},
      {{.kind = adam, .clip_norm = kInf}, "clip_norm must be finite and >= 0, got inf"},
  };
  for (const auto& c : cases) {
    EXPECT_STATUS(ValidateOptimizerOptions(c.o), absl::StatusCode::kInvalidArgument, c.message);
  }
  ASSERT_OK(ValidateOptimizerOptions({}));
  ASSERT_OK(ValidateOptimizerOptions({.kind = sgd, .momentum = 0.9, .nesterov = true}));
  // BuildTrainingStep refuses them too, before adding a node.
  Graph g;
  Value w = g.Parameter("w", {2}, Initializer::Ones());
  EXPECT_STATUS(BuildTrainingStep(Sum(w * w), {w}, {.weight_decay = kNaN}).status(),
                absl::StatusCode::kInvalidArgument, "weight_decay");
}

TEST(UpdateOps, RejectNonFiniteHyperParameters) {
  Graph g;
  Value w = g.Parameter("w", {2}, Initializer::Ones());
  Value m = g.Variable("m", {2}, Initializer::Zeros());
  Value v = g.Variable("v", {2}, Initializer::Zeros());
  Value x = g.Input("x", DType::kFloat32, {2});
  Value lr = g.Input("lr", DType::kFloat64, {});
  EXPECT_STATUS(SgdUpdate(w, x, m, lr, {.momentum = kNaN}).status(),
                absl::StatusCode::kInvalidArgument, "momentum and weight_decay must be finite");
  EXPECT_STATUS(SgdUpdate(w, x, m, lr, {.weight_decay = kInf}).status(),
                absl::StatusCode::kInvalidArgument, "momentum and weight_decay must be finite");
  EXPECT_STATUS(AdamUpdate(w, x, m, v, lr, lr, {.eps = kInf}).status(),
                absl::StatusCode::kInvalidArgument, "eps must be finite and > 0");
  EXPECT_STATUS(AdamUpdate(w, x, m, v, lr, lr, {.weight_decay = kNaN}).status(),
                absl::StatusCode::kInvalidArgument, "weight_decay finite and >= 0");
}

TEST(ValidateLrSchedule, RejectsNonFiniteAndOutOfRangeFields) {
  EXPECT_STATUS(ValidateLrSchedule({.peak = kNaN}), absl::StatusCode::kInvalidArgument,
                "lr (peak) must be finite and > 0, got nan");
  EXPECT_STATUS(ValidateLrSchedule({.peak = kInf}), absl::StatusCode::kInvalidArgument,
                "got inf");
  EXPECT_STATUS(ValidateLrSchedule({.peak = 0}), absl::StatusCode::kInvalidArgument, "got 0");
  EXPECT_STATUS(ValidateLrSchedule({.warmup_steps = -1}), absl::StatusCode::kInvalidArgument,
                "warmup must be >= 0, got -1");
  EXPECT_STATUS(ValidateLrSchedule({.total_steps = -1}), absl::StatusCode::kInvalidArgument,
                "total steps must be >= 0");
  EXPECT_STATUS(ValidateLrSchedule({.final_fraction = kNaN}),
                absl::StatusCode::kInvalidArgument, "final_lr_fraction must be in [0, 1], got nan");
  EXPECT_STATUS(ValidateLrSchedule({.final_fraction = 1.5}), absl::StatusCode::kInvalidArgument,
                "got 1.5");
  ASSERT_OK(ValidateLrSchedule({.peak = 0.1, .warmup_steps = 3, .total_steps = 10,
                                .final_fraction = 1}));
}

models::TrainConfig Tiny() {
  models::TrainConfig c;
  c.model = {.vocab = 8, .seq_len = 8, .dim = 16, .heads = 2, .layers = 1, .ffn = 32,
             .dropout = 0.1};
  c.run.batch = 8;
  c.run.steps = 20;
  c.run.warmup = 3;
  c.eval_size = 8;
  return c;
}

TEST(TrainConfigValidate, NamesTheFieldAndTheValue) {
  const struct {
    void (*set)(models::TrainConfig&);
    const char* message;
  } cases[] = {
      {[](models::TrainConfig& c) { c.run.lr = kNaN; }, "lr must be finite and > 0, got nan"},
      {[](models::TrainConfig& c) { c.run.lr = kInf; }, "lr must be finite and > 0, got inf"},
      {[](models::TrainConfig& c) { c.run.lr = -1; }, "lr must be finite and > 0, got -1"},
      {[](models::TrainConfig& c) { c.run.final_lr_fraction = kNaN; },
       "final_lr_fraction must be in [0, 1], got nan"},
      {[](models::TrainConfig& c) { c.run.final_lr_fraction = -0.5; }, "got -0.5"},
      {[](models::TrainConfig& c) { c.run.optimizer.weight_decay = kNaN; },
       "weight_decay must be finite and >= 0, got nan"},
      {[](models::TrainConfig& c) { c.run.optimizer.weight_decay = -kInf; }, "got -inf"},
      {[](models::TrainConfig& c) { c.run.optimizer.clip_norm = kNaN; },
       "clip must be finite and >= 0, got nan"},
      {[](models::TrainConfig& c) { c.run.optimizer.clip_norm = kInf; }, "clip must be finite"},
      {[](models::TrainConfig& c) { c.run.optimizer.beta1 = kNaN; }, "beta1 must be in [0, 1)"},
      {[](models::TrainConfig& c) { c.run.optimizer.eps = -1; }, "eps must be finite and > 0"},
      {[](models::TrainConfig& c) {
         c.run.optimizer.kind = OptimizerKind::kSgd;
         c.run.optimizer.momentum = kNaN;
       },
       "momentum must be in [0, 1), got nan"},
      {[](models::TrainConfig& c) { c.model.dropout = kNaN; }, "dropout must be in [0, 1)"},
      {[](models::TrainConfig& c) { c.run.warmup = -1; }, "warmup must be >= 0, got -1"},
      {[](models::TrainConfig& c) { c.run.max_consecutive_skips = 0; },
       "max_consecutive_skips must be >= 1, got 0"},
  };
  for (const auto& bad : cases) {
    models::TrainConfig c = Tiny();
    bad.set(c);
    EXPECT_STATUS(c.Validate(), absl::StatusCode::kInvalidArgument, bad.message);
    EXPECT_STATUS(models::ToyTrainer::Create(c).status(), absl::StatusCode::kInvalidArgument,
                  bad.message);
  }
  ASSERT_OK(Tiny().Validate());
  EXPECT_STATUS(models::ParseNonFinitePolicy("ignore").status(),
                absl::StatusCode::kInvalidArgument, "unknown non-finite policy 'ignore'");
}

// ---- the trainers' policies (models/trainer.h) --------------------------------

// A learning rate this large diverges within a few steps.
models::TrainConfig Diverging(models::NonFinitePolicy policy) {
  models::TrainConfig c = Tiny();
  c.run.lr = 1e30;
  c.run.on_nonfinite = policy;
  c.run.max_consecutive_skips = 3;
  return c;
}

// The policies hold for every trainer: the toy transformer's and the GPT's.
// Each case names its files: ctest runs the two instances of a typed test
// in parallel processes, which must not write the same checkpoint.
struct ToyCase {
  static constexpr const char* kName = "toy";
  static absl::StatusOr<std::unique_ptr<models::ToyTrainer>> Create(
      models::NonFinitePolicy policy) {
    return models::ToyTrainer::Create(Diverging(policy));
  }
};

struct GptCase {
  static constexpr const char* kName = "gpt";
  static absl::StatusOr<std::unique_ptr<models::GptTrainer>> Create(
      models::NonFinitePolicy policy) {
    models::TextTrainConfig c{.model = {.block_size = 8, .dim = 8, .heads = 2, .layers = 1},
                              .data = WriteCorpus("nonfinite_text", 10),
                              .eval_windows = 2};
    c.run.batch = 4;
    c.run.steps = 20;
    c.run.lr = 1e30;
    c.run.on_nonfinite = policy;
    c.run.max_consecutive_skips = 3;
    return models::GptTrainer::Create(c);
  }
};

template <typename Case>
class TrainerNonFinite : public ::testing::Test {};
using TrainerCases = ::testing::Types<ToyCase, GptCase>;
TYPED_TEST_SUITE(TrainerNonFinite, TrainerCases);

std::vector<Tensor> CheckpointTensors(models::Trainer& t, const std::string& path) {
  const absl::Status saved = t.SaveCheckpoint(path, {});
  EXPECT_TRUE(saved.ok()) << saved;
  absl::StatusOr<SafetensorsFile> f = ReadSafetensors(path);
  EXPECT_TRUE(f.ok()) << f.status();
  std::vector<Tensor> out;
  if (f.ok()) {
    for (auto& [name, tensor] : f->tensors) out.push_back(tensor);
  }
  return out;
}

TYPED_TEST(TrainerNonFinite, StopPolicyAbortsNamingTheStepAndChangesNothing) {
  ASSERT_OK_AND_ASSIGN(auto t, TypeParam::Create(models::NonFinitePolicy::kStop));
  const std::string path =
      testing::NewTempDir(std::string("nonfinite_stop_") + TypeParam::kName) + "/model.safetensors";
  std::vector<Tensor> good;
  absl::Status failed;
  while (t->step() < 20 && failed.ok()) {
    good = CheckpointTensors(*t, path);
    absl::StatusOr<models::StepResult> r = t->Step();
    failed = r.status();
  }
  ASSERT_TRUE(absl::IsAborted(failed)) << failed;
  const std::string bad_step = absl::StrCat("step ", t->step() + 1, ": the ");
  EXPECT_THAT(std::string(failed.message()), ::testing::HasSubstr(bad_step));
  EXPECT_THAT(std::string(failed.message()), ::testing::HasSubstr("Rerun with ExecutorOptions::check_numerics set"));
  // The failed step changed nothing: the same parameters and state, and a
  // checkpoint can still be written.
  ExpectSameVariables(CheckpointTensors(*t, path), good, "after the non-finite step");
}

TYPED_TEST(TrainerNonFinite, SkipPolicySkipsAndStopsAfterARunOfSkips) {
  ASSERT_OK_AND_ASSIGN(auto t, TypeParam::Create(models::NonFinitePolicy::kSkip));
  const std::string path =
      testing::NewTempDir(std::string("nonfinite_skip_") + TypeParam::kName) + "/model.safetensors";
  int64_t skipped = 0;
  absl::Status failed;
  while (t->step() < 20 && failed.ok()) {
    const std::vector<Tensor> before = CheckpointTensors(*t, path);
    absl::StatusOr<models::StepResult> r = t->Step();
    failed = r.status();
    if (!r.ok() || !r->skipped) continue;
    ++skipped;
    EXPECT_TRUE(!std::isfinite(r->loss) || !std::isfinite(r->grad_norm));
    EXPECT_EQ(t->step(), r->step);
    ExpectSameVariables(CheckpointTensors(*t, path), before, "after a skipped update");
  }
  ASSERT_TRUE(absl::IsAborted(failed)) << failed;
  EXPECT_THAT(std::string(failed.message()), ::testing::HasSubstr("3 steps in a row"));
  EXPECT_EQ(skipped, 2);
  EXPECT_EQ(t->skipped_updates(), 2);
  EXPECT_EQ(t->consecutive_skips(), 2);

  // The counts travel with the checkpoint.
  ASSERT_OK(t->SaveCheckpoint(path));
  ASSERT_OK_AND_ASSIGN(auto resumed, TypeParam::Create(models::NonFinitePolicy::kSkip));
  ASSERT_OK(resumed->LoadCheckpoint(path));
  EXPECT_EQ(resumed->step(), t->step());
  EXPECT_EQ(resumed->skipped_updates(), 2);
  EXPECT_EQ(resumed->consecutive_skips(), 2);
  EXPECT_TRUE(absl::IsAborted(resumed->Step().status()));
}

TEST(ToyTrainerNonFinite, CheckpointWithANaNIsNeverWritten) {
  ASSERT_OK_AND_ASSIGN(auto t, models::ToyTrainer::Create(Tiny()));
  const std::string dir = testing::NewTempDir("nonfinite_checkpoint");
  const std::string good = dir + "/good.safetensors";
  const std::string poisoned = dir + "/poisoned.safetensors";
  ASSERT_OK(t->Step().status());
  ASSERT_OK(t->SaveCheckpoint(good));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ReadCheckpoint(good));
  const std::string name = f.tensors[0].first;
  f.tensors[0].second.data<float>()[0] = static_cast<float>(kNaN);
  ASSERT_OK(WriteCheckpoint(poisoned, f));  // with its checksums
  ASSERT_OK(t->LoadCheckpoint(poisoned));
  ASSERT_OK_AND_ASSIGN(std::string before, ReadFile(good));
  const absl::Status st = t->SaveCheckpoint(good);
  EXPECT_STATUS(st, absl::StatusCode::kFailedPrecondition, absl::StrCat("'", name, "' holds nan"));
  EXPECT_EQ(*ReadFile(good), before);
  EXPECT_STATUS(t->SaveModel(good), absl::StatusCode::kFailedPrecondition, "holds nan");
  EXPECT_EQ(*ReadFile(good), before);
}

}  // namespace
}  // namespace dagrad::testing
