// models/run_config.h
//
// RunConfig: the settings of a training run that do not depend on the
// model or the task (the batch, the steps, the optimizer and its learning
// rate schedule, the seed, the non-finite policy, debugging and memory
// limits). Every task's configuration embeds one as `run`
// (models::TrainConfig, models::TextTrainConfig), so that they are written,
// checked and recorded in checkpoints once.
//
//   models::TextTrainConfig config{.model = {.block_size = 16, .dim = 16, .heads = 2, .layers = 1},
//                                  .data = "input.txt"};
//   config.run.steps = 2000;
//   config.run.optimizer.beta2 = 0.99;
//   DAGRAD_RETURN_IF_ERROR(config.run.Validate());
//   std::map<std::string, std::string> m = config.run.ToMetadata();  // "lr" -> "0.001", ...

#ifndef DAGRAD_MODELS_RUN_CONFIG_H_
#define DAGRAD_MODELS_RUN_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ops/autodiff/optimizer.h"

namespace dagrad::models {

// NonFinitePolicy: what a step whose loss or gradient norm is not finite
// does (models/trainer.h).
enum class NonFinitePolicy { kStop, kSkip };

// ParseNonFinitePolicy accepts "stop" and "skip"; InvalidArgument else.
absl::StatusOr<NonFinitePolicy> ParseNonFinitePolicy(const std::string& name);

// RunConfig: Validate checks every field, NaN and +-Inf included. The
// defaults are the toy tasks'; a task's config may start from others
// (TextTrainConfig's optimizer is AdamW with weight decay 0.1).
struct RunConfig {
  int64_t batch = 64;    // sequences per step (data parallel: the global batch)
  int64_t steps = 300;   // training steps
  // ValidateOptimizerOptions's ranges; skip_nonfinite is always set.
  OptimizerOptions optimizer{.kind = OptimizerKind::kAdam, .clip_norm = 1.0};
  double lr = 1e-3;      // peak learning rate, finite and > 0
  int64_t warmup = 30;   // linear warmup steps, then lr_decay
  double final_lr_fraction = 0.1;  // in [0, 1]
  LrDecay lr_decay = LrDecay::kCosine;
  // Set: the learning rate of step s (1-based) is lr_schedule(s), in place
  // of lr, warmup, lr_decay and final_lr_fraction (Schedule); a value that
  // is not finite and >= 0 stops the step with InvalidArgument.
  LrFunction lr_schedule;
  // The training loss's label smoothing, in [0, 1] (CrossEntropyOptions,
  // torch's): the validation loss stays the plain cross entropy.
  double label_smoothing = 0.0;
  uint64_t seed = 0;     // initialisation, data order and dropout
  // A step with a non-finite loss or gradient norm: stop, or skip its update
  // and stop after max_consecutive_skips (>= 1) skipped in a row.
  NonFinitePolicy on_nonfinite = NonFinitePolicy::kStop;
  int64_t max_consecutive_skips = 8;
  // Debugging and limits; they do not change the numbers of a run.
  bool check_numerics = false;  // stop at the first node producing NaN/Inf
  // Device bytes the executor may use; 0: no limit. On the CPU the host's
  // available memory is a limit too (ExecutorOptions::check_host_memory).
  int64_t memory_limit_bytes = 0;
  // Trainers that share it and the host's room (a process's thread
  // replicas: ExecutorOptions::memory_shares).
  int memory_shares = 1;
  bool profile = false;  // time every kernel (Trainer::train_plan().profile())

  // Validate returns InvalidArgument naming the first bad field.
  absl::Status Validate() const;
  // ToMetadata lists the fields that shape a run's numbers, as strings (a
  // custom schedule by the name "custom" only; SGD's momentum and nesterov
  // for SGD only): what a checkpoint records, so that resuming under other
  // settings is refused.
  std::map<std::string, std::string> ToMetadata() const;
  // Schedule is the learning-rate schedule: lr_schedule when set, else
  // warmup to lr over warmup steps, then lr_decay to lr * final_lr_fraction
  // at the last step.
  //
  //   // setup: TextRun
  //   DAGRAD_ASSIGN_OR_RETURN(const double lr, LearningRate(config.run.Schedule(), step));
  LrSchedule Schedule() const;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_RUN_CONFIG_H_
