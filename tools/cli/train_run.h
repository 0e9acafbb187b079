// tools/cli/train_run.h
//
// The part of `dagrad train` every task shares (train_command.cc): --out
// and its lock, stop signals, --resume, --stop_after, models::Fit's loop
// and the report of a complete run (Trainer::Summary, the files written).
// A task supplies its trainer: the toy tasks (train_command.cc) and text
// (train_text.cc). Under `mpirun -np N` (or srun) every rank trains on its
// slice of the global batch (models/parallel_job.h); rank 0 alone prints
// and writes files; a rank that fails ends the whole job, so none waits.
//
//   models::TextTrainConfig config;
//   DAGRAD_ASSIGN_OR_RETURN(config.run, RunConfigFromFlags());
//   return RunTraining(cmd, {.steps = config.run.steps, .default_out = "runs/text",
//                            .create = ...}, job);

#ifndef DAGRAD_TOOLS_CLI_TRAIN_RUN_H_
#define DAGRAD_TOOLS_CLI_TRAIN_RUN_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "models/run_outputs.h"
#include "models/trainer.h"
#include "ops/autodiff/optimizer.h"
#include "tools/cli/command.h"
#include "models/parallel_job.h"

namespace dagrad::cli {

using models::Job;

// RunConfigFromFlags (run_config_flags.cc) reads the settings every
// task's config embeds (models::RunConfig) from their flags:
// InvalidArgument naming the flag for an unknown --optimizer, --lr_decay,
// --precision or --on_nonfinite, Adam's flags with --optimizer=sgd, a
// negative --memory_limit_mb, or --eval_every < 1. (The values' ranges are
// RunConfig::Validate's.)
absl::StatusOr<models::RunConfig> RunConfigFromFlags();

// TrainingRun: what a task gives RunTraining.
struct TrainingRun {
  int64_t steps = 0;        // the config's
  std::string default_out;  // --out when it is not given
  models::RunOutputsOptions outputs;  // its title and layers
  // create builds the trainer on `device`.
  std::function<absl::StatusOr<std::unique_ptr<models::Trainer>>(std::unique_ptr<Device>)>
      create;
};

// RunTextTrain runs `cmd` (the train command) with --task=text
// (train_text.cc) as a rank of `job`, data parallel with `parallel` when
// the job has several ranks; the exit code.
int RunTextTrain(const Command& cmd, const models::RunConfig& run,
                 const DataParallelOptions& parallel, Job& job);

// RunTraining trains as the file comment says, as a rank of `job`
// (models/parallel_job.h: a process on its own, or one of an MPI job's ranks,
// of which rank 0 alone prints and writes files), and returns the exit code.
int RunTraining(const Command& cmd, const TrainingRun& run, Job& job);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_TRAIN_RUN_H_
