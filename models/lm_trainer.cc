#include "models/lm_trainer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/io/checkpoint.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "models/text_codec.h"
#include "ops/loss.h"

namespace dagrad::models {
namespace {

absl::Status Validate(const LmData& data, const LmTrainConfig& config) {
  DAGRAD_RETURN_IF_ERROR(config.run.Validate());
  if (config.eval_windows < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eval_windows must be >= 0 (0: every validation window), got ", config.eval_windows));
  }
  // Checkpoints record these as JSON text, which holds UTF-8 alone: a file
  // name of other bytes would stop the run at its first save.
  std::map<std::string, std::string> recorded = config.metadata;
  recorded["tokenizer"] = config.tokenizer;
  for (const auto& [key, value] : recorded) {
    if (!IsValidUtf8(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the run's ", key, " ", QuotedText(value),
          " is not valid UTF-8, and checkpoints record it as text: give the file a UTF-8 name"));
    }
  }
  if (!data.train || !data.validation) {
    return absl::InvalidArgumentError("LmData needs both a train and a validation function");
  }
  if (data.validation_windows < 1 || data.window < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("LmData needs validation_windows >= 1 and window >= 1, got ",
                     data.validation_windows, " and ", data.window));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LmTrainer>> LmTrainer::Create(
    const ModelBuilder& build, LmData data, const LmTrainConfig& config,
    std::unique_ptr<Device> device, const DataParallelOptions& data_parallel) {
  std::unique_ptr<LmTrainer> t(new LmTrainer());
  DAGRAD_RETURN_IF_ERROR(t->Init(build, std::move(data), config, std::move(device), data_parallel));
  return t;
}

absl::Status LmTrainer::Init(const ModelBuilder& build, LmData data, const LmTrainConfig& config,
                             std::unique_ptr<Device> device,
                             const DataParallelOptions& data_parallel) {
  DAGRAD_RETURN_IF_ERROR(Validate(data, config));
  config_ = config;
  data_ = std::move(data);
  parallel_ = data_parallel;
  DAGRAD_ASSIGN_OR_RETURN(share_, BatchShare::Create(config.run.batch, data_parallel));
  skips_ = NonFiniteSteps(config.run.on_nonfinite, config.run.max_consecutive_skips);
  schedule_ = config.run.Schedule();
  return Build(build, std::move(device));
}

absl::Status LmTrainer::Build(const ModelBuilder& build, std::unique_ptr<Device> device) {
  const RunConfig& run = config_.run;
  graph_ = std::make_unique<Graph>();
  Graph& g = *graph_;
  DAGRAD_ASSIGN_OR_RETURN(model_, BuildModel(build, g));
  if (!model_->causal() || data_.window > model_->max_len()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LmTrainer trains causal models on windows of at most their max_len; this one is ",
        model_->causal() ? "causal" : "not causal", " with ", model_->max_len_name(), " ",
        model_->max_len(), ", the data's windows ", data_.window));
  }
  const Shape shape({share_.rows(), data_.window});
  tokens_ = g.Input("tokens", DType::kInt64, shape);
  targets_ = g.Input("targets", DType::kInt64, shape);
  logits_ = model_->Logits(tokens_);
  loss_ = share_.MeanLoss(g, logits_, targets_, config_.run.label_smoothing);
  DAGRAD_RETURN_IF_ERROR(RewriteForPrecision(run.optimizer.precision, {&loss_, &logits_}));
  OptimizerOptions optimizer = run.optimizer;
  optimizer.skip_nonfinite = true;  // a non-finite step never changes a parameter
  optimizer.data_parallel = parallel_;
  DAGRAD_ASSIGN_OR_RETURN(
      ts_, BuildTrainingStep(loss_, DecayMatrices(model_->parameters(), optimizer.weight_decay),
                             optimizer));
  BuildStepStats(logits_, targets_);
  DAGRAD_RETURN_IF_ERROR(BuildMore());
  DAGRAD_RETURN_IF_ERROR(g.status());
  exec_ = std::make_unique<Executor>(g, std::move(device),
                                     ExecutorOptions{.seed = run.seed,
                                                     .check_numerics = run.check_numerics,
                                                     .memory_limit_bytes = run.memory_limit_bytes,
                                                     .profile = run.profile,
                                                     .reserved = data_.memory,
                                                     .memory_shares = run.memory_shares,
                                                     .communicator = parallel_.communicator});
  DAGRAD_RETURN_IF_ERROR(CompileTrainingStep());
  if (config_.initial != nullptr) {
    // A NaN in the weights is a NaN loss at step 1, which would blame the
    // learning rate.
    if (absl::Status finite = RequireFinite(*config_.initial); !finite.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(config_.initial_source, ": ", finite.message(),
                                                     "; training needs finite weights"));
    }
    DAGRAD_RETURN_IF_ERROR(AssignVariables(*exec_, model_->parameters(), *config_.initial,
                                           config_.initial_source));
  }
  DAGRAD_RETURN_IF_ERROR(BuildEval());
  return CompileMore();
}

absl::Status LmTrainer::BuildEval() {
  const int64_t all = data_.validation_windows;
  eval_windows_ = config_.eval_windows == 0 ? all : std::min(all, config_.eval_windows);
  eval_rows_ = std::min(eval_windows_, config_.run.batch);
  const std::vector<Dim> shape = {"batch", data_.window};
  auto build = [this](Graph& g, const Binding& b) -> absl::StatusOr<Specialized> {
    Graph::Scope scope(g, "eval");
    Value logits = model_->Logits(b.input("tokens"));
    Value loss = CrossEntropy(logits, b.input("targets"));
    DAGRAD_RETURN_IF_ERROR(RewriteForPrecision(config_.run.optimizer.precision, {&loss, &logits}));
    return Specialized{.fetches = {EvalStats(loss, logits, b.input("targets"))}};
  };
  DAGRAD_ASSIGN_OR_RETURN(
      eval_, ShapeFamily::Create(*graph_, *exec_,
                                 {.inputs = {{"tokens", DType::kInt64, shape},
                                             {"targets", DType::kInt64, shape}},
                                  .bounds = {{"batch", eval_rows_}},
                                  .max_plans = 2},
                                 build));
  return absl::OkStatus();
}

absl::StatusOr<StepResult> LmTrainer::Step() {
  const int64_t s = step_ + 1;
  DAGRAD_ASSIGN_OR_RETURN(const TokenBatch global,
                          data_.train(static_cast<uint64_t>(s), config_.run.batch));
  TokenBatch batch;
  DAGRAD_ASSIGN_OR_RETURN(batch.tokens, share_.Rows(global.tokens));
  DAGRAD_ASSIGN_OR_RETURN(batch.targets, share_.Rows(global.targets));
  DAGRAD_ASSIGN_OR_RETURN(const double lr, LearningRate(schedule_, s));
  return RunTrainingStep(s, lr, {{tokens_, batch.tokens}, {targets_, batch.targets}},
                         global.targets);
}

absl::StatusOr<EvalResult> LmTrainer::Evaluate() {
  // Each batch's loss is the mean over its tokens: weighted by its count
  // of tokens, the sum over batches is the mean over every token scored.
  double loss_sum = 0, correct = 0, counted = 0;
  for (int64_t first = 0; first < eval_windows_; first += eval_rows_) {
    const int64_t rows = std::min(eval_rows_, eval_windows_ - first);
    DAGRAD_ASSIGN_OR_RETURN(const TokenBatch b, data_.validation(first, rows));
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                            eval_->Run({{"tokens", b.tokens}, {"targets", b.targets}}));
    const double* stats = out[0].data<double>();  // [loss, correct, counted]
    loss_sum += stats[0] * stats[2];
    correct += stats[1];
    counted += stats[2];
  }
  return EvalResult{.loss = loss_sum / counted, .accuracy = TokenAccuracy(correct, counted)};
}

std::map<std::string, std::string> LmTrainer::ModelMetadata() const {
  std::map<std::string, std::string> m = model_->Metadata();
  if (!config_.tokenizer.empty()) m[kTokenizerKey] = config_.tokenizer;
  return m;
}

TrainingState LmTrainer::State() const {
  std::map<std::string, std::string> m = model_->Metadata();
  m.merge(config_.run.ToMetadata());
  m["eval_windows"] = absl::StrCat(config_.eval_windows);
  for (const auto& [key, value] : config_.metadata) m[key] = value;
  // As the model file: generate and export read the tokenizer of a
  // checkpoint from anywhere (the recorded --init may be relative).
  if (!config_.tokenizer.empty()) m[kTokenizerKey] = config_.tokenizer;
  return {config_.format, m};
}

std::string LmTrainer::ValidationSummary(const EvalResult& final_eval,
                                         const std::string& unit) const {
  const int64_t all = data_.validation_windows;
  return absl::StrFormat(
      "validation loss %.4f nats/%s and accuracy %.4f (next %s) over %s after %d steps\n",
      final_eval.loss, unit, final_eval.accuracy, unit,
      eval_windows_ == all
          ? absl::StrCat("the whole split (", all, " windows)")
          : absl::StrCat(eval_windows_, " of the split's ", all,
                         " windows (LmTrainConfig::eval_windows)"),
      step());
}

}  // namespace dagrad::models
