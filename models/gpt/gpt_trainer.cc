#include "models/gpt/gpt_trainer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/io/checkpoint.h"
#include "engine/io/crc32c.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "ops/loss.h"
#include "ops/shape_ops.h"

namespace dagrad::models {
namespace {

constexpr char kFormat[] = "gpt-text-train-state/1";

// SameDataAsRankZero checks that this rank read the bytes rank 0 read:
// every rank reads the file itself, and another copy of it (another
// machine's) would silently train on other batches.
absl::Status SameDataAsRankZero(Communicator& comm, const TextData& data,
                                const std::string& path) {
  const uint64_t mine[2] = {data.train().size() + data.validation().size(),
                            ExtendCrc32c(Crc32c(data.train()), data.validation())};
  uint64_t root[2] = {mine[0], mine[1]};
  DAGRAD_RETURN_IF_ERROR(comm.Broadcast(root, sizeof(root), 0));
  if (root[0] == mine[0] && root[1] == mine[1]) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s holds other bytes on rank %d than on rank 0 (%d bytes, crc32c %08x; rank 0: %d "
      "bytes, crc32c %08x): every rank must read the same file",
      path, comm.rank(), mine[0], mine[1], root[0], root[1]));
}

}  // namespace

absl::StatusOr<std::unique_ptr<GptTrainer>> GptTrainer::Create(
    const TextTrainConfig& config, std::unique_ptr<Device> device,
    const DataParallelOptions& data_parallel) {
  DAGRAD_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<GptTrainer> t(new GptTrainer());
  t->config_ = config;
  t->parallel_ = data_parallel;
  DAGRAD_ASSIGN_OR_RETURN(t->share_, BatchShare::Create(config.run.batch, data_parallel));
  t->skips_ = NonFiniteSteps(config.run.on_nonfinite, config.run.max_consecutive_skips);
  DAGRAD_ASSIGN_OR_RETURN(TextData data,
                          TextData::Load(config.data, config.model.block_size));
  if (Communicator* comm = data_parallel.communicator.get()) {
    DAGRAD_RETURN_IF_ERROR(SameDataAsRankZero(*comm, data, config.data));
  }
  t->data_ = std::make_unique<TextData>(std::move(data));
  t->schedule_ = config.run.Schedule();
  DAGRAD_RETURN_IF_ERROR(t->Build(std::move(device)));
  return t;
}

absl::Status GptTrainer::Build(std::unique_ptr<Device> device) {
  const TextTrainConfig& c = config_;
  const int64_t T = c.model.block_size, B = share_.rows();
  graph_ = std::make_unique<Graph>();
  Graph& g = *graph_;
  DAGRAD_ASSIGN_OR_RETURN(model_, Gpt::Create(g, c.model));
  tokens_ = g.Input("tokens", DType::kInt64, {B, T});
  targets_ = g.Input("targets", DType::kInt64, {B, T});
  logits_ = model_(tokens_);
  loss_ = share_.MeanLoss(g, logits_, targets_);
  DAGRAD_RETURN_IF_ERROR(RewriteForPrecision(c.run.optimizer.precision, {&loss_, &logits_}));
  OptimizerOptions optimizer = c.run.optimizer;
  optimizer.skip_nonfinite = true;  // a non-finite step never changes a parameter
  optimizer.data_parallel = parallel_;
  DAGRAD_ASSIGN_OR_RETURN(
      ts_, BuildTrainingStep(loss_, DecayMatrices(model_.parameters(), optimizer.weight_decay),
                             optimizer));
  BuildStepStats(logits_, targets_);
  {
    Graph::Scope scope(g, "eval");
    window_tokens_ = g.Input("window", DType::kInt64, {1, T});
    attention_ = model_.Forward(window_tokens_, {.keep_attention = true}).attention;
  }
  DAGRAD_RETURN_IF_ERROR(BuildEval());
  DAGRAD_RETURN_IF_ERROR(g.status());
  exec_ = std::make_unique<Executor>(
      g, std::move(device),
      ExecutorOptions{.seed = c.run.seed,
                      .check_numerics = c.run.check_numerics,
                      .memory_limit_bytes = c.run.memory_limit_bytes,
                      .profile = c.run.profile,
                      .communicator = parallel_.communicator});
  DAGRAD_RETURN_IF_ERROR(CompileTrainingStep());
  DAGRAD_ASSIGN_OR_RETURN(attention_plan_, exec_->Compile(attention_));
  for (EvalForward* e : {&eval_full_, &eval_last_}) {
    if (e->rows > 0) {
      DAGRAD_ASSIGN_OR_RETURN(e->plan, exec_->Compile({e->stats}));
    }
  }
  return absl::OkStatus();
}

absl::Status GptTrainer::BuildEval() {
  const int64_t all = data_->validation_windows();
  eval_windows_ = config_.eval_windows == 0 ? all : std::min(all, config_.eval_windows);
  eval_full_.rows = std::min(eval_windows_, config_.run.batch);
  eval_last_.rows = eval_windows_ % eval_full_.rows;
  for (EvalForward* e : {&eval_full_, &eval_last_}) {
    if (e->rows == 0) continue;
    Graph& g = *graph_;
    Graph::Scope scope(g, e == &eval_full_ ? "eval" : "eval_last");
    const Shape shape({e->rows, config_.model.block_size});
    e->tokens = g.Input("tokens", DType::kInt64, shape);
    e->targets = g.Input("targets", DType::kInt64, shape);
    Value logits = model_(e->tokens);
    Value loss = CrossEntropy(logits, e->targets);
    DAGRAD_RETURN_IF_ERROR(RewriteForPrecision(config_.run.optimizer.precision, {&loss, &logits}));
    e->stats = EvalStats(loss, logits, e->targets);
  }
  return absl::OkStatus();
}

absl::StatusOr<StepResult> GptTrainer::Step() {
  const int64_t s = step_ + 1;
  DAGRAD_ASSIGN_OR_RETURN(
      const TextBatch global,
      data_->TrainBatch(config_.run.seed, static_cast<uint64_t>(s), config_.run.batch));
  TextBatch batch;
  DAGRAD_ASSIGN_OR_RETURN(batch.tokens, share_.Rows(global.tokens));
  DAGRAD_ASSIGN_OR_RETURN(batch.targets, share_.Rows(global.targets));
  DAGRAD_ASSIGN_OR_RETURN(const double lr, LearningRate(schedule_, s));
  return RunTrainingStep(s, lr,
                         {{tokens_, batch.tokens}, {targets_, batch.targets}}, global.targets);
}

absl::StatusOr<EvalResult> GptTrainer::Evaluate() {
  // Each batch's loss is the mean over its tokens: weighted by its count
  // of tokens, the sum over batches is the mean over every token scored.
  double loss_sum = 0, correct = 0, counted = 0;
  for (int64_t first = 0; first < eval_windows_; first += eval_full_.rows) {
    EvalForward& e = eval_windows_ - first >= eval_full_.rows ? eval_full_ : eval_last_;
    DAGRAD_ASSIGN_OR_RETURN(const TextBatch b, data_->Validation(first, e.rows));
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                            exec_->Run(*e.plan, {{e.tokens, b.tokens}, {e.targets, b.targets}}));
    const double* stats = out[0].data<double>();  // [loss, correct, counted]
    loss_sum += stats[0] * stats[2];
    correct += stats[1];
    counted += stats[2];
  }
  return EvalResult{.loss = loss_sum / counted, .accuracy = TokenAccuracy(correct, counted)};
}

absl::StatusOr<std::vector<Tensor>> GptTrainer::Attention(std::string* window) {
  const int64_t T = config_.model.block_size;
  DAGRAD_ASSIGN_OR_RETURN(const TextBatch first, data_->Validation(0, 1));
  *window = TokensToBytes(absl::MakeConstSpan(first.tokens.data<int64_t>(), T));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          exec_->Run(*attention_plan_, {{window_tokens_, first.tokens}}));
  for (Tensor& w : out) {  // (1, H, T, T) -> (H, T, T)
    DAGRAD_ASSIGN_OR_RETURN(w, w.Reshaped({config_.model.heads, T, T}));
  }
  return out;
}

absl::StatusOr<std::string> GptTrainer::Sample(
    const std::string& prompt, int64_t tokens,
    const SamplingOptions& sampling) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile weights,
                          CollectVariables(*exec_, model_.parameters()));
  DAGRAD_ASSIGN_OR_RETURN(auto gen,
                          GptGenerator::Create(config_.model, weights));
  DAGRAD_ASSIGN_OR_RETURN(
      std::vector<int64_t> more,
      gen->Generate(BytesToTokens(prompt),
                    {.tokens = tokens, .sampling = sampling}));
  return prompt + TokensToBytes(more);
}

std::vector<Value> GptTrainer::Parameters() const { return model_.parameters(); }

TrainingState GptTrainer::State() const { return {kFormat, config_.ToMetadata()}; }

std::map<std::string, std::string> GptTrainer::ModelMetadata() const {
  return config_.model.ToMetadata();
}

}  // namespace dagrad::models
