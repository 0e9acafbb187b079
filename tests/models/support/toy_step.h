// tests/models/support/toy_step.h
//
// ToyStep: a small toy transformer's training step (cross-entropy, Adam,
// clipping at 1.0, the model's dropout) with a task generator that feeds
// it, for tests that run the same steps on several executors and compare.
//
//   ASSERT_OK_AND_ASSIGN(auto t, ToyStep::Create(config, /*min_len=*/3, /*data_seed=*/7));
//   Executor a(t->graph), b(t->graph, std::move(device));
//   auto plan = a.Compile({t->loss}, t->ts.updates);
//   a.Run(*plan, t->FeedsFor(step, 1e-3), {.training = true, .step = step});

#ifndef DAGRAD_TESTS_SUPPORT_TOY_STEP_H_
#define DAGRAD_TESTS_SUPPORT_TOY_STEP_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "models/toy/tasks.h"
#include "models/toy/transformer.h"
#include "ops/autodiff/optimizer.h"

namespace dagrad::testing {

struct ToyStep {
  static constexpr int64_t kBatch = 4;

  // Create builds the step for `config` (sequence length config.seq_len)
  // and a generator of batches with lengths in [min_len, max_len].
  static absl::StatusOr<std::unique_ptr<ToyStep>> Create(const models::ToyConfig& config,
                                                         int64_t min_len, uint64_t data_seed);

  // FeedsFor returns the feeds of training step `step` (its batch, `lr`,
  // and Adam's step).
  Feeds FeedsFor(int step, double lr) const;

  Graph graph;
  std::optional<models::ToyTransformer> model;
  Value tokens, lengths, targets, loss;
  TrainingStep ts;
  std::optional<models::TaskGenerator> tasks;
};

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_TOY_STEP_H_
