// `dagrad train`: trains the toy transformer on a synthetic task (or, with
// --task=text, a GPT: train_text.cc) and writes its checkpoint, metrics and
// pictures to --out. RunTraining (train_run.h) is the part every task shares.

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "engine/device/thread_communicator.h"
#include "engine/io/dir_lock.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/fit.h"
#include "models/progress.h"
#include "models/toy/toy_trainer.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "models/stop_signals.h"
#include "ops/cpu/cpu_runtime.h"
#include "tools/cli/train_run.h"
#if DAGRAD_HAVE_MPI
#include "engine/mpi/mpi_communicator.h"
#endif

ABSL_FLAG(std::string, task, "reverse", "reverse, copy or sort; text: a GPT on --data");
ABSL_FLAG(int64_t, vocab, 16, "toy tasks: vocabulary size (token 0 is padding)");
ABSL_FLAG(int64_t, seq_len, 32, "sequence length T");
ABSL_FLAG(int64_t, min_len, 0,
          "toy tasks: shortest sequence; 0 means every sequence has seq_len tokens");
ABSL_FLAG(int64_t, dim, 128, "model width E");
ABSL_FLAG(int64_t, heads, 4, "attention heads H (dim % heads == 0)");
ABSL_FLAG(int64_t, layers, 2, "layers L (encoder layers of the toy tasks, blocks of the GPT), 1 to 1024");
ABSL_FLAG(int64_t, ffn, 512, "toy tasks: feed-forward width F (the GPT's is 4 x dim)");
ABSL_FLAG(double, dropout, 0.1,
          "dropout probability in [0, 1 - 2^-10]; with --init=DIR (a GPT-2 directory), not "
          "given: its config.json's attn_pdrop, embd_pdrop and resid_pdrop, given: all three");
ABSL_FLAG(double, bucket_mb, 4,
          "under mpirun: MiB of gradients per all-reduce bucket (> 0), each summed as soon as "
          "backward has produced it");
ABSL_FLAG(bool, overlap, true,
          "under mpirun: overlap each bucket's all-reduce with the rest of backward (false: "
          "sum every bucket after backward)");
ABSL_FLAG(int, replicas, 1,
          "CPU: train this many replicas of the model on threads of their own, each on its "
          "share of --batch with one compute thread, summing gradients once per step (data "
          "parallel in one process): steadier than --threads while other processes want the "
          "cores; the numbers differ from one replica's in the last bits");
ABSL_FLAG(bool, resume, false,
          "continue from --out/checkpoint.safetensors (or checkpoint.prev.safetensors when "
          "that one is damaged), exactly as if never stopped. SIGTERM, SIGINT or SIGUSR1 stop a "
          "run gracefully: the step in flight finishes, the checkpoint is saved, and it exits "
          "128+signal; a second signal exits at once, the last checkpoint whole");
ABSL_FLAG(bool, overwrite, false,
          "start afresh in an --out that holds an earlier run's checkpoint, replacing all of its "
          "files at the first save (without it, or --resume, such an --out is refused)");
ABSL_FLAG(std::string, trace, "",
          "with --profile, also write the profiled training step as a Chrome trace (Perfetto, "
          "chrome://tracing) to this file");
ABSL_FLAG(int64_t, eval_every, 10, "evaluate, log and checkpoint every this many steps");
ABSL_FLAG(int64_t, stop_after, 0,
          "stop after this step (0: run all --steps), to continue later with --resume");

ABSL_DECLARE_FLAG(std::string, data);       // train_text.cc
ABSL_DECLARE_FLAG(std::string, init);       // train_text.cc

namespace dagrad::cli {
namespace {

absl::StatusOr<models::TrainConfig> ConfigFromFlags(const models::RunConfig& run) {
  models::TrainConfig c;
  auto task = models::ParseTask(absl::GetFlag(FLAGS_task));
  if (!task.ok()) return absl::InvalidArgumentError(absl::StrCat("--task: ", task.status().message()));
  c.task = *task;
  DAGRAD_RETURN_IF_ERROR(
      RefuseFlagsNotFor({"data", "init", "eval_windows"}, "--task=text",
                        "the toy tasks generate their sequences and score a held-out set of 512"));
  c.model = {.vocab = absl::GetFlag(FLAGS_vocab), .seq_len = absl::GetFlag(FLAGS_seq_len),
             .dim = absl::GetFlag(FLAGS_dim), .heads = absl::GetFlag(FLAGS_heads),
             .layers = absl::GetFlag(FLAGS_layers), .ffn = absl::GetFlag(FLAGS_ffn),
             .dropout = absl::GetFlag(FLAGS_dropout)};
  DAGRAD_ASSIGN_OR_RETURN(c.model.attention, AttentionFromFlags());
  c.min_len = absl::GetFlag(FLAGS_min_len);
  c.run = run;
  DAGRAD_RETURN_IF_ERROR(c.Validate());
  return c;
}

// ReportStop says that signal `sig` stopped the run after `step` and
// returns 128 + the signal.
int ReportStop(int sig, int64_t step) {
  std::cerr << absl::StrCat("dagrad train: ", models::StopSignalName(sig), ": stopped at step ",
                            step, "; resume with --resume\n");
  return 128 + sig;
}

// Stopped reports a run stopped by a signal (its checkpoint saved) and
// returns 128 + the signal.
int Stopped(Job& job, int64_t step) {
  const int sig = models::AgreedStopSignal(job, models::StopSignal());
  if (job.writer()) ReportStop(sig, step);
  // No rank exits before rank 0 has saved and said so: the launcher ends
  // a job at its first rank to exit non-zero, rank 0 mid-save included.
  models::AgreedStopSignal(job, sig);
  return 128 + sig;
}

// StoppedWriting reports a stop that came while the writer wrote a complete
// run's outputs: the other ranks have ended, so nothing is agreed with
// them (Stopped's collectives would wait for them forever).
int StoppedWriting(int64_t step) { return ReportStop(models::StopSignal(), step); }

// FitOptionsFromFlags: models::Fit's options from the flags, with the
// test hook's phases.
models::FitOptions FitOptionsFromFlags(const std::string& out, Job& job) {
  return {.dir = out,
          .dir_locked = true,  // RunTraining holds it
          .eval_every = absl::GetFlag(FLAGS_eval_every),
          .stop_after = absl::GetFlag(FLAGS_stop_after),
          .resume = absl::GetFlag(FLAGS_resume),
          .overwrite = absl::GetFlag(FLAGS_overwrite),
          .writer = job.writer(),
          .stop_requested = [&job] { return models::AgreedStopSignal(job, models::StopSignal()) != 0; },
          .on_step = [](const models::FitProgress& p) { models::MaybeRaiseForTest("step", p.step.step); },
          .on_phase = [](const std::string& phase, int64_t step) { models::MaybeRaiseForTest(phase, step); }};
}

// FinishRun writes a complete run's final outputs (a stop signal meanwhile
// stops) and reports them.
int FinishRun(const Command& cmd, Job& job, const TrainingRun& run, models::Trainer& trainer,
              const models::FitResult& fit, const std::string& out) {
  if (!job.writer()) return kExitOk;
  if (models::StopSignal()) return StoppedWriting(fit.step);
  models::RunOutputsOptions options = run.outputs;
  options.trace = absl::GetFlag(FLAGS_trace);
  options.stop = [] {
    models::MaybeRaiseForTest("outputs");
    return models::StopSignal() != 0;
  };
  absl::StatusOr<models::RunOutputs> outputs = models::WriteRunOutputs(trainer, out, fit.rows, options);
  if (absl::IsCancelled(outputs.status())) return StoppedWriting(fit.step);
  absl::StatusOr<std::string> summary =
      outputs.ok() ? trainer.Summary(fit.final_eval) : outputs.status();
  if (!summary.ok()) return Failure(cmd, summary.status());
  std::cout << InFlagTerms(*summary) << outputs->Summary();
  if (trainer.run_config().profile) std::cout << models::StepProfile(trainer.train_plan().profile(), job);
  return kExitOk;
}

// ParallelOptions: the job's communicator and the flags' buckets.
absl::StatusOr<DataParallelOptions> ParallelOptions(const Job& job) {
  const double bucket_mb = absl::GetFlag(FLAGS_bucket_mb);
  if (!(bucket_mb > 0 && bucket_mb <= 1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--bucket_mb must be in (0, 1048576], got %.15g", bucket_mb));
  }
  return DataParallelOptions{.communicator = job.comm,
                             .bucket_bytes = std::max<int64_t>(1, bucket_mb * (1 << 20)),
                             .overlap = absl::GetFlag(FLAGS_overlap)};
}

int RunToyTrain(const Command& cmd, const models::RunConfig& run, const DataParallelOptions& parallel,
                Job& job) {
  absl::StatusOr<models::TrainConfig> config = ConfigFromFlags(run);
  if (!config.ok()) return Failure(cmd, config.status());
  TrainingRun training{
      .steps = config->run.steps,
      .default_out = "runs/train",
      .outputs = {.title = "toy transformer", .layers = config->model.layers},
      .create = [&](std::unique_ptr<Device> device)
          -> absl::StatusOr<std::unique_ptr<models::Trainer>> {
        return models::ToyTrainer::Create(*config, std::move(device), parallel);
      }};
  return RunTraining(cmd, training, job);
}

// JoinJob returns the MPI job this process was launched in, or a job of its
// own; FailedPrecondition when a launcher started it in a dagrad built
// without MPI (each rank would train alone over the same files).
absl::StatusOr<Job> JoinJob() {
#if DAGRAD_HAVE_MPI
  if (!LaunchedByMpi()) return Job{};
  DAGRAD_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, MpiCommunicator());
  return Job{comm, comm->rank(), comm->size()};
#else
  int size = 1;
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (world != nullptr && absl::SimpleAtoi(world, &size) && size > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "launched as one of ", size,
        " MPI ranks, but this dagrad was built without MPI (-DDAGRAD_MPI=ON needs "
        "libopenmpi-dev)"));
  }
  return Job{};
#endif
}

// CheckTracePath refuses, before the run, a --trace the run's end could not
// write, or would write over a file the run reads or writes.
absl::Status CheckTracePath(const std::string& trace, const std::string& out) {
  namespace fs = std::filesystem;
  DAGRAD_RETURN_IF_ERROR(RefuseOverwrite(
      trace, "trace", {{absl::GetFlag(FLAGS_data), "data"}, {absl::GetFlag(FLAGS_init), "init"}}));
  std::error_code ec;
  // Checked now, not when the trace is written after the whole run.
  if (fs::exists(trace, ec) && !fs::is_regular_file(trace, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--trace=", trace, " is ", fs::is_directory(trace, ec) ? "a directory" : "not a file",
        ", which the trace would replace"));
  }
  const fs::path folder = fs::path(trace).parent_path().empty() ? fs::path(".")
                                                                 : fs::path(trace).parent_path();
  const bool in_out = fs::weakly_canonical(folder, ec) == fs::weakly_canonical(out, ec);
  if (!in_out && !fs::is_directory(folder, ec)) {  // --out is made by the run
    return absl::InvalidArgumentError(absl::StrCat(
        "--trace=", trace, ": its folder '", folder.string(), "' ",
        fs::exists(folder, ec) ? "is not a directory" : "does not exist"));
  }
  const std::string name = fs::path(trace).filename().string();
  for (const char* file : models::kRunFileNames) {
    if (in_out && name == file) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--trace=", trace, " would write over the run's own ", file, " (--out=", out, ")"));
    }
  }
  return absl::OkStatus();
}

// CheckOutApart refuses an --out whose run files (models::kRunFileNames)
// would write over what the run reads: --init=DIR --out=DIR would replace
// a Hugging Face directory's model.safetensors with the fine-tuned one.
absl::Status CheckOutApart(const std::string& out) {
  for (const char* file : models::kRunFileNames) {
    DAGRAD_RETURN_IF_ERROR(RefuseOverwrite(
        PathInFolder(out, file), "out",
        {{absl::GetFlag(FLAGS_data), "data"}, {absl::GetFlag(FLAGS_init), "init"}}));
  }
  return absl::OkStatus();
}

// RunTask runs the training of --task as a rank of `job`, one of
// `process_ranks` in this process, which share --memory_limit_mb; the exit
// code.
int RunTask(const Command& cmd, Job& job, int process_ranks = 1) {
  absl::StatusOr<models::RunConfig> run = RunConfigFromFlags();
  if (!run.ok()) return Failure(cmd, run.status());
  run->memory_shares = process_ranks;
  if (!absl::GetFlag(FLAGS_trace).empty() && !run->profile) {
    return UsageError(cmd, "--trace needs --profile (the trace is the profiled step)");
  }
  absl::StatusOr<DataParallelOptions> parallel = ParallelOptions(job);
  if (!parallel.ok()) return Failure(cmd, parallel.status());
  if (absl::GetFlag(FLAGS_task) == "text") return RunTextTrain(cmd, *run, *parallel, job);
  return RunToyTrain(cmd, *run, *parallel, job);
}

// PrintReplicaErrors prints what the replicas reported, in rank order, each
// message once whichever replica said it: a flag that every replica refuses
// is reported by replica 0 alone, and a replica that failed on its own
// keeps its line.
void PrintReplicaErrors(const std::vector<std::ostringstream>& errors,
                        const std::vector<std::string>& names) {
  std::set<std::string> printed;
  for (size_t r = 0; r < errors.size(); ++r) {
    const std::string text = errors[r].str();
    if (text.empty()) continue;
    if (printed.insert(absl::StrReplaceAll(text, {{names[r], ""}})).second) std::cerr << text;
  }
}

// RunReplicas trains `replicas` replicas on threads of this process, the
// ranks of one job (ThreadCommunicators), each computing on one thread;
// the exit code is rank 0's, or else the first other rank's failure. A
// replica that fails leaves the job, so the others' next collective fails
// instead of waiting for it. Their errors are printed when all have ended.
int RunReplicas(const Command& cmd, int replicas) {
  if (cli::FlagGiven("threads") && absl::GetFlag(FLAGS_threads) != 1) {
    return UsageError(cmd, "--replicas computes each replica on one thread: drop --threads");
  }
  if (absl::GetFlag(FLAGS_device) != "cpu") {
    return UsageError(cmd, "--replicas trains on the CPU (--device=cpu)");
  }
  if (absl::Status st = SetNumThreads(1); !st.ok()) return Failure(cmd, st);
  std::vector<int> codes(replicas, kExitOk);
  std::vector<std::string> names(replicas);
  std::vector<std::ostringstream> errors(replicas);
  OnThreadRanks(replicas, [&](std::shared_ptr<Communicator> comm) {
    const int r = comm->rank();
    names[r] = absl::StrCat("train: replica ", r, " of ", replicas);
    Command mine = cmd;
    mine.name = names[r].c_str();
    mine.errors = &errors[r];
    Job job{std::move(comm), r, replicas};
    codes[r] = RunOrReportOutOfMemory(mine, [&] { return RunTask(mine, job, replicas); });
  });
  PrintReplicaErrors(errors, names);
  for (int code : codes) {
    if (code != kExitOk) return codes[0] != kExitOk ? codes[0] : code;
  }
  return kExitOk;
}

int RunTrain() {
  Command cmd = TrainCommand();
  if (absl::Status st = ApplyThreadsFlag(); !st.ok()) return Failure(cmd, st);
  const int replicas = absl::GetFlag(FLAGS_replicas);
  if (replicas < 1 || replicas > MaxThreads()) {
    return UsageError(cmd, absl::StrCat("--replicas must be in [1, ", MaxThreads(), "], got ",
                                        replicas));
  }
  absl::StatusOr<Job> job = JoinJob();
  if (!job.ok()) return Failure(cmd, job.status());
  if (replicas > 1 && job->parallel()) {  // ends the job: the other ranks wait in a collective
    const int code =
        UsageError(cmd, "--replicas runs in one process; under mpirun, set the ranks with -np");
    job->comm->Abort(code);
    return code;
  }
  if (replicas > 1) return RunReplicas(cmd, replicas);
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
absl::Status OpenOutDir(const std::string& out, std::optional<DirectoryLock>& lock) {
  std::vector<std::string> stale;
  absl::StatusOr<DirectoryLock> claimed = models::ClaimRunDirectory(out, &stale);
  // In use: another process holds the lock. (A lock that cannot be opened,
  // a directory in its place, is the generic error below.)
  if (absl::IsUnavailable(claimed.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--out=", absl::StrReplaceAll(claimed.status().message(),
                                      {{"another writer", "another dagrad train"}}),
        "; wait for it to end or choose another --out"));
  }
  if (!claimed.ok()) {
    return absl::Status(claimed.status().code(), absl::StrCat("--out: ", claimed.status().message()));
  }
  lock.emplace(*std::move(claimed));
  if (!stale.empty()) {
    std::cout << "removed what a killed run left in " << out << ": " << absl::StrJoin(stale, " ")
              << std::endl;
  }
  return absl::OkStatus();
}

// StartRun checks what every rank must agree on, claims --out (the
// writer) and builds the run's trainer.
absl::StatusOr<std::unique_ptr<models::Trainer>> StartRun(const Command& cmd, const TrainingRun& run,
                                                          Job& job, const std::string& out,
                                                          std::optional<DirectoryLock>& lock) {
  const int64_t stop_after = absl::GetFlag(FLAGS_stop_after);
  if (stop_after < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--stop_after must be >= 0, got ", stop_after));
  }
  if (absl::Status st = models::CheckSameConfig(job, AgreedConfig(cmd)); !st.ok()) {
    // Every rank learnt of a mismatch: none aborts, so each prints its own.
    job.agreed_stop = absl::IsInvalidArgument(st);
    return st;
  }
  if (job.writer()) DAGRAD_RETURN_IF_ERROR(OpenOutDir(out, lock));
  // From here on a stop signal is handled: one during the set-up stops
  // the run before its first step.
  models::InstallStopSignals();
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> device,
                          DeviceFromFlags(/*tf32=*/absl::GetFlag(FLAGS_precision) == "tf32"));
  // The lines a run prints before and while it trains are flushed (as
  // models/progress.cc's are): a log file shows them as they come and
  // keeps them when the run is killed.
  if (job.writer()) {
    std::cout << "training on " << device->name()
              << (job.parallel() ? absl::StrCat(", ", job.comm->name()) : "") << std::endl;
  }
  return run.create(std::move(device));
}

}  // namespace

int RunTraining(const Command& cmd, const TrainingRun& run, Job& job) {
  const std::string out = absl::GetFlag(FLAGS_out).empty() ? run.default_out : absl::GetFlag(FLAGS_out);
  if (job.writer()) {
    if (absl::Status st = CheckOutApart(out); !st.ok()) return Failure(cmd, st);
    if (const std::string trace = absl::GetFlag(FLAGS_trace); !trace.empty()) {
      if (absl::Status st = CheckTracePath(trace, out); !st.ok()) return Failure(cmd, st);
    }
  }
  std::optional<DirectoryLock> lock;
  absl::StatusOr<std::unique_ptr<models::Trainer>> trainer = StartRun(cmd, run, job, out, lock);
  if (!trainer.ok()) return Failure(cmd, trainer.status());
  models::Trainer& t = **trainer;
  absl::StatusOr<models::FitResult> fit = [&] {
    models::ProgressPrinter progress(run.steps);
    return models::Fit(t, progress.Attach(FitOptionsFromFlags(out, job)));
  }();
  if (!fit.ok()) return Failure(cmd, fit.status());
  switch (fit->end) {
    case models::FitEnd::kNonFinite:
      job.agreed_stop = fit->every_rank;
      // Every rank stops at the step; the writer, which knows the checkpoint
      // kept, says so once.
      if (job.writer() || !fit->every_rank) {
        WriteError(cmd, fit->message);
      }
      return kExitFailure;
    case models::FitEnd::kStopRequested:
      return Stopped(job, fit->step);
    case models::FitEnd::kStopAfter:
      if (job.writer()) std::cout << "stopped after step " << fit->step << "; continue with --resume\n";
      return kExitOk;
    case models::FitEnd::kComplete:
      break;
  }
  return FinishRun(cmd, job, run, t, *fit, out);
}

Command TrainCommand() {
  return {"train",
          "train the toy attention model on a synthetic task, or a GPT on a text file",
          {"task", "data", "init", "eval_windows", "vocab", "seq_len", "min_len", "dim", "heads", "layers", "ffn", "dropout",
           "batch", "steps", "lr", "warmup", "lr_decay", "final_lr_fraction", "optimizer", "momentum", "nesterov", "beta1", "beta2", "eps", "precision", "weight_decay", "label_smoothing", "clip", "on_nonfinite",
           "max_consecutive_skips", "seed", "out", "resume", "overwrite", "replicas", "eval_every", "stop_after", "bucket_mb", "overlap", "threads", "wait_policy", "check_numerics", "memory_limit_mb", "profile", "trace", "device", "tf32", "attention"},
          RunTrain};
}

}  // namespace dagrad::cli
