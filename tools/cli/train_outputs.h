// tools/cli/train_outputs.h
//
// What `dagrad train` writes to its output directory: metrics.csv (kept
// consistent across --resume), the checkpoint, the final model, the loss
// curves, attention heatmaps, the positional encoding, and the DOT of the
// forward pass and of the whole training step. Every file is written
// atomically (temporary file, fsync, rename).
//
// Two checkpoints are kept, checkpoint.safetensors and the one before it,
// checkpoint.prev.safetensors, so that --resume can fall back when the
// latest is damaged or missing (a crash between the two renames of a save
// leaves only the previous one; see AtomicWriteOptions).
//
// A metrics row averages the training steps since the previous row (its
// window). A run stopped between rows saves its open window beside the
// checkpoint (metrics_window.csv, exact to the bit), and ResumeMetrics
// reopens it, so the resumed run writes the rows the uninterrupted run
// would have written.

#ifndef DAGRAD_TOOLS_CLI_TRAIN_OUTPUTS_H_
#define DAGRAD_TOOLS_CLI_TRAIN_OUTPUTS_H_

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/toy/toy_trainer.h"
#include "models/trainer.h"

namespace dagrad::cli {

struct MetricsRow {
  int64_t step = 0;
  double loss = 0;            // mean training loss since the previous row
  double train_accuracy = 0;  // mean training token accuracy since then
  double eval_loss = 0;       // held-out loss at this step
  double eval_accuracy = 0;   // held-out token accuracy at this step
  double lr = 0;
  int64_t skipped = 0;        // updates skipped since then (--on_nonfinite=skip)
  double elapsed = 0;         // seconds since the run started (wall clock)
};

// MetricsWindow sums the steps since the previous row; skipped steps count
// in `skipped` only (their loss is not finite).
struct MetricsWindow {
  int64_t step = 0;  // the last step added
  int64_t steps = 0;
  double loss_sum = 0, accuracy_sum = 0;
  int64_t skipped = 0;

  void Add(const models::StepResult& r);
};

class TrainOutputs {
 public:
  explicit TrainOutputs(std::string dir) : dir_(std::move(dir)) {}

  std::string checkpoint_path() const { return path("checkpoint.safetensors"); }
  std::string previous_checkpoint_path() const { return path("checkpoint.prev.safetensors"); }

  // LoadCheckpoint restores `trainer` from the latest checkpoint or, when
  // that cannot be loaded for any reason but FailedPrecondition (a config
  // that differs from the flags, which the previous one shares), from the
  // previous one, and returns the path it used. `warning` gets why the
  // latest was passed over ("damaged checkpoint '...': tensor 'w': ...;
  // resuming from run/checkpoint.prev.safetensors at step 5"), else is
  // cleared.
  //
  // Errors: the latest's FailedPrecondition; when both fail, the
  // previous one's code with both messages (the latest's alone when there
  // is no previous one).
  absl::StatusOr<std::string> LoadCheckpoint(models::Trainer& trainer, std::string* warning);
  // SaveCheckpoint writes the trainer's checkpoint. The one it replaces
  // becomes the previous one if it is this run's and sound; after a
  // fallback the damaged latest is overwritten instead, and a fresh run
  // first removes the previous checkpoint of an earlier run, so that a
  // fallback never crosses into another run.
  absl::Status SaveCheckpoint(models::Trainer& trainer);

  // StartMetrics begins a fresh metrics.csv.
  absl::Status StartMetrics();
  // ResumeMetrics keeps the rows of an existing metrics.csv up to `step`
  // (the checkpoint's), so the file reads as one uninterrupted run, and
  // reopens the window saved at `step`, if any.
  absl::Status ResumeMetrics(int64_t step);
  // AddStep adds a training step to the open window.
  void AddStep(const models::StepResult& r) { window_.Add(r); }
  // AppendRow closes the window into a row at `step`, with the held-out
  // `eval`, and rewrites metrics.csv. The row's loss and accuracy are NaN
  // when every step of the window was skipped.
  absl::Status AppendRow(int64_t step, const models::EvalResult& eval, double lr,
                         double elapsed);
  // SaveWindow writes the open window, for a run stopped at its last step.
  absl::Status SaveWindow() const;
  // DropSavedWindow removes a saved window once a checkpoint past it is
  // written (it could no longer be used).
  void DropSavedWindow() const;
  const std::vector<MetricsRow>& rows() const { return rows_; }
  // elapsed_before is the elapsed time of the last kept row on resume.
  double elapsed_before() const { return elapsed_before_; }

  // WriteLossSvg writes loss.svg: the training and held-out loss and
  // accuracy of the rows so far.
  absl::Status WriteLossSvg() const;
  // WriteAll writes the model and every picture and graph. Between files it
  // asks `stop` (when given) and returns Cancelled once it says true; the
  // files written so far are whole.
  absl::Status WriteAll(models::ToyTrainer& trainer, const std::function<bool()>& stop = {});
  void PrintSummary(std::ostream& out) const;
  // SetWritten names the files PrintSummary lists (WriteAll sets them).
  void SetWritten(std::vector<std::string> names) { written_ = std::move(names); }
  // RenderForward draws forward.dot as forward.svg, adding it to the files
  // written, when Graphviz is there and the model of `layers` layers is
  // small enough for it to finish soon; else PrintSummary says why not.
  absl::Status RenderForward(int64_t layers);

 private:
  absl::Status WriteMetrics() const;
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // What SaveCheckpoint does with the files it finds.
  enum class NextSave {
    kStartOver,  // a fresh run: remove the previous checkpoint, replace the latest
    kOverwrite,  // the latest is damaged: replace it, keep the previous one
    kRotate,     // the latest is this run's: it becomes the previous one
  };

  std::string dir_;
  NextSave next_save_ = NextSave::kStartOver;
  std::vector<MetricsRow> rows_;
  MetricsWindow window_;
  double elapsed_before_ = 0;
  std::vector<std::string> written_;
  std::string note_;  // PrintSummary's last line, when not empty
};

// FormatMetrics renders rows as metrics.csv text (header included).
std::string FormatMetrics(const std::vector<MetricsRow>& rows);
// ParseMetrics reads metrics.csv text, as FormatMetrics writes it or as
// versions before the eval_loss or the skipped column did (those read as NaN
// and 0); DataLoss naming the line when bad.
absl::StatusOr<std::vector<MetricsRow>> ParseMetrics(const std::string& text);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_TRAIN_OUTPUTS_H_
