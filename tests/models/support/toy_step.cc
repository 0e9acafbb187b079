#include "tests/models/support/toy_step.h"

#include "engine/status_macros.h"
#include "ops/loss.h"

namespace dagrad::testing {

absl::StatusOr<std::unique_ptr<ToyStep>> ToyStep::Create(const models::ToyConfig& config,
                                                         int64_t min_len, uint64_t data_seed) {
  auto t = std::make_unique<ToyStep>();
  Graph& g = t->graph;
  const int64_t len = config.seq_len;
  DAGRAD_ASSIGN_OR_RETURN(models::ToyTransformer model, models::ToyTransformer::Create(g, config));
  t->model.emplace(std::move(model));
  t->tokens = g.Input("tokens", DType::kInt64, {kBatch, len});
  t->lengths = g.Input("lengths", DType::kInt64, {kBatch});
  t->targets = g.Input("targets", DType::kInt64, {kBatch, len});
  t->loss = CrossEntropy((*t->model)(t->tokens, t->lengths).logits, t->targets);
  DAGRAD_ASSIGN_OR_RETURN(t->ts, BuildTrainingStep(t->loss, t->model->parameters(),
                                                   {.kind = OptimizerKind::kAdam,
                                                    .clip_norm = 1.0}));
  DAGRAD_ASSIGN_OR_RETURN(
      models::TaskGenerator tasks,
      models::TaskGenerator::Create(
          {.vocab = config.vocab, .seq_len = len, .min_len = min_len}, data_seed));
  t->tasks.emplace(std::move(tasks));
  return t;
}

Feeds ToyStep::FeedsFor(int step, double lr) const {
  const models::TaskBatch batch = tasks->Batch(step, kBatch).value();  // a small batch
  return {{tokens, batch.tokens},
          {lengths, batch.lengths},
          {targets, batch.targets},
          {ts.lr, Tensor::Scalar<double>(lr)},
          {ts.step, Tensor::Scalar<double>(step)}};
}

}  // namespace dagrad::testing
