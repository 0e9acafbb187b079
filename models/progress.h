// models/progress.h
//
// ProgressPrinter shows a Fit run's progress (models/fit.h) on stdout, as
// `dagrad train` does:
//  - on a terminal, a bar redrawn after every step; otherwise a line per
//    metrics row ("step 20/300  loss 1.2345  acc 0.612  41.2 steps/s  7s left")
//  - where a resume started ("resumed from runs/gpt/checkpoint.safetensors
//    at step 20", with a passed-over checkpoint's warning on stderr), and
//    that a run resumed when complete has nothing to train.
//
//   // setup: TextRun
//   DAGRAD_ASSIGN_OR_RETURN(auto trainer, models::GptTrainer::Create(config));
//   models::ProgressPrinter progress(trainer->run_config().steps);
//   DAGRAD_ASSIGN_OR_RETURN(
//       models::FitResult fit,
//       models::Fit(*trainer, progress.Attach({.dir = "runs/gpt", .resume = resume})));

#ifndef DAGRAD_MODELS_PROGRESS_H_
#define DAGRAD_MODELS_PROGRESS_H_

#include <cstdint>

#include "models/fit.h"

namespace dagrad::models {

class ProgressPrinter {
 public:
  // steps: the run's last step (RunConfig::steps).
  explicit ProgressPrinter(int64_t steps);
  // Ends the bar's line, so that what is printed next starts a line.
  ~ProgressPrinter();
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;

  // Attach returns `options` printing as the file comment says, each of
  // its on_step, on_row and on_resume called first. Only a writer
  // (FitOptions::writer) prints. The printer must outlive the Fit call.
  FitOptions Attach(FitOptions options);

 private:
  void Print(int64_t step, double loss, double accuracy, bool line);
  void EndBar();

  int64_t steps_;
  bool tty_;
  bool bar_drawn_ = false;
  double steps_per_second_ = 0;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_PROGRESS_H_
