#include "models/fit.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"

namespace dagrad::models {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// StepRate times the steps alone (FitProgress::steps_per_second).
class StepRate {
 public:
  absl::StatusOr<StepResult> Time(Trainer& t) {
    const Clock::time_point started = Clock::now();
    absl::StatusOr<StepResult> result = t.Step();
    if (++steps_ > kWarmup) seconds_ += SecondsSince(started);
    return result;
  }
  double per_second() const { return seconds_ > 0 ? (steps_ - kWarmup) / seconds_ : 0; }

 private:
  static constexpr int64_t kWarmup = 2;
  int64_t steps_ = 0;
  double seconds_ = 0;
};

// FitLoop is one Fit call.
class FitLoop {
 public:
  FitLoop(Trainer& t, const FitOptions& o) : t_(t), o_(o), files_(o.dir) {}

  absl::StatusOr<FitResult> Run() {
    const int64_t steps = t_.run_config().steps;
    if (o_.writer && !o_.dir_locked) {
      std::vector<std::string> removed;  // what a killed writer left
      DAGRAD_ASSIGN_OR_RETURN(DirectoryLock lock, ClaimRunDirectory(o_.dir, &removed));
      lock_.emplace(std::move(lock));
    }
    if (o_.writer) DAGRAD_RETURN_IF_ERROR(StartOrResume());
    DAGRAD_RETURN_IF_ERROR(t_.BroadcastState());
    saved_step_ = o_.resume ? t_.step() : -1;
    if (steps == 0 && o_.writer && !o_.resume) {
      // A run of no steps saves its initial state: its directory holds what
      // any run's does, and a resume finds it complete.
      DAGRAD_RETURN_IF_ERROR(files_.SaveCheckpoint(t_));
      saved_step_ = 0;
    }
    const int64_t last = o_.stop_after > 0 ? std::min(o_.stop_after, steps) : steps;
    DAGRAD_ASSIGN_OR_RETURN(std::optional<FitResult> ended, Train(last, steps));
    if (ended) return *std::move(ended);
    if (t_.step() < steps) {
      // Stopped between rows: saved as a stop is, so that a resume writes
      // the rows the whole run would.
      DAGRAD_RETURN_IF_ERROR(SaveSinceCheckpoint());
      return Result(FitEnd::kStopAfter);
    }
    FitResult done = Result(FitEnd::kComplete);
    if (o_.writer) {
      DAGRAD_ASSIGN_OR_RETURN(done.final_eval, t_.Evaluate());
    }
    return done;
  }

 private:
  absl::Status StartOrResume() {
    if (!o_.resume) {
      DAGRAD_RETURN_IF_ERROR(files_.RefuseEarlierRun(o_.overwrite));
      return files_.StartMetrics();
    }
    FitResume resume;
    DAGRAD_ASSIGN_OR_RETURN(resume.path, files_.LoadCheckpoint(t_, &resume.warning));
    DAGRAD_RETURN_IF_ERROR(files_.ResumeMetrics(t_.step()));
    resume.step = t_.step();
    if (o_.on_resume) o_.on_resume(resume);
    return absl::OkStatus();
  }

  // Train runs the steps up to `last` of the run's `steps`, with a row and
  // a checkpoint every eval_every steps and at the end: a result when the
  // run ends before.
  absl::StatusOr<std::optional<FitResult>> Train(int64_t last, int64_t steps) {
    start_ = Clock::now();
    while (t_.step() < last) {
      if (StopRequested()) break;
      absl::StatusOr<StepResult> r = rate_.Time(t_);
      if (IsNonFiniteStop(r.status())) return NonFinite(r.status().message(), true);
      if (!r.ok()) return r.status();
      if (o_.on_step) o_.on_step({*r, rate_.per_second()});
      if (!o_.writer) continue;
      files_.AddStep(*r);
      if (r->step % o_.eval_every != 0 && r->step != steps) continue;
      absl::Status saved = EvaluateAndSave(*r, Elapsed());
      if (IsNonFiniteRefusal(saved)) {
        return NonFinite(absl::StrCat("step ", r->step, ": ", saved.message(),
                                      " (an update too large for this model: lower "
                                      "RunConfig::lr)"),
                         /*every_rank=*/false);
      }
      DAGRAD_RETURN_IF_ERROR(saved);
    }
    if (StopRequested()) return Stop();
    return std::nullopt;
  }

  // EvaluateAndSave writes step r's metrics row and checkpoint.
  absl::Status EvaluateAndSave(const StepResult& r, double elapsed) {
    Phase("eval", r.step);
    DAGRAD_ASSIGN_OR_RETURN(const EvalResult e, t_.Evaluate());
    DAGRAD_RETURN_IF_ERROR(files_.AppendRow(r.step, e, r.lr, elapsed));
    DAGRAD_RETURN_IF_ERROR(files_.SaveCheckpoint(t_));
    files_.RotateWindow();
    saved_step_ = r.step;
    if (o_.on_row) o_.on_row(files_.rows().back());
    return absl::OkStatus();
  }

  // Stop saves the steps since the last checkpoint, the open metrics window
  // first (it is used only beside a checkpoint of its step).
  absl::StatusOr<FitResult> Stop() {
    Phase("stopping", t_.step());
    DAGRAD_RETURN_IF_ERROR(SaveSinceCheckpoint());
    return Result(FitEnd::kStopRequested);
  }

  absl::Status SaveSinceCheckpoint() {
    if (!o_.writer || t_.step() == saved_step_) return absl::OkStatus();
    DAGRAD_RETURN_IF_ERROR(files_.SaveWindow(Elapsed()));
    DAGRAD_RETURN_IF_ERROR(files_.SaveCheckpoint(t_));
    saved_step_ = t_.step();
    return absl::OkStatus();
  }

  FitResult NonFinite(absl::string_view what, bool every_rank) {
    FitResult r = Result(FitEnd::kNonFinite);
    r.every_rank = every_rank;
    r.message = absl::StrCat(
        what, "\n",
        saved_step_ >= 0 ? absl::StrCat(files_.checkpoint_path(), " keeps step ", saved_step_,
                                        "; nothing after it was saved")
                         : "no checkpoint was written");
    return r;
  }

  FitResult Result(FitEnd end) const {
    return {.end = end, .step = t_.step(), .rows = files_.rows()};
  }
  // Elapsed is the run's seconds: a resumed run's go on from its stop's.
  double Elapsed() const { return files_.elapsed_before() + SecondsSince(start_); }
  bool StopRequested() const { return o_.stop_requested && o_.stop_requested(); }
  void Phase(const std::string& phase, int64_t step) const {
    if (o_.on_phase) o_.on_phase(phase, step);
  }

  Trainer& t_;
  const FitOptions& o_;
  RunDirectory files_;
  std::optional<DirectoryLock> lock_;
  StepRate rate_;
  int64_t saved_step_ = -1;  // the checkpoint's step; -1 when there is none yet
  Clock::time_point start_ = Clock::now();  // when this process's steps began
};

}  // namespace

absl::Status FitOptions::Validate() const {
  if (eval_every < 1) {
    return absl::InvalidArgumentError(absl::StrCat("eval_every must be >= 1, got ", eval_every));
  }
  if (stop_after < 0) {
    return absl::InvalidArgumentError(absl::StrCat("stop_after must be >= 0, got ", stop_after));
  }
  if (resume && overwrite) {
    return absl::InvalidArgumentError(
        "FitOptions::resume continues the directory's run and FitOptions::overwrite replaces it: "
        "give one");
  }
  if (writer && dir.empty()) {
    return absl::InvalidArgumentError("FitOptions::dir, the run directory, is empty");
  }
  return absl::OkStatus();
}

absl::StatusOr<FitResult> Fit(Trainer& trainer, const FitOptions& options) {
  DAGRAD_RETURN_IF_ERROR(options.Validate());
  return FitLoop(trainer, options).Run();
}

}  // namespace dagrad::models
