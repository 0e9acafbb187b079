// What a training step and an evaluation fetch (models/trainer.h): the
// accuracy counted in the graph (TokenCounts, EvalStats, the trainer's step
// stats) against the host's count of the logits, as the trainer computed it
// before the count moved into the graph: torch.argmax per row (the first
// maximum; the first NaN of a row that holds one), ignored targets (-100)
// not counted.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/io/checkpoint.h"
#include "engine/status_macros.h"
#include "models/toy/tasks.h"
#include "models/toy/toy_trainer.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// HostCounts is the host computation: how many targets (ignoring -100)
// equal the argmax of their row of logits (..., V), and how many count.
std::pair<int64_t, int64_t> HostCounts(const Tensor& logits, const Tensor& targets) {
  const int64_t V = logits.shape()[logits.shape().rank() - 1];
  const float* l = logits.data<float>();
  const int64_t* t = targets.data<int64_t>();
  int64_t correct = 0, total = 0;
  for (int64_t i = 0, count = targets.num_elements(); i < count; ++i) {
    if (t[i] == models::kIgnoreIndex) continue;
    const float* row = l + i * V;
    int64_t best = 0;
    for (int64_t v = 1; v < V && !std::isnan(row[best]); ++v) {
      if (row[v] > row[best] || std::isnan(row[v])) best = v;
    }
    correct += best == t[i];
    ++total;
  }
  return {correct, total};
}

// HostLoss is the host computation of the mean cross entropy of the
// targets that count, with torch's label smoothing e: each row's loss is
// -(1 - e) log p[target] - e/V sum_c log p[c].
double HostLoss(const Tensor& logits, const Tensor& targets, double e) {
  const int64_t V = logits.shape()[logits.shape().rank() - 1];
  const float* l = logits.data<float>();
  const int64_t* t = targets.data<int64_t>();
  double sum = 0;
  int64_t counted = 0;
  for (int64_t i = 0, count = targets.num_elements(); i < count; ++i) {
    if (t[i] == models::kIgnoreIndex) continue;
    const float* row = l + i * V;
    const double top = *std::max_element(row, row + V);
    double z = 0, sum_logits = 0;
    for (int64_t v = 0; v < V; ++v) z += std::exp(row[v] - top), sum_logits += row[v] - top;
    const double log_z = std::log(z);
    sum += -(1 - e) * (row[t[i]] - top - log_z) - e / V * (sum_logits - V * log_z);
    ++counted;
  }
  return sum / counted;
}

absl::StatusOr<std::vector<double>> GraphCounts(const Tensor& logits, const Tensor& targets) {
  Graph g;
  Value l = g.Input("logits", DType::kFloat32, logits.shape());
  Value t = g.Input("targets", DType::kInt64, targets.shape());
  DAGRAD_ASSIGN_OR_RETURN(auto out,
                          RunOnce(g, {models::TokenCounts(l, t)}, {{l, logits}, {t, targets}}));
  return AsDoubles(out[0]);
}

// Rows: NaN first, NaN in the middle (before a larger number), a tie, an
// ignored row.
TEST(TokenCounts, ArgmaxPropagatesNaNAsTorch) {
  const float nan = std::nanf("");
  const Tensor logits = T<float>({1, 4, 3}, {nan, 5, 1, 1, nan, 5, 2, 2, 0, 9, 0, 0});
  ASSERT_OK_AND_ASSIGN(auto right, GraphCounts(logits, T<int64_t>({1, 4}, {0, 1, 0, -100})));
  EXPECT_EQ(right, std::vector<double>({3, 3}));
  ASSERT_OK_AND_ASSIGN(auto wrong, GraphCounts(logits, T<int64_t>({1, 4}, {1, 2, 1, -100})));
  EXPECT_EQ(wrong, std::vector<double>({0, 3}));
  EXPECT_EQ(models::TokenAccuracy(0, 0), 0.0);
  EXPECT_EQ(models::TokenAccuracy(3, 4), 0.75);
}

// Logits of few distinct values (ties in most rows), some NaN, targets
// with ignored ones: the graph's counts are the host's.
TEST(TokenCounts, AreTheHostCounts) {
  Tensor logits = Random(DType::kFloat32, {6, 9, 5}, 11, 0, 3);
  Tensor targets = RandomInts({6, 9}, 12, -1, 5);
  for (int64_t i = 0; i < logits.num_elements(); ++i) {
    float& v = logits.data<float>()[i];
    v = i % 37 == 5 ? std::nanf("") : std::floor(v);
  }
  for (int64_t i = 0; i < targets.num_elements(); ++i) {
    if (targets.data<int64_t>()[i] < 0) targets.data<int64_t>()[i] = models::kIgnoreIndex;
  }
  const auto [correct, counted] = HostCounts(logits, targets);
  ASSERT_GT(counted, 0);
  ASSERT_GT(correct, 0);
  ASSERT_OK_AND_ASSIGN(auto got, GraphCounts(logits, targets));
  EXPECT_EQ(got, std::vector<double>({static_cast<double>(correct), static_cast<double>(counted)}));
}

// ReferencedTrainer is a toy trainer of `config` and a second executor of
// the same seed on its graph, which runs the trainer's own forward (its
// graph, so the same dropout nodes): the reference for the trainer's
// numbers.
struct ReferencedTrainer {
  static absl::StatusOr<std::unique_ptr<ReferencedTrainer>> Create(const models::TrainConfig& c) {
    auto r = std::make_unique<ReferencedTrainer>();
    r->config = c;
    DAGRAD_ASSIGN_OR_RETURN(r->trainer, models::ToyTrainer::Create(c));
    r->reference = std::make_unique<Executor>(r->trainer->graph(), ExecutorOptions{.seed = c.run.seed});
    DAGRAD_ASSIGN_OR_RETURN(r->plan, r->reference->Compile({r->trainer->logits()}));
    r->task = {.task = c.task, .vocab = c.model.vocab, .seq_len = c.model.seq_len,
               .min_len = c.min_len};
    return r;
  }
  // StepBatch is the batch of step 1 and the reference's logits on it,
  // with step 1's dropout masks when `options` says training.
  absl::StatusOr<std::pair<models::TaskBatch, Tensor>> StepBatch(const RunOptions& options) {
    DAGRAD_ASSIGN_OR_RETURN(auto train, models::TaskGenerator::Create(task, config.run.seed));
    DAGRAD_ASSIGN_OR_RETURN(models::TaskBatch batch, train.Batch(1, config.run.batch));
    DAGRAD_ASSIGN_OR_RETURN(auto logits, reference->Run(*plan, FeedsOf(batch), options));
    return std::make_pair(std::move(batch), logits[0]);
  }
  // HeldOut is the held-out batch and the reference's logits on it with
  // the trainer's current parameters (saved at `path` and loaded).
  absl::StatusOr<std::pair<models::TaskBatch, Tensor>> HeldOut(const std::string& path) {
    DAGRAD_RETURN_IF_ERROR(trainer->SaveModel(path));
    DAGRAD_RETURN_IF_ERROR(LoadVariables(*reference, trainer->graph().Parameters(), path).status());
    DAGRAD_ASSIGN_OR_RETURN(auto eval,
                            models::TaskGenerator::Create(task, models::EvalSeed(config.run.seed)));
    DAGRAD_ASSIGN_OR_RETURN(models::TaskBatch held_out, eval.Batch(0, config.eval_size));
    DAGRAD_ASSIGN_OR_RETURN(auto logits, reference->Run(*plan, FeedsOf(held_out)));
    return std::make_pair(std::move(held_out), logits[0]);
  }
  Feeds FeedsOf(const models::TaskBatch& b) {
    Graph& g = trainer->graph();
    return Feeds{{g.Find("tokens"), b.tokens}, {g.Find("lengths"), b.lengths}};
  }

  models::TrainConfig config;
  std::unique_ptr<models::ToyTrainer> trainer;
  std::unique_ptr<Executor> reference;
  std::unique_ptr<Plan> plan;
  models::TaskConfig task;
};

// The trainer's step and evaluation against the host's count of the same
// logits, on a task whose padding is ignored. The reference runs the
// trainer's own forward (its graph, so the same dropout nodes) on a second
// executor of the same seed: the parameters of step 0 and the masks of
// step 1; after the step, the saved parameters on the held-out set.
TEST(TrainerStats, StepAndEvaluationCountTheLogitsAsTheHost) {
  models::TrainConfig c;
  c.model = {.vocab = 7, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1, .ffn = 32,
             .dropout = 0.3};
  c.min_len = 2;
  c.run.batch = c.eval_size = 12;
  c.run.seed = 5;
  ASSERT_OK_AND_ASSIGN(auto t, ReferencedTrainer::Create(c));
  ASSERT_OK_AND_ASSIGN(const auto step, t->StepBatch({.training = true, .step = 1}));
  ASSERT_OK_AND_ASSIGN(const models::StepResult r, t->trainer->Step());
  const auto [correct, counted] = HostCounts(step.second, step.first.targets);
  EXPECT_LT(counted, c.run.batch * c.model.seq_len);  // padding was ignored
  EXPECT_EQ(r.accuracy, static_cast<double>(correct) / counted);

  ASSERT_OK_AND_ASSIGN(const auto held_out,
                       t->HeldOut(testing::NewTempDir("trainer_stats") + "/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(const models::EvalResult e, t->trainer->Evaluate());
  const auto [eval_correct, eval_counted] = HostCounts(held_out.second, held_out.first.targets);
  EXPECT_EQ(e.accuracy, static_cast<double>(eval_correct) / eval_counted);
}

// --label_smoothing smooths the training loss (torch's formula, on the
// logits of the step's own forward) and leaves the validation loss the
// plain cross entropy.
TEST(TrainerStats, LabelSmoothingIsTheTrainingLossOnly) {
  models::TrainConfig c;
  c.model = {.vocab = 7, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1, .ffn = 32,
             .dropout = 0.0};
  c.min_len = 2;
  c.run.batch = c.eval_size = 12;
  c.run.seed = 3;
  c.run.label_smoothing = 0.2;
  ASSERT_OK_AND_ASSIGN(auto t, ReferencedTrainer::Create(c));
  ASSERT_OK_AND_ASSIGN(const auto step, t->StepBatch({}));
  ASSERT_OK_AND_ASSIGN(const models::StepResult r, t->trainer->Step());
  const double smoothed = HostLoss(step.second, step.first.targets, 0.2);
  EXPECT_NEAR(r.loss, smoothed, 1e-5 * smoothed);
  EXPECT_GT(std::abs(smoothed - HostLoss(step.second, step.first.targets, 0)), 1e-2);

  ASSERT_OK_AND_ASSIGN(const auto held_out,
                       t->HeldOut(testing::NewTempDir("label_smoothing") + "/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(const models::EvalResult e, t->trainer->Evaluate());
  const double plain = HostLoss(held_out.second, held_out.first.targets, 0);
  EXPECT_NEAR(e.loss, plain, 1e-5 * plain);
}

}  // namespace
}  // namespace dagrad::testing
