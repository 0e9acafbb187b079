// models/gpt_trainer.h
//
// GptTrainer trains a models::Gpt on a text file (models/text_task.h): one
// graph holds the training step (forward, cross-entropy, backward, clipping,
// AdamW decaying matrices only), the validation forward and a forward that
// keeps the attention weights of the first validation window; each is
// compiled once. Data, dropout and the learning rate are functions of
// (seed, step), so a run resumed from a checkpoint continues exactly.
//
//   DAGRAD_ASSIGN_OR_RETURN(auto trainer, GptTrainer::Create(config));
//   while (trainer->step() < config.steps) {
//     DAGRAD_ASSIGN_OR_RETURN(TextStepResult r, trainer->Step());
//   }
//   DAGRAD_ASSIGN_OR_RETURN(double val_loss, trainer->Evaluate());
//   DAGRAD_ASSIGN_OR_RETURN(std::string text, trainer->Sample("The ", 200, {.seed = 1}));

#ifndef DAGRAD_MODELS_GPT_TRAINER_H_
#define DAGRAD_MODELS_GPT_TRAINER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/autodiff/optimizer.h"
#include "engine/device.h"
#include "engine/executor.h"
#include "engine/file_io.h"
#include "models/gpt.h"
#include "models/gpt_generator.h"
#include "models/text_task.h"

namespace dagrad::models {

struct TextStepResult {
  int64_t step = 0;
  double loss = 0;  // mean cross-entropy of the batch, nats per byte
  double lr = 0;
  double grad_norm = 0;
};

class GptTrainer {
 public:
  // Create reads the data (TextData::Load's errors) and builds and
  // compiles the model (TextTrainConfig::Validate's errors and the
  // executor's).
  static absl::StatusOr<std::unique_ptr<GptTrainer>> Create(
      const TextTrainConfig& config,
      std::unique_ptr<Device> device = CpuDevice());

  // Step runs step step()+1. Aborted, with nothing changed, when its loss or
  // gradient norm is not finite (the message names the step and value).
  absl::StatusOr<TextStepResult> Step();
  // Evaluate returns the mean validation loss (eval mode).
  absl::StatusOr<double> Evaluate();
  // Attention returns, per layer, the weights (H, T, T) of the first
  // validation window, and that window's bytes.
  absl::StatusOr<std::vector<Tensor>> Attention(std::string* window);
  // Sample continues `prompt` (non-empty bytes) with `tokens` bytes from the
  // current weights (GptGenerator).
  absl::StatusOr<std::string> Sample(const std::string& prompt, int64_t tokens,
                                     const SamplingOptions& sampling);

  // SaveCheckpoint writes parameters, optimizer state, the step and the
  // config (atomically, with checksums). LoadCheckpoint restores them:
  // InvalidArgument for a file that is not a text training checkpoint,
  // FailedPrecondition listing the config fields that differ.
  absl::Status SaveCheckpoint(const std::string& path,
                              const AtomicWriteOptions& options = {});
  absl::Status LoadCheckpoint(const std::string& path);
  // SaveModel writes the parameters with the model's metadata (model=gpt):
  // what `dagrad eval`, `dagrad generate` and tools/reference/gpt.py load.
  absl::Status SaveModel(const std::string& path);

  int64_t step() const { return step_; }
  const TextTrainConfig& config() const { return config_; }
  const TextData& data() const { return *data_; }
  Graph& graph() { return *graph_; }
  Value logits() const { return logits_; }
  Value loss() const { return loss_; }
  const TrainingStep& training_step() const { return ts_; }

 private:
  GptTrainer() = default;
  absl::Status Build(std::unique_ptr<Device> device);
  absl::Status SaveFinite(const std::vector<Value>& vars,
                          const std::map<std::string, std::string>& metadata,
                          const std::string& path,
                          const AtomicWriteOptions& options);

  TextTrainConfig config_;
  std::unique_ptr<TextData> data_;
  std::unique_ptr<Graph> graph_;
  Gpt model_;
  std::unique_ptr<Executor> exec_;
  std::unique_ptr<Plan> train_plan_, eval_plan_, attention_plan_;
  Value tokens_, targets_, logits_, loss_;
  Value eval_tokens_, eval_targets_, eval_loss_, window_tokens_;
  std::vector<Value> attention_;
  TextBatch validation_;
  TrainingStep ts_;
  LrSchedule schedule_;
  int64_t step_ = 0;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT_TRAINER_H_
