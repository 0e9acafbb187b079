// `dagrad train`: trains the toy transformer on a synthetic task (or, with
// --task=text, a GPT: train_text.cc) and writes its checkpoint, metrics and
// pictures to --out. RunTraining (train_run.h) is the part every task shares.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/toy/toy_trainer.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/optimizer_flags.h"
#include "tools/cli/out_dir.h"
#include "tools/cli/stop_signals.h"
#include "tools/cli/train_outputs.h"
#include "tools/cli/train_parallel.h"
#include "tools/cli/train_run.h"
#include "tools/cli/train_text.h"

ABSL_FLAG(std::string, task, "reverse", "reverse, copy or sort; text: a GPT on --data");
ABSL_FLAG(int64_t, vocab, 16, "toy tasks: vocabulary size (token 0 is padding)");
ABSL_FLAG(int64_t, seq_len, 32, "sequence length T");
ABSL_FLAG(int64_t, min_len, 0,
          "toy tasks: shortest sequence; 0 means every sequence has seq_len tokens");
ABSL_FLAG(int64_t, dim, 128, "model width E");
ABSL_FLAG(int64_t, heads, 4, "attention heads H (dim % heads == 0)");
ABSL_FLAG(int64_t, layers, 2, "encoder layers L");
ABSL_FLAG(int64_t, ffn, 512, "toy tasks: feed-forward width F (the GPT's is 4 x dim)");
ABSL_FLAG(double, dropout, 0.1, "dropout probability in [0, 1 - 2^-10]");
ABSL_FLAG(int64_t, batch, 64,
          "sequences per step; under mpirun the global batch, split evenly over the ranks");
ABSL_FLAG(double, bucket_mb, 4,
          "under mpirun: MiB of gradients per all-reduce bucket (> 0), each summed as soon as "
          "backward has produced it");
ABSL_FLAG(bool, overlap, true,
          "under mpirun: overlap each bucket's all-reduce with the rest of backward (false: "
          "sum every bucket after backward)");
ABSL_FLAG(int64_t, steps, 300, "training steps");
ABSL_FLAG(double, lr, 1e-3,
          "peak learning rate, finite and > 0 (linear warmup over --warmup steps, then "
          "--lr_decay); one too large for the model ends in a non-finite stop (see "
          "--on_nonfinite)");
ABSL_FLAG(int64_t, warmup, 30, "warmup steps");
ABSL_FLAG(std::string, precision, "fp32",
          "fp32; bf16: matrix products read bfloat16 casts and accumulate in float32, the rest "
          "and the parameters (checkpoints) stay float32; tf32: on cuda, float32 products in "
          "TF32 (on the cpu, fp32)");
ABSL_FLAG(std::string, on_nonfinite, "stop",
          "when a step's loss or global gradient norm is NaN or Inf, its update is never "
          "applied. stop: exit 1 naming the step and the value, keeping the last checkpoint "
          "(rerun with --check_numerics to find the node). skip: skip that update (parameters "
          "and optimizer state unchanged, counted in metrics.csv's skipped column) and go on; "
          "stop as above after --max_consecutive_skips skipped in a row");
ABSL_FLAG(int64_t, max_consecutive_skips, 8,
          "with --on_nonfinite=skip, stop at this many non-finite steps in a row (>= 1)");
ABSL_FLAG(uint64_t, seed, 0,
          "train: seed for initialisation, data and dropout; generate: seed for sampling");
ABSL_FLAG(bool, resume, false,
          "continue from --out/checkpoint.safetensors (or from checkpoint.prev.safetensors "
          "when that one is damaged), exactly as if never stopped. SIGTERM, "
          "SIGINT (Ctrl-C) or SIGUSR1 stop a run gracefully: it finishes the step (and an "
          "evaluation) in flight, saves the checkpoint, prints 'stopped at step N; resume with "
          "--resume' and exits 128+signal (143, 130, 138); a second signal exits at once, "
          "leaving the last checkpoint whole");
ABSL_FLAG(int64_t, eval_every, 10, "evaluate, log and checkpoint every this many steps");
ABSL_FLAG(int64_t, stop_after, 0,
          "stop after this step (0: run all --steps), to continue later with --resume");

namespace dagrad::cli {
namespace {

absl::StatusOr<models::TrainConfig> ConfigFromFlags(const RunFlags& flags) {
  models::TrainConfig c;
  auto task = models::ParseTask(absl::GetFlag(FLAGS_task));
  if (!task.ok()) return absl::InvalidArgumentError(absl::StrCat("--task: ", task.status().message()));
  c.task = *task;
  DAGRAD_RETURN_IF_ERROR(
      RefuseFlagsNotFor({"data", "eval_windows"}, "--task=text",
                        "the toy tasks generate their sequences and score a held-out set of 512"));
  c.model = {.vocab = absl::GetFlag(FLAGS_vocab), .seq_len = absl::GetFlag(FLAGS_seq_len),
             .dim = absl::GetFlag(FLAGS_dim), .heads = absl::GetFlag(FLAGS_heads),
             .layers = absl::GetFlag(FLAGS_layers), .ffn = absl::GetFlag(FLAGS_ffn),
             .dropout = absl::GetFlag(FLAGS_dropout)};
  DAGRAD_ASSIGN_OR_RETURN(c.model.attention, AttentionFromFlags());
  c.min_len = absl::GetFlag(FLAGS_min_len);
  ApplyRunFlags(flags, c);
  if (absl::Status st = c.Validate(); !st.ok()) return st;
  return c;
}

// Progress prints a bar on a terminal, plain lines otherwise.
class Progress {
 public:
  explicit Progress(int64_t total) : total_(total), tty_(isatty(STDOUT_FILENO)) {}

  void Update(int64_t step, double loss, double acc, double steps_per_s, bool log_line) {
    const double left = steps_per_s > 0 ? (total_ - step) / steps_per_s : 0;
    const std::string stats = absl::StrFormat(
        "step %d/%d  loss %.4f  acc %.3f  %.1f steps/s  %.0fs left", step, total_, loss, acc,
        steps_per_s, left);
    if (tty_) {
      const int width = 24;
      const int filled = total_ ? static_cast<int>(width * step / total_) : width;
      std::printf("\r[%s%s] %s   ", std::string(filled, '#').c_str(),
                  std::string(width - filled, '.').c_str(), stats.c_str());
      std::fflush(stdout);
    } else if (log_line) {
      std::printf("%s\n", stats.c_str());
    }
  }
  void Finish() {
    if (tty_) std::printf("\n");
  }

 private:
  int64_t total_;
  bool tty_;
};

// StepRate is the rate the progress line shows: steps per second of the
// steps alone, from the third one this process runs (the first two plan,
// warm up and record the step: ExecutorOptions::record_runs), without the
// evaluations and checkpoints between them.
class StepRate {
 public:
  template <typename Step>
  auto Time(Step&& step) {
    const auto started = std::chrono::steady_clock::now();
    auto result = step();
    if (++steps_ > kWarmup) {
      seconds_ +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }
    return result;
  }
  double per_second() const { return seconds_ > 0 ? (steps_ - kWarmup) / seconds_ : 0; }

 private:
  static constexpr int64_t kWarmup = 2;
  int64_t steps_ = 0;
  double seconds_ = 0;
};

// TrainLoop runs the steps up to `last`, evaluating, logging and
// checkpointing every eval_every steps, and stops cleanly on a stop signal.
struct TrainLoop {
  const Command& cmd;
  Job& job;
  models::Trainer& t;
  TrainOutputs& outputs;
  int64_t steps, eval_every, last;
  int64_t saved_step;  // the checkpoint's step; -1 when there is none yet

  // Run returns an exit code when the run must end, nullopt at `last`.
  std::optional<int> Run() {
    Progress progress(steps);
    const auto start = std::chrono::steady_clock::now();
    StepRate rate;
    while (t.step() < last) {
      if (AgreedStopSignal(job, StopSignal())) break;
      absl::StatusOr<models::StepResult> r = rate.Time([&] { return t.Step(); });
      if (!r.ok()) {
        progress.Finish();
        return StepFailed(r.status());
      }
      MaybeRaiseForTest("step", r->step);
      if (!job.writer()) continue;
      outputs.AddStep(*r);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress.Update(r->step, r->loss, r->accuracy, rate.per_second(), false);
      if (r->step % eval_every != 0 && r->step != last) continue;
      MaybeRaiseForTest("eval", r->step);
      absl::StatusOr<models::EvalResult> e = t.Evaluate();
      if (!e.ok()) return Failure(cmd, e.status());
      absl::Status st =
          outputs.AppendRow(r->step, *e, r->lr, outputs.elapsed_before() + seconds);
      if (st.ok()) st = outputs.SaveCheckpoint(t);
      if (models::IsNonFiniteRefusal(st)) {
        // The loss and gradients were finite, yet an update overflowed the
        // parameters. Rank 0 alone saves, so the job is not agreed.
        return StepFailed(absl::AbortedError(absl::StrCat(
                              "step ", r->step, ": ", st.message(),
                              " (an update too large for this model: lower --lr)")),
                          /*every_rank=*/false);
      }
      if (!st.ok()) return Failure(cmd, st);
      outputs.DropSavedWindow();
      saved_step = r->step;
      const MetricsRow& row = outputs.rows().back();
      progress.Update(r->step, row.loss, row.train_accuracy, rate.per_second(), true);
    }
    progress.Finish();
    if (AgreedStopSignal(job, StopSignal())) return Stop();
    return std::nullopt;
  }

  // Stop saves the steps since the last checkpoint, the open metrics window
  // first (it is used only beside a checkpoint of its step), and returns
  // 128 + the signal.
  int Stop() {
    const int sig = AgreedStopSignal(job, StopSignal());
    MaybeRaiseForTest("stopping", t.step());
    if (job.writer() && t.step() != saved_step) {
      absl::Status st = outputs.SaveWindow();
      if (st.ok()) st = outputs.SaveCheckpoint(t);
      if (!st.ok()) return Failure(cmd, st);
    }
    if (job.writer()) {
      std::cerr << "dagrad train: " << StopSignalName(sig) << ": stopped at step " << t.step()
                << "; resume with --resume" << std::endl;
    }
    // No rank exits before rank 0 has saved and said so: the launcher ends
    // a job at its first rank to exit non-zero, rank 0 mid-save included.
    AgreedStopSignal(job, sig);
    return 128 + sig;
  }

  // StepFailed reports a failed step; for a non-finite stop (Aborted), which
  // checkpoint is kept. every_rank: every rank of a data-parallel job saw
  // it (the loss and norm are global) and stops here; otherwise the abort
  // path ends the others.
  int StepFailed(const absl::Status& st, bool every_rank = true) {
    if (!absl::IsAborted(st)) return Failure(cmd, st);
    job.agreed_stop = every_rank;
    std::cerr << "dagrad train: " << InFlagTerms(st.message()) << "\n"
              << (saved_step >= 0 ? absl::StrCat(outputs.checkpoint_path(), " keeps step ",
                                                 saved_step, "; nothing after it was saved")
                                  : std::string("no checkpoint was written"))
              << "\n";
    return kExitFailure;
  }
};

// StartOrResume loads the checkpoint for --resume, saying from where, or
// starts a new metrics file. Resuming a complete run is not an error: its
// final outputs are written again.
absl::Status StartOrResume(models::Trainer& t, TrainOutputs& outputs, int64_t steps) {
  if (!absl::GetFlag(FLAGS_resume)) return outputs.StartMetrics();
  std::string warning;
  DAGRAD_ASSIGN_OR_RETURN(const std::string from, outputs.LoadCheckpoint(t, &warning));
  if (!warning.empty()) std::cerr << "dagrad train: " << warning << "\n";
  DAGRAD_RETURN_IF_ERROR(outputs.ResumeMetrics(t.step()));
  std::cout << "resumed from " << from << " at step " << t.step() << "\n";
  if (t.step() >= steps) {
    std::cout << "checkpoint is at step " << t.step() << ", --steps=" << steps
              << ": nothing to train (the run is complete); writing its outputs again\n";
  }
  return absl::OkStatus();
}

// FinishRun evaluates the trained model, writes the final outputs (a stop
// signal meanwhile saves and stops) and prints the summary.
int FinishRun(TrainLoop& loop, const TrainingRun& run) {
  if (!loop.job.writer()) return kExitOk;
  absl::StatusOr<models::EvalResult> final_eval = loop.t.Evaluate();
  if (!final_eval.ok()) return Failure(loop.cmd, final_eval.status());
  if (StopSignal()) return loop.Stop();
  absl::Status written = run.finish(*final_eval, loop.outputs, [] {
    MaybeRaiseForTest("outputs");
    return StopSignal() != 0;
  });
  if (absl::IsCancelled(written)) return loop.Stop();
  if (!written.ok()) return Failure(loop.cmd, written);
  return kExitOk;
}

// FinishToy writes the toy model's outputs (TrainingRun::finish).
absl::Status FinishToy(models::ToyTrainer& t, const Job& job,
                       const models::EvalResult& final_eval, TrainOutputs& outputs,
                       const std::function<bool()>& stop) {
  DAGRAD_RETURN_IF_ERROR(outputs.WriteAll(t, stop));
  std::cout << absl::StrFormat("held-out token accuracy %.4f, loss %.4f after %d steps\n",
                               final_eval.accuracy, final_eval.loss, t.step());
  outputs.PrintSummary(std::cout);
  if (t.config().profile) std::cout << StepProfile(t.train_plan().profile(), job);
  return absl::OkStatus();
}

// ParallelFlags are what every rank must agree on, and the buckets.
absl::StatusOr<DataParallelOptions> ParallelOptions(const Job& job) {
  const double bucket_mb = absl::GetFlag(FLAGS_bucket_mb);
  if (!(bucket_mb > 0 && bucket_mb <= 1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--bucket_mb must be in (0, 1048576], got ", bucket_mb));
  }
  return DataParallelOptions{.communicator = job.comm,
                             .bucket_bytes = std::max<int64_t>(1, bucket_mb * (1 << 20)),
                             .overlap = absl::GetFlag(FLAGS_overlap)};
}

int RunToyTrain(const Command& cmd, const RunFlags& flags, const DataParallelOptions& parallel,
                Job& job) {
  absl::StatusOr<models::TrainConfig> config = ConfigFromFlags(flags);
  if (!config.ok()) return UsageError(cmd, std::string(config.status().message()));
  models::ToyTrainer* toy = nullptr;  // owned by RunTraining
  TrainingRun run{
      .steps = config->steps,
      .default_out = "runs/train",
      .create = [&](std::unique_ptr<Device> device)
          -> absl::StatusOr<std::unique_ptr<models::Trainer>> {
        DAGRAD_ASSIGN_OR_RETURN(auto t,
                                models::ToyTrainer::Create(*config, std::move(device), parallel));
        toy = t.get();
        return t;
      },
      .finish = [&](const models::EvalResult& final_eval, TrainOutputs& outputs,
                    const std::function<bool()>& stop) {
        return FinishToy(*toy, job, final_eval, outputs, stop);
      }};
  return RunTraining(cmd, run, job);
}

// RunTask runs the training of --task as a rank of `job`; the exit code.
int RunTask(const Command& cmd, Job& job) {
  absl::StatusOr<RunFlags> flags = RunFlagsFromFlags();
  if (!flags.ok()) return UsageError(cmd, std::string(flags.status().message()));
  absl::StatusOr<DataParallelOptions> parallel = ParallelOptions(job);
  if (!parallel.ok()) return UsageError(cmd, std::string(parallel.status().message()));
  if (absl::GetFlag(FLAGS_task) == "text") return RunTextTrain(cmd, *flags, *parallel, job);
  return RunToyTrain(cmd, *flags, *parallel, job);
}

int RunTrain() {
  Command cmd = TrainCommand();
  if (absl::Status st = ApplyThreadsFlag(); !st.ok()) return UsageError(cmd, std::string(st.message()));
  absl::StatusOr<Job> job = JoinJob();
  if (!job.ok()) return Failure(cmd, job.status());
  if (!job->parallel()) return RunTask(cmd, *job);
  // A rank's messages name it; a rank that fails ends the job, except for
  // a stop every rank agreed on (a signal, a non-finite step).
  static const std::string name = absl::StrCat("train: rank ", job->rank, " of ", job->size);
  cmd.name = name.c_str();
  // Out of memory on one rank ends the job too, instead of unwinding into
  // MPI_Finalize while the other ranks wait in a collective.
  const int code = RunOrReportOutOfMemory(cmd, [&] { return RunTask(cmd, *job); });
  if (code != kExitOk && code < 128 && !job->agreed_stop) job->comm->Abort(code);
  return code;
}

}  // namespace

absl::StatusOr<RunFlags> RunFlagsFromFlags() {
  DAGRAD_ASSIGN_OR_RETURN(OptimizerOptions optimizer, OptimizerFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(const LrDecay lr_decay, LrDecayFromFlags());
  auto precision = ParsePrecision(absl::GetFlag(FLAGS_precision));
  if (!precision.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--precision: ", precision.status().message()));
  }
  optimizer.precision = *precision;
  auto policy = models::ParseNonFinitePolicy(absl::GetFlag(FLAGS_on_nonfinite));
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--on_nonfinite: ", policy.status().message()));
  }
  DAGRAD_ASSIGN_OR_RETURN(const ExecutorOptions exec, ExecutorOptionsFromFlags());
  if (absl::GetFlag(FLAGS_eval_every) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--eval_every must be >= 1, got ", absl::GetFlag(FLAGS_eval_every)));
  }
  return RunFlags{.batch = absl::GetFlag(FLAGS_batch),
                  .steps = absl::GetFlag(FLAGS_steps),
                  .warmup = absl::GetFlag(FLAGS_warmup),
                  .optimizer = optimizer,
                  .lr = absl::GetFlag(FLAGS_lr),
                  .lr_decay = lr_decay,
                  .final_lr_fraction = FinalLrFractionFlag(),
                  .seed = absl::GetFlag(FLAGS_seed),
                  .on_nonfinite = *policy,
                  .max_consecutive_skips = absl::GetFlag(FLAGS_max_consecutive_skips),
                  .check_numerics = exec.check_numerics,
                  .profile = exec.profile,
                  .memory_limit_bytes = exec.memory_limit_bytes};
}

// AgreedConfig is what every rank checks against rank 0's: the value of
// each of the command's flags.
std::map<std::string, std::string> AgreedConfig(const Command& cmd) {
  std::map<std::string, std::string> m;
  for (const std::string& flag : cmd.flags) {
    if (const absl::CommandLineFlag* f = absl::FindCommandLineFlag(flag)) m[flag] = f->CurrentValue();
  }
  return m;
}

// OpenOutDir makes --out and claims it (the writer only), removing what a
// killed run left there.
absl::Status OpenOutDir(const std::string& out, std::optional<OutDirLock>& lock) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--out: cannot create ", out, ": ", ec.message()));
  std::vector<std::string> stale;
  absl::StatusOr<OutDirLock> claimed = ClaimOutDir(out, &stale);
  if (!claimed.ok()) return claimed.status();
  lock.emplace(*std::move(claimed));
  if (!stale.empty()) {
    std::cout << "removed what a killed run left in " << out << ": " << absl::StrJoin(stale, " ")
              << "\n";
  }
  return absl::OkStatus();
}

int RunTraining(const Command& cmd, const TrainingRun& run, Job& job) {
  const std::string out = absl::GetFlag(FLAGS_out).empty() ? run.default_out : absl::GetFlag(FLAGS_out);
  const int64_t stop_after = absl::GetFlag(FLAGS_stop_after);
  if (stop_after < 0) return UsageError(cmd, absl::StrCat("--stop_after must be >= 0, got ", stop_after));
  if (absl::Status st = CheckSameConfig(job, AgreedConfig(cmd)); !st.ok()) {
    // Every rank learnt of a mismatch: none aborts, so each prints its own.
    job.agreed_stop = absl::IsInvalidArgument(st);
    return UsageError(cmd, std::string(st.message()));
  }
  std::optional<OutDirLock> lock;
  if (job.writer()) {
    if (absl::Status st = OpenOutDir(out, lock); !st.ok()) {
      return absl::IsInvalidArgument(st) ? UsageError(cmd, std::string(st.message()))
                                         : Failure(cmd, st);
    }
  }
  // From here on a stop signal is handled: one during the set-up stops
  // the run before its first step.
  InstallStopSignals();
  absl::StatusOr<std::unique_ptr<Device>> device =
      DeviceFromFlags(/*tf32=*/absl::GetFlag(FLAGS_precision) == "tf32");
  if (!device.ok()) return Failure(cmd, device.status());
  if (job.writer()) {
    std::cout << "training on " << (*device)->name()
              << (job.parallel() ? absl::StrCat(", ", job.comm->name()) : "") << "\n";
  }
  absl::StatusOr<std::unique_ptr<models::Trainer>> trainer = run.create(*std::move(device));
  if (!trainer.ok()) return Failure(cmd, trainer.status());
  models::Trainer& t = **trainer;
  TrainOutputs outputs(out);
  absl::Status started = job.writer() ? StartOrResume(t, outputs, run.steps) : absl::OkStatus();
  if (started.ok()) started = t.BroadcastState();
  if (!started.ok()) return Failure(cmd, started);
  TrainLoop loop{cmd, job, t, outputs, run.steps, absl::GetFlag(FLAGS_eval_every),
                 stop_after > 0 ? std::min(stop_after, run.steps) : run.steps,
                 absl::GetFlag(FLAGS_resume) ? t.step() : -1};
  if (std::optional<int> code = loop.Run()) return *code;
  if (t.step() < run.steps) {
    if (job.writer()) std::cout << "stopped after step " << t.step() << "; continue with --resume\n";
    return kExitOk;
  }
  return FinishRun(loop, run);
}

Command TrainCommand() {
  return {"train",
          "train the toy attention model on a synthetic task, or a GPT on a text file",
          {"task", "data", "eval_windows", "vocab", "seq_len", "min_len", "dim", "heads", "layers", "ffn", "dropout",
           "batch", "steps", "lr", "warmup", "lr_decay", "final_lr_fraction", "optimizer", "beta1", "beta2", "eps", "precision", "weight_decay", "clip", "on_nonfinite",
           "max_consecutive_skips", "seed", "out", "resume", "eval_every", "stop_after", "bucket_mb", "overlap", "threads", "wait_policy", "check_numerics", "memory_limit_mb", "profile", "device", "tf32", "attention"},
          RunTrain};
}

}  // namespace dagrad::cli
