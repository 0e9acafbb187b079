#include "models/run_directory.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"

namespace dagrad::models {
namespace {

constexpr char kHeader[] =
    "step,loss,train_accuracy,eval_loss,eval_accuracy,lr,skipped,elapsed_s";
// The headers before the eval_loss column, and before the skipped column;
// such files read with eval_loss = NaN and skipped = 0.
constexpr char kHeaderNoEvalLoss[] = "step,loss,train_accuracy,eval_accuracy,lr,skipped,elapsed_s";
constexpr char kHeaderNoSkipped[] = "step,loss,train_accuracy,eval_accuracy,lr,elapsed_s";
constexpr char kWindowFile[] = "metrics_window.csv";
constexpr char kPreviousWindowFile[] = "metrics_window.prev.csv";
constexpr char kWindowHeader[] = "step,steps,loss_sum,accuracy_sum,skipped,elapsed_s";
constexpr char kWindowHeaderNoElapsed[] = "step,steps,loss_sum,accuracy_sum,skipped";

}  // namespace

absl::StatusOr<DirectoryLock> ClaimRunDirectory(const std::string& dir,
                                                std::vector<std::string>* removed) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create the run directory '", dir, "': ", ec.message()));
  }
  return LockDirectory(dir, removed);
}

std::string FormatMetrics(const std::vector<MetricsRow>& rows) {
  std::string out = absl::StrCat(kHeader, "\n");
  for (const MetricsRow& r : rows) {
    absl::StrAppendFormat(&out, "%d,%.6f,%.6f,%.6f,%.6f,%.8g,%d,%.3f\n", r.step, r.loss,
                          r.train_accuracy, r.eval_loss, r.eval_accuracy, r.lr, r.skipped,
                          r.elapsed);
  }
  return out;
}

absl::StatusOr<std::vector<MetricsRow>> ParseMetrics(const std::string& text) {
  std::vector<MetricsRow> rows;
  int line_no = 0;
  absl::string_view header;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++line_no;
    if (line_no == 1) {
      header = line;
      if (line != kHeader && line != kHeaderNoEvalLoss && line != kHeaderNoSkipped) {
        return absl::DataLossError("unexpected header (not metrics.csv's)");
      }
      continue;
    }
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    if (header == kHeaderNoSkipped && f.size() == 6) f.insert(f.begin() + 5, "0");
    if (header != kHeader && f.size() == 7) f.insert(f.begin() + 3, "nan");
    MetricsRow r;
    if (f.size() != 8 || !absl::SimpleAtoi(f[0], &r.step) || !absl::SimpleAtod(f[1], &r.loss) ||
        !absl::SimpleAtod(f[2], &r.train_accuracy) || !absl::SimpleAtod(f[3], &r.eval_loss) ||
        !absl::SimpleAtod(f[4], &r.eval_accuracy) || !absl::SimpleAtod(f[5], &r.lr) ||
        !absl::SimpleAtoi(f[6], &r.skipped) || !absl::SimpleAtod(f[7], &r.elapsed)) {
      return absl::DataLossError(absl::StrCat("line ", line_no, " is malformed"));
    }
    rows.push_back(r);
  }
  return rows;
}

absl::StatusOr<std::string> RunDirectory::LoadCheckpoint(Trainer& trainer,
                                                          std::string* warning) {
  warning->clear();
  const absl::Status latest = trainer.LoadCheckpoint(checkpoint_path());
  if (latest.ok()) {
    next_save_ = NextSave::kRotate;
    return checkpoint_path();
  }
  if (absl::IsFailedPrecondition(latest)) return latest;
  const absl::Status previous = trainer.LoadCheckpoint(previous_checkpoint_path());
  if (absl::IsNotFound(previous)) return latest;
  if (!previous.ok()) {
    return absl::Status(previous.code(),
                        absl::StrCat(latest.message(), "; and the previous checkpoint: ",
                                     previous.message()));
  }
  *warning = absl::StrCat(latest.message(), "; resuming from ", previous_checkpoint_path(),
                          " at step ", trainer.step());
  next_save_ = NextSave::kOverwrite;
  return previous_checkpoint_path();
}

absl::Status RunDirectory::SaveCheckpoint(Trainer& trainer) {
  // A fresh run's first checkpoint replaces an earlier run's files with its
  // own metrics.csv, even when it has no row yet.
  if (fresh_metrics_) DAGRAD_RETURN_IF_ERROR(WriteMetrics());
  AtomicWriteOptions options;
  if (next_save_ == NextSave::kRotate) options.keep_previous_as = previous_checkpoint_path();
  DAGRAD_RETURN_IF_ERROR(trainer.SaveCheckpoint(checkpoint_path(), options));
  next_save_ = NextSave::kRotate;
  return absl::OkStatus();
}

void MetricsWindow::Add(const StepResult& r) {
  step = r.step;
  if (r.skipped) {
    ++skipped;
    return;
  }
  ++steps;
  loss_sum += r.loss;
  accuracy_sum += r.accuracy;
}

namespace {

std::string FormatWindow(const MetricsWindow& w) {
  // %.17g: the sums read back to the same doubles.
  return absl::StrFormat("%s\n%d,%d,%.17g,%.17g,%d,%.17g\n", kWindowHeader, w.step, w.steps,
                         w.loss_sum, w.accuracy_sum, w.skipped, w.elapsed);
}

absl::StatusOr<MetricsWindow> ParseWindow(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  MetricsWindow w;
  std::vector<absl::string_view> f;
  size_t fields = 0;
  if (lines.size() == 2 && (lines[0] == kWindowHeader || lines[0] == kWindowHeaderNoElapsed)) {
    f = absl::StrSplit(lines[1], ',');
    fields = lines[0] == kWindowHeader ? 6 : 5;
  }
  if (fields == 0 || f.size() != fields || !absl::SimpleAtoi(f[0], &w.step) ||
      !absl::SimpleAtoi(f[1], &w.steps) || !absl::SimpleAtod(f[2], &w.loss_sum) ||
      !absl::SimpleAtod(f[3], &w.accuracy_sum) || !absl::SimpleAtoi(f[4], &w.skipped) ||
      (fields == 6 && !absl::SimpleAtod(f[5], &w.elapsed))) {
    return absl::DataLossError("malformed (not a metrics window)");
  }
  return w;
}

// NameResumeFile names the file a resume could not read in its error: the
// checkpoint loaded, but the run's metrics cannot continue without it.
template <typename T>
absl::StatusOr<T> NameResumeFile(absl::StatusOr<T> parsed, const std::string& file) {
  if (parsed.ok()) return parsed;
  return absl::Status(parsed.status().code(),
                      absl::StrCat("'", file, "': ", parsed.status().message(),
                                   " (the checkpoint loaded; resuming continues this file's rows)"));
}

}  // namespace

absl::Status RunDirectory::RefuseEarlierRun(bool overwrite) const {
  if (overwrite) return absl::OkStatus();
  for (const std::string& file : {checkpoint_path(), previous_checkpoint_path()}) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "'", dir_, "' holds an earlier run (", file, "): continue it with FitOptions::resume, or ",
        "replace its files with FitOptions::overwrite"));
  }
  return absl::OkStatus();
}

absl::Status RunDirectory::StartMetrics() {
  rows_.clear();
  window_ = {};
  // An earlier run's files stay until this run writes its first row or
  // checkpoint: a run that fails before either leaves them as they were.
  earlier_run_ = true;
  fresh_metrics_ = true;
  return absl::OkStatus();
}

absl::Status RunDirectory::ResumeMetrics(int64_t step) {
  DAGRAD_ASSIGN_OR_RETURN(std::string text, ReadFile(path("metrics.csv")));
  DAGRAD_ASSIGN_OR_RETURN(rows_, NameResumeFile(ParseMetrics(text), path("metrics.csv")));
  rows_.erase(std::remove_if(rows_.begin(), rows_.end(),
                             [step](const MetricsRow& r) { return r.step > step; }),
              rows_.end());
  elapsed_before_ = rows_.empty() ? 0 : rows_.back().elapsed;
  // The window saved with the checkpoint of `step`: the latest's, or the
  // previous one's when the resume fell back to it. One saved at another
  // step belongs to an older stop: the run has since written rows past it.
  window_ = {};
  for (const char* file : {kWindowFile, kPreviousWindowFile}) {
    absl::StatusOr<std::string> saved = ReadFile(path(file));
    if (!saved.ok()) continue;
    DAGRAD_ASSIGN_OR_RETURN(MetricsWindow w, NameResumeFile(ParseWindow(*saved), path(file)));
    if (w.step == step) {
      window_ = w;
      if (w.elapsed >= 0) elapsed_before_ = w.elapsed;
      break;
    }
  }
  return WriteMetrics();
}

absl::Status RunDirectory::AppendRow(int64_t step, const EvalResult& eval, double lr,
                                     double elapsed) {
  const MetricsWindow& w = window_;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  rows_.push_back({.step = step,
                   .loss = w.steps ? w.loss_sum / w.steps : nan,
                   .train_accuracy = w.steps ? w.accuracy_sum / w.steps : nan,
                   .eval_loss = eval.loss,
                   .eval_accuracy = eval.accuracy,
                   .lr = lr,
                   .skipped = w.skipped,
                   .elapsed = elapsed});
  window_ = {};
  return WriteMetrics();
}

absl::Status RunDirectory::SaveWindow(double elapsed) {
  DAGRAD_RETURN_IF_ERROR(RemoveEarlierRun());
  RotateWindow();
  window_.elapsed = elapsed;
  return WriteFileAtomically(path(kWindowFile), FormatWindow(window_));
}

void RunDirectory::RotateWindow() const {
  std::error_code ec;
  std::filesystem::remove(path(kPreviousWindowFile), ec);                // absent is fine
  std::filesystem::rename(path(kWindowFile), path(kPreviousWindowFile), ec);  // so is this
}

// RemoveEarlierRun, at a fresh run's first write, removes an earlier run's
// files but the lock and metrics.csv, which WriteMetrics replaces.
absl::Status RunDirectory::RemoveEarlierRun() {
  if (!earlier_run_) return absl::OkStatus();
  for (const char* file : kRunFileNames) {
    if (absl::string_view(file) == ".lock" || absl::string_view(file) == "metrics.csv") continue;
    if (::unlink(path(file).c_str()) != 0 && errno != ENOENT) {
      return absl::ErrnoToStatus(
          errno, absl::StrCat("cannot remove the earlier run's '", path(file), "'"));
    }
  }
  earlier_run_ = false;
  return absl::OkStatus();
}

absl::Status RunDirectory::WriteMetrics() {
  DAGRAD_RETURN_IF_ERROR(RemoveEarlierRun());
  fresh_metrics_ = false;
  return WriteFileAtomically(path("metrics.csv"), FormatMetrics(rows_));
}

}  // namespace dagrad::models
