// models/toy/toy_trainer.h
//
// ToyTrainer trains a ToyTransformer on a synthetic task: it builds one
// graph holding the training step (forward, cross-entropy, backward,
// clipping, optimizer update), an evaluation forward over a held-out set,
// and a one-sequence forward that keeps the attention weights; it compiles
// each once and runs them. Everything a run depends on — data, dropout
// masks, learning rate, Adam's step — is a function of (seed, step), so a
// run resumed from a checkpoint continues exactly as the uninterrupted run.
// Under config.optimizer.precision (ops/autodiff/precision.h) the
// training and evaluation forwards are rewritten (RewriteForPrecision); the
// attention sample stays float32, and so do the parameters and checkpoints.
//
//   // setup: ToyRun
//   DAGRAD_ASSIGN_OR_RETURN(auto trainer, ToyTrainer::Create(config));
//   while (trainer->step() < config.run.steps) {
//     DAGRAD_ASSIGN_OR_RETURN(StepResult r, trainer->Step());
//   }
//   DAGRAD_ASSIGN_OR_RETURN(EvalResult e, trainer->Evaluate());
//
// Data parallelism (DataParallelOptions with a communicator of N ranks):
// config.run.batch is the global batch; every rank draws it whole from the
// task's generator and trains on rows [r B/N, (r+1) B/N), with dropout
// counters offset by its first row, and a loss that is its sum over its
// targets divided by the global batch's count of targets, so that the
// summed gradients, the loss, the accuracy and every parameter are those
// of one process training on the whole batch (within float summation
// order). BroadcastState makes every rank start from rank 0's state.
// Evaluate and the files are the caller's to do on rank 0 only.
//
// Non-finite steps, checkpoints and the run's settings follow the policies
// every trainer shares (models/trainer.h): TrainConfig::on_nonfinite says
// whether a step whose loss or gradient norm is NaN or Inf stops the run
// or is skipped. SaveCheckpoint and SaveModel refuse to write a NaN or Inf
// (FailedPrecondition naming the tensor).

#ifndef DAGRAD_MODELS_TOY_TOY_TRAINER_H_
#define DAGRAD_MODELS_TOY_TOY_TRAINER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/io/file_io.h"
#include "models/toy/tasks.h"
#include "models/toy/transformer.h"
#include "models/trainer.h"
#include "ops/autodiff/optimizer.h"

namespace dagrad::models {

// TrainConfig: Validate checks every field, NaN and +-Inf included.
struct TrainConfig {
  ToyConfig model;         // model.seq_len is the sequence length T
  Task task = Task::kReverse;
  int64_t min_len = 0;     // 0: fixed length T
  RunConfig run;           // batch, steps, optimizer, schedule, seed, ...
  int64_t eval_size = 512;  // held-out sequences, drawn from EvalSeed(run.seed)

  // Validate returns InvalidArgument naming the first bad field.
  absl::Status Validate() const;
  // ToMetadata lists every field that shapes the run's numbers, as strings.
  std::map<std::string, std::string> ToMetadata() const;
};

struct AttentionSample {
  std::vector<int64_t> tokens;   // the sequence's valid tokens
  std::vector<Tensor> weights;   // per layer, float32 (H, L, L) over valid positions
};

class ToyTrainer : public Trainer {
 public:
  // Create builds and compiles the model. Before allocating anything large
  // it adds up, with checked arithmetic, the parameters, optimizer state,
  // arenas and data sets, and returns ResourceExhausted naming the biggest
  // when they do not fit the memory limit (ExecutorOptions).
  // Errors also: a global batch that the ranks do not divide.
  static absl::StatusOr<std::unique_ptr<ToyTrainer>> Create(
      const TrainConfig& config, std::unique_ptr<Device> device = CpuDevice(),
      const DataParallelOptions& data_parallel = {});

  // Step runs training step step()+1. Aborted when the step's loss or
  // gradient norm is not finite and the policy says stop (the message names
  // the step and the value; nothing changed, step() included); the
  // executor's errors otherwise.
  absl::StatusOr<StepResult> Step() override;
  // Evaluate runs the held-out set in eval mode (no dropout).
  absl::StatusOr<EvalResult> Evaluate() override;
  // SampleAttention returns attention weights for held-out sequence `index`.
  absl::StatusOr<AttentionSample> SampleAttention(int64_t index);
  // Pictures: attention.svg, the heatmaps of held-out sequence 0, and
  // positional_encoding.svg, the model's sinusoidal encoding.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Pictures() override;
  // Summary: "held-out token accuracy 1.0000, loss 0.0012 after 300 steps".
  absl::StatusOr<std::string> Summary(const EvalResult& final_eval) override;

  // Checkpoints (Trainer::SaveCheckpoint) are of format toy-train-state/1;
  // SaveModel writes the parameters under PyTorch's state_dict names with
  // the model config as metadata (loadable by the reference's
  // from_metadata).
  const TrainConfig& config() const { return config_; }
  const RunConfig& run_config() const override { return config_.run; }
  // The forward logits and loss of the training step.
  Value logits() const override { return logits_; }
  Value loss() const override { return loss_; }

 private:
  ToyTrainer() = default;
  absl::Status Build(std::unique_ptr<Device> device);
  std::vector<Value> Parameters() const override;
  TrainingState State() const override;
  std::map<std::string, std::string> ModelMetadata() const override;
  // Slice returns this rank's rows of the global batch.
  absl::StatusOr<TaskBatch> Slice(const TaskBatch& global) const;

  TrainConfig config_;
  std::unique_ptr<ToyTransformer> model_;
  std::unique_ptr<TaskGenerator> train_data_;
  TaskBatch eval_set_;
  std::unique_ptr<Plan> eval_plan_, attention_plan_;
  Value tokens_, lengths_, targets_;
  Value eval_tokens_, eval_lengths_, eval_targets_, eval_stats_;
  Value sample_tokens_, sample_lengths_;
  std::vector<Value> sample_attention_;
  Value logits_, loss_;
  LrSchedule schedule_;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_TOY_TOY_TRAINER_H_
