// models/run_directory.h
//
// RunDirectory: the files a training run keeps in its directory so that it
// can stop at any moment and resume as if it never had (models/fit.h drives
// it). Every file is written atomically (temporary file, fsync, rename).
//
//  - checkpoint.safetensors and the one before it,
//    checkpoint.prev.safetensors: a resume falls back to the previous one
//    when the latest is damaged or missing (a crash between the two renames
//    of a save leaves only the previous one; see AtomicWriteOptions).
//  - metrics.csv: one row per evaluation, kept consistent across resumes.
//    A row averages the training steps since the previous row (its
//    window). A run stopped between rows saves its open window beside the
//    checkpoint (metrics_window.csv, exact to the bit), and ResumeMetrics
//    reopens it, so a resumed run writes the rows the uninterrupted run
//    would have written. The window follows its checkpoint: when that
//    becomes the previous checkpoint, it becomes metrics_window.prev.csv,
//    so a resume that falls back to the previous checkpoint finds its own.
//
//   // setup: ToyRunReference
//   RunDirectory files("runs/gpt");
//   DAGRAD_RETURN_IF_ERROR(files.StartMetrics());
//   DAGRAD_RETURN_IF_ERROR(files.SaveCheckpoint(trainer));

#ifndef DAGRAD_MODELS_RUN_DIRECTORY_H_
#define DAGRAD_MODELS_RUN_DIRECTORY_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/io/dir_lock.h"
#include "models/trainer.h"

namespace dagrad::models {

struct MetricsRow {
  int64_t step = 0;
  double loss = 0;            // mean training loss since the previous row
  double train_accuracy = 0;  // mean training token accuracy since then
  double eval_loss = 0;       // held-out loss at this step
  double eval_accuracy = 0;   // held-out token accuracy at this step
  double lr = 0;
  int64_t skipped = 0;        // updates skipped since then (NonFinitePolicy::kSkip)
  double elapsed = 0;         // seconds since the run started (wall clock)
};

// MetricsWindow sums the steps since the previous row; skipped steps count
// in `skipped` only (their loss is not finite).
struct MetricsWindow {
  int64_t step = 0;  // the last step added
  int64_t steps = 0;
  double loss_sum = 0, accuracy_sum = 0;
  int64_t skipped = 0;
  // The run's seconds when the window was saved with a stop's checkpoint,
  // from which a resume's clock goes on; < 0 when not known (a window saved
  // before dagrad recorded it: the last row's seconds are used).
  double elapsed = -1;

  void Add(const StepResult& r);
};

// kRunFileNames: every file a training run may write in its directory
// (Fit's and WriteRunOutputs'), so that a file of the user's (a trace)
// is never written over one of them, and a fresh run removes an earlier
// run's (RunDirectory::StartMetrics).
inline constexpr const char* kRunFileNames[] = {
    "model.safetensors", "checkpoint.safetensors", "checkpoint.prev.safetensors",
    "metrics.csv",       "metrics_window.csv",     "metrics_window.prev.csv",
    "loss.svg",          "attention.svg",          "positional_encoding.svg",
    "forward.dot",       "forward.svg",            "train_step.dot",
    "graph.html",        ".lock"};

// ClaimRunDirectory makes `dir` when it is missing and locks it for this
// writer (LockDirectory, engine/io/dir_lock.h), listing in *removed what a
// killed writer left there. InvalidArgument when it cannot be made;
// Unavailable when another writer holds it ("runs/x is in use by another
// writer (pid 4242)").
absl::StatusOr<DirectoryLock> ClaimRunDirectory(const std::string& dir,
                                                std::vector<std::string>* removed);

class RunDirectory {
 public:
  // The directory must exist.
  explicit RunDirectory(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  std::string checkpoint_path() const { return path("checkpoint.safetensors"); }
  std::string previous_checkpoint_path() const { return path("checkpoint.prev.safetensors"); }

  // LoadCheckpoint restores `trainer` from the latest checkpoint or, when
  // that cannot be loaded for any reason but FailedPrecondition (a config
  // that differs from this run's, which the previous one shares), from the
  // previous one, and returns the path it used. `warning` gets why the
  // latest was passed over ("damaged checkpoint '...': tensor 'w': ...;
  // resuming from run/checkpoint.prev.safetensors at step 5"), else is
  // cleared.
  //
  // Errors: the latest's FailedPrecondition; when both fail, the
  // previous one's code with both messages (the latest's alone when there
  // is no previous one).
  absl::StatusOr<std::string> LoadCheckpoint(Trainer& trainer, std::string* warning);
  // SaveCheckpoint writes the trainer's checkpoint. The one it replaces
  // becomes the previous one if it is this run's and sound; after a
  // fallback the damaged latest is overwritten instead (a fresh run has
  // removed an earlier run's, StartMetrics, so that a fallback never
  // crosses into another run).
  absl::Status SaveCheckpoint(Trainer& trainer);

  // RefuseEarlierRun is FailedPrecondition when the directory holds an
  // earlier run's checkpoint and `overwrite` is false, so that a fresh run
  // never replaces a run that a forgotten --resume would have continued.
  absl::Status RefuseEarlierRun(bool overwrite) const;
  // StartMetrics begins a fresh run: its first row or checkpoint removes an
  // earlier run's files (kRunFileNames: its checkpoints, model, pictures and
  // graphs) and writes a fresh metrics.csv, so that the directory never
  // holds two runs' files; a run that fails before either leaves them as
  // they were.
  absl::Status StartMetrics();
  // ResumeMetrics keeps the rows of an existing metrics.csv up to `step`
  // (the checkpoint's), so the file reads as one uninterrupted run, and
  // reopens the window saved at `step`, if any.
  absl::Status ResumeMetrics(int64_t step);
  // AddStep adds a training step to the open window.
  void AddStep(const StepResult& r) { window_.Add(r); }
  // AppendRow closes the window into a row at `step`, with the held-out
  // `eval`, and rewrites metrics.csv. The row's loss and accuracy are NaN
  // when every step of the window was skipped.
  absl::Status AppendRow(int64_t step, const EvalResult& eval, double lr, double elapsed);
  // SaveWindow writes the open window, for a run stopped at its last step,
  // with the run's seconds so far, before the checkpoint of that step is
  // saved (RotateWindow first).
  absl::Status SaveWindow(double elapsed);
  // RotateWindow moves the window saved with the latest checkpoint, if any,
  // to the previous checkpoint's place, as saving a checkpoint moves the
  // latest checkpoint there (a previous checkpoint saved at a row has none).
  void RotateWindow() const;
  const std::vector<MetricsRow>& rows() const { return rows_; }
  // elapsed_before is the elapsed time of the last kept row on resume.
  double elapsed_before() const { return elapsed_before_; }

 private:
  absl::Status WriteMetrics();
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  absl::Status RemoveEarlierRun();

  // What SaveCheckpoint does with the latest checkpoint.
  enum class NextSave {
    kOverwrite,  // none yet, or damaged: replace it, keep the previous one
    kRotate,     // the latest is this run's: it becomes the previous one
  };

  std::string dir_;
  NextSave next_save_ = NextSave::kOverwrite;
  std::vector<MetricsRow> rows_;
  MetricsWindow window_;
  // StartMetrics ran and nothing was written yet: an earlier run's files
  // are still there, and metrics.csv is still the earlier run's.
  bool earlier_run_ = false;
  bool fresh_metrics_ = false;
  double elapsed_before_ = 0;
};

// FormatMetrics renders rows as metrics.csv text (header included).
std::string FormatMetrics(const std::vector<MetricsRow>& rows);
// ParseMetrics reads metrics.csv text, as FormatMetrics writes it or as
// versions before the eval_loss or the skipped column did (those read as NaN
// and 0); DataLoss naming the line when bad.
absl::StatusOr<std::vector<MetricsRow>> ParseMetrics(const std::string& text);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_RUN_DIRECTORY_H_
