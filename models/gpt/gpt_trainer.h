// models/gpt/gpt_trainer.h
//
// GptTrainer trains a models::Gpt on a text file (models/gpt/text_task.h):
// an LmTrainer (models/lm_trainer.h: the training step, with AdamW
// decaying matrices only, and the validation forward) with a forward that
// keeps the attention weights of the first validation window. Data, dropout and the learning rate are functions of
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
//   // setup: TextRun
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
#include "models/generator.h"
#include "models/gpt/gpt.h"
#include "models/gpt/text_task.h"
#include "models/lm_trainer.h"
#include "models/trainer.h"
#include "ops/autodiff/optimizer.h"

namespace dagrad::models {

// StartFromModelFile sets `config` to train on from the byte-level GPT in
// the model file at `path` (a `dagrad train --task=text` run's
// model.safetensors, or tools/reference/gpt.py's save_checkpoint): its
// model (the sizes its metadata records; config's dropout and attention
// kept) and its weights as config.initial. Errors: ReadModelFile's;
// InvalidArgument naming the path for a file that does not hold a GPT
// (GptConfig::FromCheckpoint) or whose vocab is not the 256 byte values.
//
//   // setup: TextRun
//   DAGRAD_ASSIGN_OR_RETURN(auto first, models::GptTrainer::Create(config));
//   DAGRAD_RETURN_IF_ERROR(first->SaveModel("runs/gpt/model.safetensors"));
//   DAGRAD_RETURN_IF_ERROR(models::StartFromModelFile(config, "runs/gpt/model.safetensors"));
//   DAGRAD_ASSIGN_OR_RETURN(auto trainer, models::GptTrainer::Create(config));
absl::Status StartFromModelFile(TextTrainConfig& config, const std::string& path);

// GptTrainer is the LmTrainer of a Gpt on a TextData.
class GptTrainer : public LmTrainer {
 public:
  // Create reads the data (TextData::Load's errors) and builds and
  // compiles the model (TextTrainConfig::Validate's errors and the
  // executor's). Data parallel, errors also: a global batch that the ranks
  // do not divide; FailedPrecondition on a rank whose config.data holds
  // other bytes than rank 0's.
  static absl::StatusOr<std::unique_ptr<GptTrainer>> Create(
      const TextTrainConfig& config, std::unique_ptr<Device> device = CpuDevice(),
      const DataParallelOptions& data_parallel = {});

  // Attention returns, per layer, the weights (H, T, T) of the first
  // validation window, and that window's bytes.
  absl::StatusOr<std::vector<Tensor>> Attention(std::string* window);
  // Pictures: attention.svg, the heatmaps of Attention's window.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Pictures() override;
  // Summary: the validation loss in nats per byte, then "sample:" and 200
  // bytes continuing the validation text's first 16 (temperature 0.8, the
  // run's seed), as valid UTF-8 (TerminalText).
  absl::StatusOr<std::string> Summary(const EvalResult& final_eval) override;
  // Sample continues `prompt` (non-empty bytes) with `tokens` bytes from the
  // current weights (Generator).
  absl::StatusOr<std::string> Sample(const std::string& prompt, int64_t tokens,
                                     const SamplingOptions& sampling);

  // Checkpoints (Trainer::SaveCheckpoint) are of format
  // gpt-text-train-state/1; SaveModel writes the parameters with the
  // model's metadata (model=gpt): what `dagrad eval`, `dagrad generate` and
  // tools/reference/gpt.py load.
  const TextTrainConfig& config() const { return text_config_; }
  const TextData& data() const { return *text_; }

 private:
  GptTrainer() = default;
  // The forward that keeps the attention weights of one window.
  absl::Status BuildMore() override;
  absl::Status CompileMore() override;
  const Gpt& gpt() const { return static_cast<const Gpt&>(model()); }

  TextTrainConfig text_config_;
  std::unique_ptr<TextData> text_;
  std::unique_ptr<Plan> attention_plan_;
  Value window_tokens_;
  std::vector<Value> attention_;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT_GPT_TRAINER_H_
