// models/lm_trainer.h
//
// LmTrainer trains any causal LanguageModel (models/language_model.h: the
// GPT, a user's model of nn:: layers) on batches of token windows and their
// next tokens, with everything a models::Trainer has: checkpoints that
// resume exactly, the non-finite policy, data parallelism, mixed precision,
// and so models::Fit (models/fit.h). One graph holds the training step
// (forward, cross-entropy, backward, clipping, the optimizer decaying
// matrices only) and the validation forward at each batch size it runs (a
// full batch and a last, smaller one); each is compiled once. The
// batch of step s must be a function of s (and the run's seed), so that a
// resumed run draws the batches the uninterrupted run would have.
//
//   // setup: UserModel
//   LmData data{.train = [&](uint64_t step, int64_t batch) { return MyBatch(step, batch); },
//               .validation = [&](int64_t first, int64_t count) { return MyVal(first, count); },
//               .validation_windows = 10, .window = 64};
//   DAGRAD_ASSIGN_OR_RETURN(auto trainer, LmTrainer::Create(build_my_model, data,
//                                                           {.run = {.batch = 8, .steps = 20}}));
//   DAGRAD_ASSIGN_OR_RETURN(FitResult fit, Fit(*trainer, {.dir = "runs/mine"}));

#ifndef DAGRAD_MODELS_LM_TRAINER_H_
#define DAGRAD_MODELS_LM_TRAINER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "engine/io/safetensors.h"
#include "engine/plan/memory_budget.h"
#include "engine/shape_family.h"
#include "engine/tensor.h"
#include "models/generator.h"
#include "models/language_model.h"
#include "models/trainer.h"

namespace dagrad::models {

// TokenBatch: windows of tokens and, for each position, the token to predict.
struct TokenBatch {
  Tensor tokens;   // int64 (B, T)
  Tensor targets;  // int64 (B, T): the next tokens (-100: ignored)
};

// LmData: what an LmTrainer trains and validates on, windows of `window`
// tokens.
struct LmData {
  // train returns the global batch of step `step` (1-based), `batch` rows.
  std::function<absl::StatusOr<TokenBatch>(uint64_t step, int64_t batch)> train;
  // validation returns `count` validation windows from window `first` on.
  std::function<absl::StatusOr<TokenBatch>(int64_t first, int64_t count)> validation;
  int64_t validation_windows = 0;  // >= 1
  int64_t window = 0;              // T, >= 1 and <= the model's max_len()
  // memory: what the data hold, counted with the run's own memory against
  // RunConfig::memory_limit_bytes.
  MemoryBudget memory;
};

struct LmTrainConfig {
  RunConfig run;
  // Validation windows scored, >= 0: 0 scores them all, N the first
  // min(N, validation_windows).
  int64_t eval_windows = 0;
  // Checkpoints: their format, and what they record beside the model's
  // metadata and the run's settings (a resume under other values is refused).
  std::string format = "lm-train-state/1";
  std::map<std::string, std::string> metadata;
  // initial: when set, the model's starting weights (a pretrained model's,
  // under its parameters' checkpoint names), assigned once the step is
  // compiled and before the first step, in place of the initializers';
  // `initial_source` names them in messages. A resumed run then loads its
  // checkpoint over them. Shared, not copied: a model's weights are large.
  std::shared_ptr<const SafetensorsFile> initial;
  std::string initial_source = "initial weights";
  // tokenizer: the directory of the tokenizer whose ids the model reads (a
  // fine-tuned GPT-2's), which model files record (kTokenizerKey,
  // models/text_codec.h) for `dagrad generate`; empty for a byte-level model.
  std::string tokenizer;
};

class LmTrainer : public Trainer {
 public:
  // Create builds the model with `build`, then the training step, compiles
  // it, and assigns config.initial (the validation forward is built and
  // compiled per batch size when Evaluate first runs it).
  // InvalidArgument for a bad run config or data, a model that is not
  // causal, or initial weights that do not fit the model (AssignVariables:
  // each missing, unexpected or misshapen tensor named); `build`'s and the
  // executor's errors; data parallel, a global batch the ranks do not divide.
  static absl::StatusOr<std::unique_ptr<LmTrainer>> Create(
      const ModelBuilder& build, LmData data, const LmTrainConfig& config,
      std::unique_ptr<Device> device = CpuDevice(), const DataParallelOptions& data_parallel = {});

  // Step runs step step()+1 on data.train(step()+1); accuracy is the
  // fraction of targets the logits' argmax predicts.
  absl::StatusOr<StepResult> Step() override;
  // Evaluate returns the mean token loss and the accuracy over the
  // validation windows scored, eval_windows() of them (eval mode), run
  // run.batch windows at a time and a last, smaller batch for the rest
  // (no padding; its plan is compiled when first run).
  absl::StatusOr<EvalResult> Evaluate() override;
  int64_t eval_windows() const { return eval_windows_; }
  // Summary: "validation loss 1.6177 nats/token over the whole split (214
  // windows) after 2000 steps", or "over 64 of the split's 214 windows
  // (LmTrainConfig::eval_windows)".
  absl::StatusOr<std::string> Summary(const EvalResult& final_eval) override {
    return ValidationSummary(final_eval, "token");
  }

  const RunConfig& run_config() const override { return config_.run; }
  const LanguageModel& model() const { return *model_; }
  // The forward logits and loss of the training step.
  Value logits() const override { return logits_; }
  Value loss() const override { return loss_; }

 protected:
  LmTrainer() = default;
  // Init is Create's work, for a subclass that adds to the graph in
  // BuildMore (before the executor exists) and compiles it in CompileMore.
  absl::Status Init(const ModelBuilder& build, LmData data, const LmTrainConfig& config,
                    std::unique_ptr<Device> device, const DataParallelOptions& data_parallel);
  virtual absl::Status BuildMore() { return absl::OkStatus(); }
  virtual absl::Status CompileMore() { return absl::OkStatus(); }
  // ValidationSummary is Summary's line, the loss in nats per `unit`.
  std::string ValidationSummary(const EvalResult& final_eval, const std::string& unit) const;

  std::vector<Value> Parameters() const override { return model_->parameters(); }
  TrainingState State() const override;
  std::map<std::string, std::string> ModelMetadata() const override;


 private:
  absl::Status Build(const ModelBuilder& build, std::unique_ptr<Device> device);
  absl::Status BuildEval();

  LmTrainConfig config_;
  LmData data_;
  std::unique_ptr<LanguageModel> model_;
  Value tokens_, targets_, logits_, loss_;
  // The scored windows run in batches of eval_rows_ and, when that does
  // not divide them, one last smaller batch, unpadded: the validation
  // forward is a ShapeFamily over the batch size (engine/shape_family.h),
  // built in the training graph on the same parameters.
  int64_t eval_windows_ = 0, eval_rows_ = 0;
  std::unique_ptr<ShapeFamily> eval_;
  LrSchedule schedule_;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_LM_TRAINER_H_
