#include "models/toy/toy_trainer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/io/checkpoint.h"
#include "engine/plan/memory_budget.h"
#include "engine/status_macros.h"
#include "models/plot/plots.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/shape_ops.h"

namespace dagrad::models {
namespace {

constexpr char kToyStateFormat[] = "toy-train-state/1";

// DataBudget is what the training batch and the evaluation set will take:
// ToyTrainer draws them after Compile, which counts them in its budget.
absl::StatusOr<MemoryBudget> DataBudget(const TaskGenerator& train, const TaskGenerator& eval,
                                        const TrainConfig& c) {
  const int64_t T = c.model.seq_len;
  DAGRAD_ASSIGN_OR_RETURN(const int64_t eval_bytes, eval.BatchBytes(c.eval_size));
  DAGRAD_ASSIGN_OR_RETURN(const int64_t batch_bytes, train.BatchBytes(c.run.batch));
  MemoryBudget data;
  data.Add("data", absl::StrCat("evaluation set int64 (", c.eval_size, ", ", T, ") x2"),
           eval_bytes);
  data.Add("data", absl::StrCat("training batch int64 (", c.run.batch, ", ", T, ") x2"),
           batch_bytes);
  return data;
}

// CompileEvaluation compiles the held-out evaluation's plan, and names it in
// an error (over --memory_limit_mb, say): its shapes are the held-out set's,
// one batch of eval_size sequences, not --batch's.
absl::StatusOr<std::unique_ptr<Plan>> CompileEvaluation(Executor& exec, Value stats,
                                                        int64_t eval_size) {
  absl::StatusOr<std::unique_ptr<Plan>> plan = exec.Compile({stats});
  if (plan.ok()) return plan;
  return absl::Status(plan.status().code(),
                      absl::StrCat("the held-out evaluation (one batch of ", eval_size,
                                   " sequences): ", plan.status().message()));
}

}  // namespace

absl::Status TrainConfig::Validate() const {
  DAGRAD_RETURN_IF_ERROR(model.Validate());
  if (min_len < 0 || min_len > model.seq_len) {
    return absl::InvalidArgumentError(absl::StrCat("min_len must be in [0, seq_len=",
                                                   model.seq_len, "], got ", min_len));
  }
  if (eval_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("eval_size must be >= 1, got ", eval_size));
  }
  return run.Validate();
}

std::map<std::string, std::string> TrainConfig::ToMetadata() const {
  std::map<std::string, std::string> m = model.ToMetadata();
  m.merge(run.ToMetadata());
  m["task"] = TaskName(task);
  m["min_len"] = absl::StrCat(min_len);
  m["eval_size"] = absl::StrCat(eval_size);
  return m;
}

absl::StatusOr<std::unique_ptr<ToyTrainer>> ToyTrainer::Create(
    const TrainConfig& config, std::unique_ptr<Device> device,
    const DataParallelOptions& data_parallel) {
  DAGRAD_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<ToyTrainer> t(new ToyTrainer());
  t->config_ = config;
  t->skips_ = NonFiniteSteps(config.run.on_nonfinite, config.run.max_consecutive_skips);
  t->parallel_ = data_parallel;
  DAGRAD_ASSIGN_OR_RETURN(t->share_, BatchShare::Create(config.run.batch, data_parallel));
  t->schedule_ = config.run.Schedule();
  DAGRAD_RETURN_IF_ERROR(t->Build(std::move(device)));
  return t;
}

absl::Status ToyTrainer::Build(std::unique_ptr<Device> device) {
  const TrainConfig& c = config_;
  const int64_t T = c.model.seq_len, B = share_.rows();
  const TaskConfig task{.task = c.task, .vocab = c.model.vocab, .seq_len = T,
                        .min_len = c.min_len};
  DAGRAD_ASSIGN_OR_RETURN(TaskGenerator train, TaskGenerator::Create(task, c.run.seed));
  DAGRAD_ASSIGN_OR_RETURN(TaskGenerator eval, TaskGenerator::Create(task, EvalSeed(c.run.seed)));
  train_data_ = std::make_unique<TaskGenerator>(train);
  DAGRAD_ASSIGN_OR_RETURN(const MemoryBudget data, DataBudget(train, eval, c));

  graph_ = std::make_unique<Graph>();
  Graph& g = *graph_;
  DAGRAD_ASSIGN_OR_RETURN(ToyTransformer model, ToyTransformer::Create(g, c.model));
  model_ = std::make_unique<ToyTransformer>(std::move(model));

  // Training step.
  tokens_ = g.Input("tokens", DType::kInt64, {B, T});
  lengths_ = g.Input("lengths", DType::kInt64, {B});
  targets_ = g.Input("targets", DType::kInt64, {B, T});
  logits_ = (*model_)(tokens_, lengths_).logits;
  loss_ = share_.MeanLoss(g, logits_, targets_, config_.run.label_smoothing);
  DAGRAD_RETURN_IF_ERROR(RewriteForPrecision(c.run.optimizer.precision, {&loss_, &logits_}));
  OptimizerOptions optimizer = c.run.optimizer;
  optimizer.skip_nonfinite = true;  // a non-finite step never changes a parameter
  optimizer.data_parallel = parallel_;
  DAGRAD_ASSIGN_OR_RETURN(ts_, BuildTrainingStep(loss_, model_->parameters(), optimizer));
  BuildStepStats(logits_, targets_);

  // Held-out evaluation and the attention sample: the same parameters.
  {
    Graph::Scope scope(g, "eval");
    eval_tokens_ = g.Input("tokens", DType::kInt64, {c.eval_size, T});
    eval_lengths_ = g.Input("lengths", DType::kInt64, {c.eval_size});
    eval_targets_ = g.Input("targets", DType::kInt64, {c.eval_size, T});
    sample_tokens_ = g.Input("sample_tokens", DType::kInt64, {1, T});
    sample_lengths_ = g.Input("sample_lengths", DType::kInt64, {1});
    Value logits = (*model_)(eval_tokens_, eval_lengths_).logits;
    Value loss = CrossEntropy(logits, eval_targets_);
    DAGRAD_RETURN_IF_ERROR(RewriteForPrecision(c.run.optimizer.precision, {&loss, &logits}));
    eval_stats_ = EvalStats(loss, logits, eval_targets_);
    sample_attention_ = (*model_)(sample_tokens_, sample_lengths_, true).attention;
  }
  DAGRAD_RETURN_IF_ERROR(g.status());

  exec_ = std::make_unique<Executor>(g, std::move(device),
                                     ExecutorOptions{.seed = c.run.seed,
                                                     .check_numerics = c.run.check_numerics,
                                                     .memory_limit_bytes = c.run.memory_limit_bytes,
                                                     .profile = c.run.profile,
                                                     .reserved = data,
                                                     .memory_shares = c.run.memory_shares,
                                                     .communicator = parallel_.communicator});
  DAGRAD_RETURN_IF_ERROR(CompileTrainingStep());
  DAGRAD_ASSIGN_OR_RETURN(eval_plan_, CompileEvaluation(*exec_, eval_stats_, c.eval_size));
  DAGRAD_ASSIGN_OR_RETURN(attention_plan_, exec_->Compile(sample_attention_));
  DAGRAD_ASSIGN_OR_RETURN(eval_set_, eval.Batch(0, c.eval_size));
  return absl::OkStatus();
}

absl::StatusOr<StepResult> ToyTrainer::Step() {
  const int64_t s = step_ + 1;
  DAGRAD_ASSIGN_OR_RETURN(const TaskBatch global,
                          train_data_->Batch(static_cast<uint64_t>(s), config_.run.batch));
  DAGRAD_ASSIGN_OR_RETURN(const TaskBatch batch, Slice(global));
  DAGRAD_ASSIGN_OR_RETURN(const double lr, LearningRate(schedule_, s));
  return RunTrainingStep(
      s, lr,
      {{tokens_, batch.tokens}, {lengths_, batch.lengths}, {targets_, batch.targets}},
      global.targets);
}

absl::StatusOr<EvalResult> ToyTrainer::Evaluate() {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          exec_->Run(*eval_plan_, {{eval_tokens_, eval_set_.tokens},
                                                   {eval_lengths_, eval_set_.lengths},
                                                   {eval_targets_, eval_set_.targets}}));
  return EvalResultOf(out[0]);
}

absl::StatusOr<AttentionSample> ToyTrainer::SampleAttention(int64_t index) {
  if (index < 0 || index >= config_.eval_size) {
    return absl::InvalidArgumentError(absl::StrCat("sample index ", index, " out of range"));
  }
  const int64_t T = config_.model.seq_len, H = config_.model.heads;
  DAGRAD_ASSIGN_OR_RETURN(Tensor tokens, Tensor::Zeros(DType::kInt64, {1, T}));
  const int64_t* all = eval_set_.tokens.data<int64_t>() + index * T;
  std::copy(all, all + T, tokens.data<int64_t>());
  const int64_t len = eval_set_.lengths.data<int64_t>()[index];
  DAGRAD_ASSIGN_OR_RETURN(Tensor lengths, Tensor::FromVector<int64_t>({1}, {len}));
  DAGRAD_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      exec_->Run(*attention_plan_, {{sample_tokens_, tokens}, {sample_lengths_, lengths}}));
  AttentionSample sample;
  sample.tokens.assign(all, all + len);
  for (const Tensor& w : out) {  // (1, H, T, T) -> (H, len, len)
    DAGRAD_ASSIGN_OR_RETURN(Tensor crop, Tensor::Zeros(DType::kFloat32, {H, len, len}));
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < len; ++i) {
        const float* src = w.data<float>() + (h * T + i) * T;
        std::copy(src, src + len, crop.data<float>() + (h * len + i) * len);
      }
    }
    sample.weights.push_back(crop);
  }
  return sample;
}

std::vector<Value> ToyTrainer::Parameters() const { return model_->parameters(); }

TrainingState ToyTrainer::State() const { return {kToyStateFormat, config_.ToMetadata()}; }

std::map<std::string, std::string> ToyTrainer::ModelMetadata() const {
  return config_.model.ToMetadata();
}

absl::StatusOr<TaskBatch> ToyTrainer::Slice(const TaskBatch& global) const {
  TaskBatch b;
  DAGRAD_ASSIGN_OR_RETURN(b.tokens, share_.Rows(global.tokens));
  DAGRAD_ASSIGN_OR_RETURN(b.lengths, share_.Rows(global.lengths));
  DAGRAD_ASSIGN_OR_RETURN(b.targets, share_.Rows(global.targets));
  return b;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ToyTrainer::Pictures() {
  DAGRAD_ASSIGN_OR_RETURN(AttentionSample sample, SampleAttention(0));
  std::vector<std::string> labels;
  for (int64_t t : sample.tokens) labels.push_back(absl::StrCat(t));
  std::vector<std::pair<std::string, std::string>> pictures;
  DAGRAD_ASSIGN_OR_RETURN(std::string heads,
                          plot::AttentionHeatmaps(sample.weights, labels,
                                                  "attention weights for a held-out sequence "
                                                  "(row: query, column: key)"));
  pictures.emplace_back("attention.svg", std::move(heads));
  DAGRAD_ASSIGN_OR_RETURN(std::string encoding,
                          plot::PositionalEncoding(config_.model.seq_len, config_.model.dim));
  pictures.emplace_back("positional_encoding.svg", std::move(encoding));
  return pictures;
}

absl::StatusOr<std::string> ToyTrainer::Summary(const EvalResult& final_eval) {
  return absl::StrFormat("held-out token accuracy %.4f, loss %.4f after %d steps\n",
                         final_eval.accuracy, final_eval.loss, step());
}

}  // namespace dagrad::models
