// models/gpt/gpt_trainer.h
//
// GptTrainer trains a models::Gpt on a text file (models/gpt/text_task.h): one
// graph holds the training step (forward, cross-entropy, backward, clipping,
// AdamW decaying matrices only), the validation forward and a forward that
// keeps the attention weights of the first validation window; each is
// compiled once. Data, dropout and the learning rate are functions of
// (seed, step), so a run resumed from a checkpoint continues exactly.
// Non-finite steps and checkpoints follow the policies every trainer shares
// (models/trainer.h), so `dagrad train --task=text` runs the reverse task's
// loop: stop signals, --on_nonfinite, the previous checkpoint kept. Under
// config.run.optimizer.precision (ops/autodiff/precision.h) the training and
// validation forwards are rewritten (RewriteForPrecision); the attention
// forward stays float32, and so do the parameters and checkpoints.
//
// Data parallelism (DataParallelOptions with a communicator of N ranks), as
// ToyTrainer's (models/trainer.h, BatchShare): config.run.batch is the global
// batch, every rank draws it whole (TextData::TrainBatch) and trains on
// rows [r B/N, (r+1) B/N) with its share of the global mean loss and
// dropout counters offset by its first row, so that every parameter is
// that of one process (within float summation order). BroadcastState
// makes every rank start from rank 0's state; Evaluate, Attention, Sample
// and the files are the caller's to do on rank 0 only.
//
//   DAGRAD_ASSIGN_OR_RETURN(auto trainer, GptTrainer::Create(config));
//   while (trainer->step() < config.run.steps) {
//     DAGRAD_ASSIGN_OR_RETURN(StepResult r, trainer->Step());  // r.loss: nats per byte
//   }
//   DAGRAD_ASSIGN_OR_RETURN(EvalResult val, trainer->Evaluate());
//   DAGRAD_ASSIGN_OR_RETURN(std::string text, trainer->Sample("The ", 200, {.seed = 1}));

#ifndef DAGRAD_MODELS_GPT_GPT_TRAINER_H_
#define DAGRAD_MODELS_GPT_GPT_TRAINER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "models/gpt/gpt.h"
#include "models/gpt/gpt_generator.h"
#include "models/gpt/text_task.h"
#include "models/trainer.h"
#include "ops/autodiff/optimizer.h"

namespace dagrad::models {

class GptTrainer : public Trainer {
 public:
  // Create reads the data (TextData::Load's errors) and builds and
  // compiles the model (TextTrainConfig::Validate's errors and the
  // executor's). Data parallel, errors also: a global batch that the ranks
  // do not divide; FailedPrecondition on a rank whose config.data holds
  // other bytes than rank 0's.
  static absl::StatusOr<std::unique_ptr<GptTrainer>> Create(
      const TextTrainConfig& config, std::unique_ptr<Device> device = CpuDevice(),
      const DataParallelOptions& data_parallel = {});

  // Step runs step step()+1 (Trainer::Step); accuracy is the fraction of
  // next bytes the logits' argmax predicts.
  absl::StatusOr<StepResult> Step() override;
  // Evaluate returns the mean token loss and the accuracy over the
  // validation windows scored, eval_windows() of them (eval mode), run
  // config.run.batch windows at a time.
  absl::StatusOr<EvalResult> Evaluate() override;
  // eval_windows is how many validation windows Evaluate scores: all the
  // split's (TextData::validation_windows) unless config.eval_windows caps it.
  int64_t eval_windows() const { return eval_windows_; }
  // Attention returns, per layer, the weights (H, T, T) of the first
  // validation window, and that window's bytes.
  absl::StatusOr<std::vector<Tensor>> Attention(std::string* window);
  // Sample continues `prompt` (non-empty bytes) with `tokens` bytes from the
  // current weights (GptGenerator).
  absl::StatusOr<std::string> Sample(const std::string& prompt, int64_t tokens,
                                     const SamplingOptions& sampling);

  // Checkpoints (Trainer::SaveCheckpoint) are of format
  // gpt-text-train-state/1; SaveModel writes the parameters with the
  // model's metadata (model=gpt): what `dagrad eval`, `dagrad generate` and
  // tools/reference/gpt.py load.
  const TextTrainConfig& config() const { return config_; }
  const RunConfig& run_config() const override { return config_.run; }
  const TextData& data() const { return *data_; }
  Value logits() const { return logits_; }
  Value loss() const { return loss_; }

 private:
  GptTrainer() = default;
  // EvalForward is the validation forward of `rows` windows, in its own
  // scope of the graph, and its compiled plan.
  struct EvalForward {
    int64_t rows = 0;
    Value tokens, targets, stats;
    std::unique_ptr<Plan> plan;
  };
  absl::Status Build(std::unique_ptr<Device> device);
  absl::Status BuildEval();
  std::vector<Value> Parameters() const override;
  TrainingState State() const override;
  std::map<std::string, std::string> ModelMetadata() const override;

  TextTrainConfig config_;
  std::unique_ptr<TextData> data_;
  Gpt model_;
  std::unique_ptr<Plan> attention_plan_;
  Value tokens_, targets_, logits_, loss_;
  Value window_tokens_;
  std::vector<Value> attention_;
  // The scored windows run in batches of eval_full_.rows and, when that
  // does not divide them, one last batch of eval_last_.rows: a graph has
  // one shape, and a padded last batch would weigh its padding's tokens.
  int64_t eval_windows_ = 0;
  EvalForward eval_full_, eval_last_;
  LrSchedule schedule_;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT_GPT_TRAINER_H_
