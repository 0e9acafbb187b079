#include "models/trainer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/text_codec.h"
#include "models/toy/tasks.h"
#include "ops/collective.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "ops/sampling.h"
#include "ops/shape_ops.h"

namespace dagrad::models {
namespace {

// Keys identifying a checkpoint as a training state, beside the config.
constexpr char kFormatKey[] = "dagrad.format";
constexpr char kStepKey[] = "dagrad.step";
// Skipped updates so far, in all and in a row (absent: none).
constexpr char kSkippedKey[] = "dagrad.skipped_updates";
constexpr char kConsecutiveKey[] = "dagrad.consecutive_skips";

// Config fields that dagrad did not record in its first checkpoints, each
// with the value every run that wrote such a checkpoint had: the optimizer's
// betas and eps and the cosine decay before they could be set (2026-11-27),
// GPT-2's dropouts before they were applied, and SGD's momentum (the CLI's
// 0.9) before it was recorded (2026-11-29).
constexpr std::pair<const char*, const char*> kValueBeforeRecorded[] = {
    {"beta1", "0.9"},      {"beta2", "0.999"},    {"eps", "1e-08"},     {"lr_decay", "cosine"},
    {"attn_pdrop", "0"}, {"embd_pdrop", "0"}, {"resid_pdrop", "0"}, {"label_smoothing", "0"},
    {"precision", "fp32"}, {"momentum", "0.9"}, {"nesterov", "0"}};

const char* ValueBeforeRecorded(const std::string& key) {
  for (const auto& [field, value] : kValueBeforeRecorded) {
    if (key == field) return value;
  }
  return nullptr;
}

// SameSetting: a config field's two values agree; the paths of the data
// and of --init when they name one file, however spelled (c.txt, ./c.txt,
// its absolute path).
bool SameSetting(const std::string& key, const std::string& a, const std::string& b) {
  return a == b || ((key == "data" || key == "init") && SameFile(a, b));
}

// ConfigDifferences lists the fields of `config` that `metadata` holds
// with another value, or lacks (unless it was written before the field was
// recorded, with the value this run has).
std::vector<std::string> ConfigDifferences(const std::map<std::string, std::string>& config,
                                           const std::map<std::string, std::string>& metadata) {
  std::vector<std::string> differences;
  for (const auto& [key, value] : config) {
    if (key == kTokenizerKey) continue;  // where the tokenizer was, not a setting
    auto it = metadata.find(key);
    if (it != metadata.end() && SameSetting(key, it->second, value)) continue;
    const char* before = ValueBeforeRecorded(key);
    if (it == metadata.end() && before != nullptr && value == before) continue;
    // A checkpoint from before the data's checksum was recorded resumes as
    // it did: on the data's path alone.
    if (it == metadata.end() && key == kDataChecksumKey) continue;
    const std::string held =
        it != metadata.end() ? it->second
        : before != nullptr  ? absl::StrCat("(none: written before dagrad recorded it, when it was ",
                                            before, ")")
                             : "(none)";
    // dagrad train's default --warmup was 30 at any --steps before
    // 2026-11-29: a shorter run stopped before then resumes given it.
    const std::string note =
        key == "warmup" && it != metadata.end()
            ? absl::StrCat(" (dagrad train's --warmup, when not given, is 30 or --steps / 10, "
                           "whichever is fewer, since 2026-11-29: give --warmup=",
                           it->second, " to continue)")
            : "";
    differences.push_back(absl::StrCat(key, ": checkpoint ", held, ", this run ", value, note));
  }
  return differences;
}

// CountTargets is the number of targets that are not ignored.
int64_t CountTargets(const Tensor& targets) {
  const int64_t* t = targets.data<int64_t>();
  return std::count_if(t, t + targets.num_elements(), [](int64_t v) { return v != kIgnoreIndex; });
}

}  // namespace

// The payload that marks NonFiniteSteps::NonFinite's stop.
constexpr absl::string_view kNonFiniteStop = "dagrad.models.NonFiniteStop";

absl::Status NonFiniteSteps::NonFinite(int64_t step, double loss, double grad_norm) {
  const bool skip = policy_ == NonFinitePolicy::kSkip;
  if (skip && in_a_row_ + 1 < max_in_a_row_) {
    ++total_;
    ++in_a_row_;
    return absl::OkStatus();
  }
  const std::string value = std::isfinite(loss)
                                ? absl::StrCat("the gradient norm is ", grad_norm)
                                : absl::StrCat("the loss is ", loss);
  absl::Status stop = absl::AbortedError(absl::StrCat(
      "step ", step, ": ", value, "; its update was not applied",
      skip ? absl::StrCat(" (", max_in_a_row_,
                          " steps in a row were not finite: max_consecutive_skips)")
           : "",
      ". Rerun with ExecutorOptions::check_numerics set to find the node that "
      "produced it, or lower the learning rate"));
  stop.SetPayload(kNonFiniteStop, absl::Cord("a NaN or Inf"));
  return stop;
}

bool IsNonFiniteStop(const absl::Status& status) {
  return status.GetPayload(kNonFiniteStop).has_value();
}

std::map<std::string, std::string> NonFiniteSteps::Metadata() const {
  return {{kSkippedKey, absl::StrCat(total_)}, {kConsecutiveKey, absl::StrCat(in_a_row_)}};
}

absl::Status NonFiniteSteps::Restore(const std::map<std::string, std::string>& metadata,
                                     int64_t step, const std::string& path) {
  int64_t total = 0, in_a_row = 0;
  for (auto [key, count] : {std::pair{kSkippedKey, &total}, {kConsecutiveKey, &in_a_row}}) {
    auto it = metadata.find(key);
    if (it == metadata.end()) continue;
    if (!absl::SimpleAtoi(it->second, count) || *count < 0 || *count > step) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": bad '", key, "' (", it->second, ") at step ", step));
    }
  }
  if (in_a_row > total) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": more skips in a row (", in_a_row, ") than in all (", total, ")"));
  }
  total_ = total;
  in_a_row_ = in_a_row;
  return absl::OkStatus();
}

absl::Status TrainingState::Save(Executor& exec, const std::vector<Value>& vars, int64_t step,
                                 const NonFiniteSteps& skips, const std::string& path,
                                 const AtomicWriteOptions& options) const {
  std::map<std::string, std::string> meta = config;
  meta[kFormatKey] = format;
  meta[kStepKey] = absl::StrCat(step);
  meta.merge(skips.Metadata());
  return SaveFiniteVariables(exec, vars, std::move(meta), path, options);
}

absl::StatusOr<int64_t> TrainingState::Load(Executor& exec, const std::vector<Value>& vars,
                                            NonFiniteSteps& skips,
                                            const std::string& path) const {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file,
                          ReadCheckpoint(path, {.require_checksums = true}));
  auto found = file.metadata.find(kFormatKey);
  if (found == file.metadata.end() || found->second != format) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a dagrad training checkpoint of this model (no '", kFormatKey, "' ",
        format, ")"));
  }
  const std::vector<std::string> differences = ConfigDifferences(config, file.metadata);
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
  NonFiniteSteps restored = skips;
  DAGRAD_RETURN_IF_ERROR(restored.Restore(file.metadata, step, path));
  // The metadata's config is this run's (checked above): the model built
  // from the flags is the model the metadata describes.
  const std::string described = absl::StrJoin(config, ", ", absl::PairFormatter("="));
  DAGRAD_RETURN_IF_ERROR(AssignVariables(exec, vars, file, path, {.from_metadata = described}));
  skips = restored;
  return step;
}

// The payload that marks SaveFiniteVariables's refusal of a NaN or Inf.
constexpr absl::string_view kNonFiniteRefusal = "dagrad.models.NonFiniteRefusal";

bool IsNonFiniteRefusal(const absl::Status& status) {
  return status.GetPayload(kNonFiniteRefusal).has_value();
}

absl::Status SaveFiniteVariables(Executor& exec, const std::vector<Value>& vars,
                                 std::map<std::string, std::string> metadata,
                                 const std::string& path, const AtomicWriteOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, CollectVariables(exec, vars));
  if (absl::Status st = RequireFinite(file); !st.ok()) {
    absl::Status refusal =
        absl::FailedPreconditionError(absl::StrCat("not writing ", path, ": ", st.message(),
                                                   "; a non-finite value is never saved"));
    refusal.SetPayload(kNonFiniteRefusal, absl::Cord("a NaN or Inf"));
    return refusal;
  }
  file.metadata = std::move(metadata);
  return WriteCheckpoint(path, std::move(file), options);
}

Value TokenCounts(Value logits, Value targets) {
  if (!logits.ok()) return logits;
  Graph& g = *logits.graph();
  const Value ignored = g.Constant(Tensor::Scalar<int64_t>(kIgnoreIndex), "ignore_index");
  // An argmax is never -100, so an ignored target is never right.
  const Value correct = Sum(Cast(Equal(ArgMax(logits, -1), targets), DType::kFloat64));
  const Value counted = Sum(Cast(LogicalNot(Equal(targets, ignored)), DType::kFloat64));
  return Concat({Reshape(correct, {1}), Reshape(counted, {1})}, 0);
}

double TokenAccuracy(double correct, double counted) {
  return counted > 0 ? correct / counted : 0.0;
}

Value EvalStats(Value loss, Value logits, Value targets) {
  return Concat({Reshape(Cast(loss, DType::kFloat64), {1}), TokenCounts(logits, targets)}, 0);
}

EvalResult EvalResultOf(const Tensor& stats) {
  const double* s = stats.data<double>();
  return {.loss = s[0], .accuracy = TokenAccuracy(s[1], s[2])};
}

absl::StatusOr<BatchShare> BatchShare::Create(int64_t batch,
                                              const DataParallelOptions& parallel) {
  BatchShare share;
  share.rows_ = batch;
  const Communicator* comm = parallel.communicator.get();
  if (comm == nullptr) return share;
  if (batch % comm->size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch (the global batch) ", batch, " does not split evenly over ", comm->size(),
        " ranks (MPI processes or --replicas): give a multiple of ", comm->size()));
  }
  share.comm_ = parallel.communicator;
  share.rows_ = batch / comm->size();
  share.first_row_ = comm->rank() * share.rows_;
  return share;
}

Value BatchShare::MeanLoss(Graph& g, Value logits, Value targets, double label_smoothing) {
  Graph::Scope scope(g, "loss");
  if (comm_ == nullptr) return CrossEntropy(logits, targets, {.label_smoothing = label_smoothing});
  weight_ = g.Input("token_weight", DType::kFloat32, {});
  return CrossEntropy(logits, targets, {.reduction = CrossEntropyOptions::kSum,
                                        .label_smoothing = label_smoothing}) *
         weight_;
}

Value BatchShare::JobLoss(const TrainingStep& ts) const {
  return ts.global_loss.is_null() ? ts.loss : ts.global_loss;
}

absl::Status RewriteForPrecision(Precision precision, std::initializer_list<Value*> values) {
  std::vector<Value> forward;
  for (const Value* v : values) forward.push_back(*v);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> rewritten, ApplyPrecision(forward, precision));
  size_t i = 0;
  for (Value* v : values) *v = rewritten[i++];
  return absl::OkStatus();
}

Value BatchShare::Counts(Value logits, Value targets) const {
  const Value counts = TokenCounts(logits, targets);
  return comm_ == nullptr ? counts : AllReduce(counts);
}

absl::StatusOr<Tensor> BatchShare::Rows(const Tensor& global) const {
  if (comm_ == nullptr) return global;
  Dims dims = global.shape().dims();
  const int64_t row_bytes = static_cast<int64_t>(global.nbytes()) / dims[0];
  dims[0] = rows_;
  DAGRAD_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(global.dtype(), Shape(dims)));
  std::memcpy(out.raw_data(),
              static_cast<const char*>(global.raw_data()) + first_row_ * row_bytes,
              rows_ * row_bytes);
  return out;
}

void BatchShare::FeedWeight(const Tensor& global_targets, Feeds& feeds) const {
  if (weight_.is_null()) return;
  const int64_t targets = CountTargets(global_targets);
  feeds.push_back({weight_, Tensor::Scalar<float>(1.0f / std::max<int64_t>(targets, 1))});
}

RunOptions BatchShare::Training(uint64_t step) const {
  return {.training = true, .step = step, .batch_begin = first_row_, .batch_rows = rows_};
}

absl::Status BatchShare::BroadcastState(Executor& exec, const std::vector<Value>& vars,
                                        int64_t& step, NonFiniteSteps& skips) const {
  if (comm_ == nullptr || comm_->size() == 1) return absl::OkStatus();
  for (const Value& v : vars) {
    DAGRAD_ASSIGN_OR_RETURN(Tensor value, exec.Read(v));
    DAGRAD_RETURN_IF_ERROR(comm_->Broadcast(value.raw_data(), value.nbytes(), 0));
    DAGRAD_RETURN_IF_ERROR(exec.Assign(v, value));
  }
  int64_t counts[3] = {step, skips.total(), skips.in_a_row()};
  DAGRAD_RETURN_IF_ERROR(comm_->Broadcast(counts, sizeof(counts), 0));
  step = counts[0];
  skips.SetCounts(counts[1], counts[2]);
  return absl::OkStatus();
}

void Trainer::BuildStepStats(Value logits, Value targets) {
  Graph::Scope scope(*graph_, "metrics");
  const Value loss = Reshape(Cast(share_.JobLoss(ts_), DType::kFloat64), {1});
  step_stats_ =
      Concat({loss, Reshape(ts_.grad_norm, {1}), share_.Counts(logits, targets)}, 0);
}

absl::Status Trainer::CompileTrainingStep() {
  DAGRAD_ASSIGN_OR_RETURN(train_plan_, exec_->Compile({step_stats_}, ts_.updates));
  return absl::OkStatus();
}

absl::StatusOr<StepResult> Trainer::RunTrainingStep(int64_t step, double lr, Feeds data,
                                                    const Tensor& global_targets) {
  StepResult r{.step = step, .lr = lr};
  data.push_back({ts_.lr, Tensor::Scalar<double>(lr)});
  // Adam's step counts applied updates only.
  data.push_back({ts_.step, Tensor::Scalar<double>(static_cast<double>(step - skips_.total()))});
  share_.FeedWeight(global_targets, data);
  DAGRAD_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      exec_->Run(*train_plan_, data, share_.Training(static_cast<uint64_t>(step))));
  const double* stats = out[0].data<double>();  // BuildStepStats
  r.loss = stats[0];
  r.grad_norm = stats[1];
  r.accuracy = TokenAccuracy(stats[2], stats[3]);
  if (UpdateSkipped(r.loss, r.grad_norm)) {
    DAGRAD_RETURN_IF_ERROR(skips_.NonFinite(step, r.loss, r.grad_norm));
    r.skipped = true;
  } else {
    skips_.Finite();
  }
  step_ = step;
  return r;
}

std::vector<Value> Trainer::StateVariables() const {
  std::vector<Value> vars = Parameters();
  vars.insert(vars.end(), ts_.state.begin(), ts_.state.end());
  return vars;
}

absl::Status Trainer::SaveCheckpoint(const std::string& path, const AtomicWriteOptions& options) {
  return State().Save(*exec_, StateVariables(), step_, skips_, path, options);
}

absl::Status Trainer::LoadCheckpoint(const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(step_, State().Load(*exec_, StateVariables(), skips_, path));
  return absl::OkStatus();
}

absl::Status Trainer::BroadcastState() {
  return share_.BroadcastState(*exec_, StateVariables(), step_, skips_);
}

absl::Status Trainer::SaveModel(const std::string& path) {
  return SaveFiniteVariables(*exec_, Parameters(), ModelMetadata(), path);
}

absl::StatusOr<SafetensorsFile> Trainer::Weights() {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile weights, CollectVariables(*exec_, Parameters()));
  weights.metadata = ModelMetadata();
  return weights;
}

absl::StatusOr<std::string> Trainer::Summary(const EvalResult& final_eval) {
  return absl::StrFormat("held-out loss %.4f after %d steps\n", final_eval.loss, step());
}

}  // namespace dagrad::models
