// models/fit.h
//
// Fit: the training loop of every model (any models::Trainer: the toy
// transformer, the GPT, a user's), with the reliability `dagrad train` has:
//
//  - Evaluation, a metrics.csv row and a checkpoint every eval_every steps
//    and at the last step, in a run directory (models/run_directory.h: the
//    latest checkpoint and the one before it, written atomically).
//  - Resume: from the latest checkpoint, or from the previous one when the
//    latest is damaged, continuing exactly as if never stopped (the same
//    parameters, optimizer state, data order, dropout and metrics rows).
//  - Stop requests (a signal handler's flag, a deadline): the step in
//    flight finishes, the checkpoint and the open metrics window are saved,
//    and Fit returns FitEnd::kStopRequested.
//  - Non-finite steps, as the trainer's NonFinitePolicy says: Fit returns
//    FitEnd::kNonFinite naming the step, the value and the checkpoint kept.
//
//   // setup: TextRun
//   DAGRAD_ASSIGN_OR_RETURN(auto trainer, models::GptTrainer::Create(config));
//   DAGRAD_ASSIGN_OR_RETURN(models::FitResult fit,
//                           models::Fit(*trainer, {.dir = "runs/gpt", .resume = resume}));
//   if (fit.end == models::FitEnd::kComplete) std::printf("val %.4f\n", fit.final_eval.loss);

#ifndef DAGRAD_MODELS_FIT_H_
#define DAGRAD_MODELS_FIT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/run_directory.h"
#include "models/trainer.h"

namespace dagrad::models {

// FitProgress is what Fit reports after every step.
struct FitProgress {
  StepResult step;
  // Steps per second of the steps alone, from this process's third step
  // on (the first two plan, warm up and record the step), without the
  // evaluations and checkpoints between them; 0 before.
  double steps_per_second = 0;
};

// Where a resume started (FitOptions::on_resume).
struct FitResume {
  std::string path;     // the checkpoint loaded
  int64_t step = 0;     // its step
  std::string warning;  // why the latest checkpoint was passed over, or empty
};

struct FitOptions {
  // The run directory, made when missing: checkpoints and metrics.csv. Fit
  // locks it while it runs (engine/io/dir_lock.h: a second run there is
  // refused) unless dir_locked says the caller holds its DirectoryLock.
  std::string dir;
  bool dir_locked = false;
  int64_t eval_every = 10;  // >= 1
  // >= 0; N: return after step N (kStopAfter), saved as a stop request
  // saves it (a row only where eval_every puts one); 0: train all steps.
  int64_t stop_after = 0;
  // Continue from the run directory's checkpoint (its config must equal
  // the trainer's); else start afresh, which a directory holding an
  // earlier run's checkpoint refuses (FailedPrecondition) unless
  // `overwrite` lets the run replace that run's files.
  bool resume = false;
  bool overwrite = false;
  // false: this process is not the writer of a data-parallel job (rank
  // 0 is); it trains its share and writes, evaluates and reports nothing.
  bool writer = true;
  // Asked before each step and once after the last: true stops the run
  // (the same answer on every rank of a data-parallel job, which asks it
  // at the same points).
  std::function<bool()> stop_requested;
  std::function<void(const FitProgress&)> on_step;  // every rank, every step
  std::function<void(const MetricsRow&)> on_row;    // a row and checkpoint written
  std::function<void(const FitResume&)> on_resume;  // a checkpoint loaded
  // Called before each evaluation and before a stop's save, with the step
  // (progress displays and tests use it to act at an exact point).
  std::function<void(const std::string& phase, int64_t step)> on_phase;

  // Validate returns InvalidArgument naming the first bad field.
  absl::Status Validate() const;
};

enum class FitEnd {
  kComplete,       // every step trained; final_eval holds the held-out evaluation
  kStopAfter,      // returned after FitOptions::stop_after
  kStopRequested,  // stop_requested said so; the checkpoint holds `step`
  kNonFinite,      // a non-finite step (or update) the policy stops at
};

struct FitResult {
  FitEnd end = FitEnd::kComplete;
  int64_t step = 0;  // the trainer's step when Fit returned
  // kNonFinite: the step and the value, and which checkpoint holds what
  // ("run/checkpoint.safetensors keeps step 20; nothing after it was saved").
  std::string message;
  // kNonFinite: whether every rank of a data-parallel job saw it (the loss
  // and gradient norm are global) or the writer alone (an update that
  // overflowed the parameters, found when saving them).
  bool every_rank = true;
  EvalResult final_eval;          // kComplete, on the writer
  std::vector<MetricsRow> rows;   // metrics.csv's rows, on the writer
};

// Fit trains `trainer` up to its run config's steps as the file comment
// says. Errors: options that are invalid (InvalidArgument); the run
// directory's and the trainer's (a checkpoint that does not load, a file
// that cannot be written; Unavailable when another run holds the
// directory). Resuming a run that is complete is not an
// error: it evaluates again and returns kComplete.
absl::StatusOr<FitResult> Fit(Trainer& trainer, const FitOptions& options);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_FIT_H_
