#include "models/toy_trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/checkpoint.h"
#include "engine/memory_budget.h"
#include "engine/safetensors.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/shape_ops.h"

namespace dagrad::models {
namespace {

// Keys identifying a checkpoint as a training state, beside the config.
constexpr char kFormatKey[] = "dagrad.format";
constexpr char kFormat[] = "toy-train-state/1";
constexpr char kStepKey[] = "dagrad.step";
// Skipped updates so far, in all and in a row (absent: none).
constexpr char kSkippedKey[] = "dagrad.skipped_updates";
constexpr char kConsecutiveKey[] = "dagrad.consecutive_skips";

struct SkipCounts {
  int64_t total = 0, in_a_row = 0;
};

// ReadSkipCounts reads a checkpoint's skip counts (none when absent: the
// file predates them) and checks them against its step.
absl::StatusOr<SkipCounts> ReadSkipCounts(const std::map<std::string, std::string>& metadata,
                                          int64_t step, const std::string& path) {
  SkipCounts c;
  for (auto [key, count] : {std::pair{kSkippedKey, &c.total}, {kConsecutiveKey, &c.in_a_row}}) {
    auto it = metadata.find(key);
    if (it == metadata.end()) continue;
    if (!absl::SimpleAtoi(it->second, count) || *count < 0 || *count > step) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": bad '", key, "' (", it->second, ") at step ", step));
    }
  }
  if (c.in_a_row > c.total) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": more skips in a row (", c.in_a_row, ") than in all (", c.total, ")"));
  }
  return c;
}

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(what); }

// CountTargets is the number of targets that are not ignored.
int64_t CountTargets(const Tensor& targets) {
  const int64_t* t = targets.data<int64_t>();
  return std::count_if(t, t + targets.num_elements(), [](int64_t v) { return v != kIgnoreIndex; });
}

// SliceRows returns rows [begin, begin + rows) of a tensor's first axis.
absl::StatusOr<Tensor> SliceRows(const Tensor& t, int64_t begin, int64_t rows) {
  Dims dims = t.shape().dims();
  const int64_t row_bytes = static_cast<int64_t>(t.nbytes()) / dims[0];
  dims[0] = rows;
  DAGRAD_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(t.dtype(), Shape(dims)));
  std::memcpy(out.raw_data(), static_cast<const char*>(t.raw_data()) + begin * row_bytes,
              rows * row_bytes);
  return out;
}

// The optimizer fields in the CLI's words (--weight_decay, --clip), then
// the rest in the library's (ValidateOptimizerOptions).
absl::Status ValidateOptimizer(const OptimizerOptions& o) {
  if (!(o.weight_decay >= 0) || !std::isfinite(o.weight_decay)) {
    return Bad(absl::StrCat("weight_decay must be finite and >= 0, got ", o.weight_decay));
  }
  if (!(o.clip_norm >= 0) || !std::isfinite(o.clip_norm)) {
    return Bad(absl::StrCat("clip must be finite and >= 0, got ", o.clip_norm));
  }
  return ValidateOptimizerOptions(o);
}

// DataBudget is what the training batch and the evaluation set will take:
// ToyTrainer draws them after Compile, which counts them in its budget.
absl::StatusOr<MemoryBudget> DataBudget(const TaskGenerator& train, const TaskGenerator& eval,
                                        const TrainConfig& c) {
  const int64_t T = c.model.seq_len;
  DAGRAD_ASSIGN_OR_RETURN(const int64_t eval_bytes, eval.BatchBytes(c.eval_size));
  DAGRAD_ASSIGN_OR_RETURN(const int64_t batch_bytes, train.BatchBytes(c.batch));
  MemoryBudget data;
  data.Add("data", absl::StrCat("evaluation set int64 (", c.eval_size, ", ", T, ") x2"),
           eval_bytes);
  data.Add("data", absl::StrCat("training batch int64 (", c.batch, ", ", T, ") x2"),
           batch_bytes);
  return data;
}

}  // namespace

absl::StatusOr<NonFinitePolicy> ParseNonFinitePolicy(const std::string& name) {
  if (name == "stop") return NonFinitePolicy::kStop;
  if (name == "skip") return NonFinitePolicy::kSkip;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown non-finite policy '", name, "' (stop, skip)"));
}

absl::Status TrainConfig::Validate() const {
  DAGRAD_RETURN_IF_ERROR(model.Validate());
  const auto& bad = Bad;
  if (min_len < 0 || min_len > model.seq_len) {
    return bad(absl::StrCat("min_len must be in [0, seq_len=", model.seq_len, "], got ", min_len));
  }
  if (batch < 1) return bad(absl::StrCat("batch must be >= 1, got ", batch));
  if (steps < 0) return bad(absl::StrCat("steps must be >= 0, got ", steps));
  if (!(lr > 0) || !std::isfinite(lr)) {
    return bad(absl::StrCat("lr must be finite and > 0, got ", lr));
  }
  if (warmup < 0) return bad(absl::StrCat("warmup must be >= 0, got ", warmup));
  if (!(final_lr_fraction >= 0 && final_lr_fraction <= 1)) {
    return bad(absl::StrCat("final_lr_fraction must be in [0, 1], got ", final_lr_fraction));
  }
  if (eval_size < 1) return bad(absl::StrCat("eval_size must be >= 1, got ", eval_size));
  if (memory_limit_bytes < 0) {
    return bad(absl::StrCat("memory limit must be >= 0, got ", memory_limit_bytes));
  }
  DAGRAD_RETURN_IF_ERROR(ValidateOptimizer(optimizer));
  if (max_consecutive_skips < 1) {
    return bad(absl::StrCat("max_consecutive_skips must be >= 1, got ", max_consecutive_skips));
  }
  return absl::OkStatus();
}

std::map<std::string, std::string> TrainConfig::ToMetadata() const {
  std::map<std::string, std::string> m = model.ToMetadata();
  m["task"] = TaskName(task);
  m["min_len"] = absl::StrCat(min_len);
  m["batch"] = absl::StrCat(batch);
  m["steps"] = absl::StrCat(steps);
  m["optimizer"] = OptimizerName(optimizer.kind);
  m["weight_decay"] = absl::StrCat(optimizer.weight_decay);
  m["clip"] = absl::StrCat(optimizer.clip_norm);
  m["lr"] = absl::StrCat(lr);
  m["warmup"] = absl::StrCat(warmup);
  m["final_lr_fraction"] = absl::StrCat(final_lr_fraction);
  m["seed"] = absl::StrCat(seed);
  m["eval_size"] = absl::StrCat(eval_size);
  return m;
}

double TokenAccuracy(const Tensor& logits, const Tensor& targets) {
  const auto [correct, total] = CorrectTokens(logits, targets);
  return total ? static_cast<double>(correct) / total : 0.0;
}

std::pair<int64_t, int64_t> CorrectTokens(const Tensor& logits, const Tensor& targets) {
  const int64_t V = logits.shape()[logits.shape().rank() - 1];
  const float* l = logits.data<float>();
  const int64_t* t = targets.data<int64_t>();
  int64_t correct = 0, total = 0;
  for (int64_t i = 0; i < targets.num_elements(); ++i) {
    if (t[i] == kIgnoreIndex) continue;
    const float* row = l + i * V;
    // torch.argmax: NaN counts as the largest value, and the first one wins
    // (whatever its position, a row holding NaN predicts the NaN).
    int64_t best = 0;
    for (int64_t v = 1; v < V && !std::isnan(row[best]); ++v) {
      if (row[v] > row[best] || std::isnan(row[v])) best = v;
    }
    correct += best == t[i];
    ++total;
  }
  return {correct, total};
}

absl::StatusOr<std::unique_ptr<ToyTrainer>> ToyTrainer::Create(
    const TrainConfig& config, std::unique_ptr<Device> device,
    const DataParallelOptions& data_parallel) {
  DAGRAD_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<ToyTrainer> t(new ToyTrainer());
  t->config_ = config;
  t->parallel_ = data_parallel;
  t->rows_ = config.batch;
  if (const Communicator* comm = data_parallel.communicator.get()) {
    if (config.batch % comm->size() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch (the global batch) ", config.batch, " does not split evenly over ",
          comm->size(), " ranks: give a multiple of ", comm->size()));
    }
    t->rows_ = config.batch / comm->size();
    t->first_row_ = comm->rank() * t->rows_;
  }
  t->schedule_ = {.peak = config.lr, .warmup_steps = config.warmup, .total_steps = config.steps,
                  .final_fraction = config.final_lr_fraction};
  DAGRAD_RETURN_IF_ERROR(t->Build(std::move(device)));
  return t;
}

absl::Status ToyTrainer::Build(std::unique_ptr<Device> device) {
  const TrainConfig& c = config_;
  const int64_t T = c.model.seq_len, B = rows_;
  const TaskConfig task{.task = c.task, .vocab = c.model.vocab, .seq_len = T,
                        .min_len = c.min_len};
  DAGRAD_ASSIGN_OR_RETURN(TaskGenerator train, TaskGenerator::Create(task, c.seed));
  DAGRAD_ASSIGN_OR_RETURN(TaskGenerator eval, TaskGenerator::Create(task, EvalSeed(c.seed)));
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
  DAGRAD_RETURN_IF_ERROR(BuildLoss());
  OptimizerOptions optimizer = c.optimizer;
  optimizer.skip_nonfinite = true;  // a non-finite step never changes a parameter
  optimizer.data_parallel = parallel_;
  DAGRAD_ASSIGN_OR_RETURN(ts_, BuildTrainingStep(loss_, model_->parameters(), optimizer));

  // Held-out evaluation and the attention sample: the same parameters.
  {
    Graph::Scope scope(g, "eval");
    eval_tokens_ = g.Input("tokens", DType::kInt64, {c.eval_size, T});
    eval_lengths_ = g.Input("lengths", DType::kInt64, {c.eval_size});
    eval_targets_ = g.Input("targets", DType::kInt64, {c.eval_size, T});
    sample_tokens_ = g.Input("sample_tokens", DType::kInt64, {1, T});
    sample_lengths_ = g.Input("sample_lengths", DType::kInt64, {1});
  }
  {
    Graph::Scope scope(g, "eval");
    eval_logits_ = (*model_)(eval_tokens_, eval_lengths_).logits;
    eval_loss_ = CrossEntropy(eval_logits_, eval_targets_);
    sample_attention_ = (*model_)(sample_tokens_, sample_lengths_, true).attention;
  }
  DAGRAD_RETURN_IF_ERROR(g.status());

  exec_ = std::make_unique<Executor>(g, std::move(device),
                                     ExecutorOptions{.seed = c.seed,
                                                     .check_numerics = c.check_numerics,
                                                     .memory_limit_bytes = c.memory_limit_bytes,
                                                     .profile = c.profile,
                                                     .reserved = data,
                                                     .communicator = parallel_.communicator});
  std::vector<Value> train_fetches = {ts_.global_loss.is_null() ? loss_ : ts_.global_loss,
                                      logits_};
  if (!ts_.grad_norm.is_null()) train_fetches.push_back(ts_.grad_norm);
  DAGRAD_ASSIGN_OR_RETURN(train_plan_, exec_->Compile(train_fetches, ts_.updates));
  DAGRAD_ASSIGN_OR_RETURN(eval_plan_, exec_->Compile({eval_loss_, eval_logits_}));
  DAGRAD_ASSIGN_OR_RETURN(attention_plan_, exec_->Compile(sample_attention_));
  DAGRAD_ASSIGN_OR_RETURN(eval_set_, eval.Batch(0, c.eval_size));
  return absl::OkStatus();
}

absl::StatusOr<StepResult> ToyTrainer::Step() {
  const int64_t s = step_ + 1;
  DAGRAD_ASSIGN_OR_RETURN(const TaskBatch global,
                          train_data_->Batch(static_cast<uint64_t>(s), config_.batch));
  DAGRAD_ASSIGN_OR_RETURN(const TaskBatch batch, Slice(global));
  StepResult r{.step = s, .lr = LearningRate(schedule_, s)};
  Feeds feeds = {{tokens_, batch.tokens}, {lengths_, batch.lengths}, {targets_, batch.targets},
                 {ts_.lr, Tensor::Scalar<double>(r.lr)},
                 // Adam's step counts applied updates only.
                 {ts_.step, Tensor::Scalar<double>(static_cast<double>(s - skipped_))}};
  if (!token_weight_.is_null()) {
    const int64_t targets = CountTargets(global.targets);
    feeds.push_back({token_weight_, Tensor::Scalar<float>(1.0f / std::max<int64_t>(targets, 1))});
  }
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          exec_->Run(*train_plan_, feeds,
                                     {.training = true, .step = static_cast<uint64_t>(s),
                                      .batch_begin = first_row_, .batch_rows = rows_}));
  r.loss = token_weight_.is_null() ? out[0].data<float>()[0] : out[0].data<double>()[0];
  DAGRAD_ASSIGN_OR_RETURN(r.accuracy, GlobalAccuracy(out[1], batch, global));
  r.grad_norm = out[2].data<double>()[0];
  if (UpdateSkipped(r.loss, r.grad_norm)) return NonFinite(r);
  consecutive_skips_ = 0;
  step_ = s;
  return r;
}

absl::StatusOr<StepResult> ToyTrainer::NonFinite(StepResult r) {
  const bool skip = config_.on_nonfinite == NonFinitePolicy::kSkip;
  if (skip && consecutive_skips_ + 1 < config_.max_consecutive_skips) {
    ++skipped_;
    ++consecutive_skips_;
    step_ = r.step;
    r.skipped = true;
    return r;
  }
  const std::string value = std::isfinite(r.loss)
                                ? absl::StrCat("the gradient norm is ", r.grad_norm)
                                : absl::StrCat("the loss is ", r.loss);
  return absl::AbortedError(absl::StrCat(
      "step ", r.step, ": ", value, "; its update was not applied",
      skip ? absl::StrCat(" (", config_.max_consecutive_skips,
                          " steps in a row were not finite: max_consecutive_skips)")
           : "",
      ". Rerun with --check_numerics (TrainConfig::check_numerics) to find the node that "
      "produced it, or lower the learning rate"));
}

absl::StatusOr<EvalResult> ToyTrainer::Evaluate() {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          exec_->Run(*eval_plan_, {{eval_tokens_, eval_set_.tokens},
                                                   {eval_lengths_, eval_set_.lengths},
                                                   {eval_targets_, eval_set_.targets}}));
  return EvalResult{out[0].data<float>()[0], TokenAccuracy(out[1], eval_set_.targets)};
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

absl::Status ToyTrainer::SaveCheckpoint(const std::string& path,
                                        const AtomicWriteOptions& options) {
  std::map<std::string, std::string> meta = config_.ToMetadata();
  meta[kFormatKey] = kFormat;
  meta[kStepKey] = absl::StrCat(step_);
  meta.merge(SkipMetadata());
  std::vector<Value> vars = model_->parameters();
  vars.insert(vars.end(), ts_.state.begin(), ts_.state.end());
  return SaveFinite(vars, meta, path, options);
}

absl::Status ToyTrainer::LoadCheckpoint(const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadCheckpoint(path));
  auto format = file.metadata.find(kFormatKey);
  if (format == file.metadata.end() || format->second != kFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a dagrad training checkpoint (no '", kFormatKey, "')"));
  }
  std::vector<std::string> differences;
  for (const auto& [key, value] : config_.ToMetadata()) {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end() || it->second != value) {
      differences.push_back(absl::StrCat(key, ": checkpoint ",
                                         it == file.metadata.end() ? "(none)" : it->second,
                                         ", this run ", value));
    }
  }
  if (!differences.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": the checkpoint was made with another config (", differences.size(),
        differences.size() == 1 ? " difference): " : " differences): ",
        absl::StrJoin(differences, "; ")));
  }
  int64_t step = 0;
  auto s = file.metadata.find(kStepKey);
  if (s == file.metadata.end() || !absl::SimpleAtoi(s->second, &step) || step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": bad or missing '", kStepKey, "'"));
  }
  std::vector<Value> vars = model_->parameters();
  vars.insert(vars.end(), ts_.state.begin(), ts_.state.end());
  DAGRAD_ASSIGN_OR_RETURN(SkipCounts skips, ReadSkipCounts(file.metadata, step, path));
  DAGRAD_RETURN_IF_ERROR(AssignVariables(*exec_, vars, file, path));
  step_ = step;
  skipped_ = skips.total;
  consecutive_skips_ = skips.in_a_row;
  return absl::OkStatus();
}

absl::Status ToyTrainer::SaveModel(const std::string& path) {
  return SaveFinite(model_->parameters(), config_.model.ToMetadata(), path);
}

absl::Status ToyTrainer::SaveFinite(const std::vector<Value>& vars,
                                    const std::map<std::string, std::string>& metadata,
                                    const std::string& path,
                                    const AtomicWriteOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, CollectVariables(*exec_, vars));
  if (absl::Status st = RequireFinite(file); !st.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("not writing ", path, ": ", st.message()));
  }
  file.metadata = metadata;
  return WriteCheckpoint(path, std::move(file), options);
}

std::map<std::string, std::string> ToyTrainer::SkipMetadata() const {
  return {{kSkippedKey, absl::StrCat(skipped_)},
          {kConsecutiveKey, absl::StrCat(consecutive_skips_)}};
}

absl::Status ToyTrainer::BuildLoss() {
  Graph& g = *graph_;
  Graph::Scope scope(g, "loss");
  if (parallel_.communicator == nullptr) {
    loss_ = CrossEntropy(logits_, targets_);
    return loss_.status();
  }
  // This rank's share of the global mean: its sum over its targets over
  // the global batch's count of targets, fed as a weight.
  token_weight_ = g.Input("token_weight", DType::kFloat32, {});
  loss_ = CrossEntropy(logits_, targets_, {.reduction = CrossEntropyOptions::kSum}) *
          token_weight_;
  return loss_.status();
}

absl::StatusOr<TaskBatch> ToyTrainer::Slice(const TaskBatch& global) const {
  if (parallel_.communicator == nullptr) return global;
  TaskBatch b;
  DAGRAD_ASSIGN_OR_RETURN(b.tokens, SliceRows(global.tokens, first_row_, rows_));
  DAGRAD_ASSIGN_OR_RETURN(b.lengths, SliceRows(global.lengths, first_row_, rows_));
  DAGRAD_ASSIGN_OR_RETURN(b.targets, SliceRows(global.targets, first_row_, rows_));
  return b;
}

absl::StatusOr<double> ToyTrainer::GlobalAccuracy(const Tensor& logits, const TaskBatch& local,
                                                  const TaskBatch& global) {
  if (parallel_.communicator == nullptr) return TokenAccuracy(logits, local.targets);
  double correct = static_cast<double>(CorrectTokens(logits, local.targets).first);
  DAGRAD_RETURN_IF_ERROR(parallel_.communicator->AllReduceSum(
      {.data = &correct, .count = 1, .dtype = DType::kFloat64}));
  const int64_t total = CountTargets(global.targets);
  return total ? correct / static_cast<double>(total) : 0.0;
}

absl::Status ToyTrainer::BroadcastState() {
  Communicator* comm = parallel_.communicator.get();
  if (comm == nullptr || comm->size() == 1) return absl::OkStatus();
  std::vector<Value> vars = model_->parameters();
  vars.insert(vars.end(), ts_.state.begin(), ts_.state.end());
  for (const Value& v : vars) {
    DAGRAD_ASSIGN_OR_RETURN(Tensor value, exec_->Read(v));
    DAGRAD_RETURN_IF_ERROR(comm->Broadcast(value.raw_data(), value.nbytes(), 0));
    DAGRAD_RETURN_IF_ERROR(exec_->Assign(v, value));
  }
  int64_t counts[3] = {step_, skipped_, consecutive_skips_};
  DAGRAD_RETURN_IF_ERROR(comm->Broadcast(counts, sizeof(counts), 0));
  step_ = counts[0];
  skipped_ = counts[1];
  consecutive_skips_ = counts[2];
  return absl::OkStatus();
}

}  // namespace dagrad::models
