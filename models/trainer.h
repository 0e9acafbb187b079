// models/trainer.h
//
// What every trainer shares: the Trainer base class that one training loop
// (`dagrad train`, tools/cli/train_command.cc) drives for every model —
// ToyTrainer (synthetic tasks) and GptTrainer (text) — holding the state a
// run carries between steps, and the policies behind it, written once:
//
//  - Non-finite steps (NonFiniteSteps). A step whose loss or global
//    gradient norm is NaN or +-Inf never changes a parameter (the update
//    ops are guarded: OptimizerOptions::skip_nonfinite). The policy says
//    what happens next: kStop makes Step return Aborted naming the step and
//    the value, with step() unchanged; kSkip counts the update as skipped
//    (StepResult::skipped; Adam's step count does not advance, as
//    torch.cuda.amp.GradScaler skips optimizer.step()) and goes on, until
//    max_consecutive_skips steps in a row were skipped: then Aborted.
//  - Training checkpoints (TrainingState): parameters, optimizer state, the
//    step, the skip counts and the config, written atomically with
//    checksums, never holding a NaN or Inf; loading one made with another
//    config is FailedPrecondition listing every differing field.
//  - Data parallelism (BatchShare): a rank's rows of the global batch, its
//    share of the loss, the job's accuracy and rank 0's state at the start.
//  - The settings of a run that every task's config embeds (RunConfig,
//    models/run_config.h); run_config() is the trainer's.
//
//   // setup: TextRun
//   DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<GptTrainer> gpt, GptTrainer::Create(config));
//   std::unique_ptr<Trainer> t = std::move(gpt);
//   while (t->step() < steps) {
//     DAGRAD_ASSIGN_OR_RETURN(StepResult r, t->Step());
//   }
//   DAGRAD_ASSIGN_OR_RETURN(EvalResult e, t->Evaluate());

#ifndef DAGRAD_MODELS_TRAINER_H_
#define DAGRAD_MODELS_TRAINER_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/device/communicator.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "ops/autodiff/optimizer.h"
#include "models/run_config.h"
#include "ops/autodiff/precision.h"

namespace dagrad::models {

struct StepResult {
  int64_t step = 0;
  double loss = 0;       // mean cross-entropy of the batch
  double accuracy = 0;   // token accuracy of the batch (non-ignored targets)
  double lr = 0;
  double grad_norm = 0;  // the global gradient norm, before clipping
  bool skipped = false;  // the update was skipped (NonFinitePolicy::kSkip)
};

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
};

// NonFiniteSteps applies a NonFinitePolicy and counts skipped updates.
//
//   // setup: NonFinite
//   NonFiniteSteps skips(NonFinitePolicy::kSkip, 8);
//   if (UpdateSkipped(loss, norm)) {
//     DAGRAD_RETURN_IF_ERROR(skips.NonFinite(step, loss, norm));  // skipped
//   } else {
//     skips.Finite();
//   }
class NonFiniteSteps {
 public:
  NonFiniteSteps() = default;
  NonFiniteSteps(NonFinitePolicy policy, int64_t max_in_a_row)
      : policy_(policy), max_in_a_row_(max_in_a_row) {}

  // Finite records a step whose update was applied.
  void Finite() { in_a_row_ = 0; }
  // NonFinite records step `step` whose loss or gradient norm is not
  // finite: OK when the policy skips it (counted), else Aborted naming the
  // step and the value, marked so (IsNonFiniteStop).
  absl::Status NonFinite(int64_t step, double loss, double grad_norm);

  int64_t total() const { return total_; }
  int64_t in_a_row() const { return in_a_row_; }
  // SetCounts makes the counts another process's (data parallel ranks
  // start from rank 0's).
  void SetCounts(int64_t total, int64_t in_a_row) {
    total_ = total;
    in_a_row_ = in_a_row;
  }
  // Metadata holds the counts for a checkpoint; Restore reads them back
  // (absent: none), InvalidArgument naming `path` for counts that do not
  // fit `step`.
  std::map<std::string, std::string> Metadata() const;
  absl::Status Restore(const std::map<std::string, std::string>& metadata,
                       int64_t step, const std::string& path);

 private:
  NonFinitePolicy policy_ = NonFinitePolicy::kStop;
  int64_t max_in_a_row_ = 1;
  int64_t total_ = 0, in_a_row_ = 0;
};

// kDataChecksumKey: the config field of a text run's data, its size and
// CRC-32C (SplitText::Checksum), so that a resume on a --data whose bytes
// changed is refused; a checkpoint written before it was recorded lacks it
// and resumes on the path alone.
inline constexpr char kDataChecksumKey[] = "data_checksum";

// TrainingState reads and writes the training checkpoints of a trainer
// whose checkpoints are marked `format` (e.g. "toy-train-state/1") and
// whose config is `config` (its ToMetadata).
//
//   // setup: State
//   TrainingState state{"toy-train-state/1", config.ToMetadata()};
//   DAGRAD_RETURN_IF_ERROR(state.Save(exec, vars, 5, skips, path, {}));
//   DAGRAD_ASSIGN_OR_RETURN(int64_t step, state.Load(exec, vars, skips, path));
struct TrainingState {
  std::string format;
  std::map<std::string, std::string> config;

  // Save writes `vars` with the config, the step and the skip counts:
  // FailedPrecondition naming the tensor, and nothing written, when one
  // holds a NaN or Inf.
  absl::Status Save(Executor& exec, const std::vector<Value>& vars,
                    int64_t step, const NonFiniteSteps& skips,
                    const std::string& path,
                    const AtomicWriteOptions& options) const;
  // Load restores `vars` and `skips` and returns the step, all or nothing:
  // ReadCheckpoint's errors, the checksums required (DataLoss for a file
  // without them); InvalidArgument for a file of another format
  // or one that does not fit; FailedPrecondition listing every config
  // field that differs ("lr: checkpoint 0.001, this run 0.5").
  absl::StatusOr<int64_t> Load(Executor& exec, const std::vector<Value>& vars,
                               NonFiniteSteps& skips,
                               const std::string& path) const;
};

// SaveFiniteVariables writes `vars` with `metadata` unless one holds a NaN
// or Inf (FailedPrecondition naming it, IsNonFiniteRefusal; nothing
// written).
absl::Status SaveFiniteVariables(
    Executor& exec, const std::vector<Value>& vars,
    std::map<std::string, std::string> metadata, const std::string& path,
    const AtomicWriteOptions& options = {});

// IsNonFiniteRefusal says whether `status` is SaveFiniteVariables's (and so
// SaveCheckpoint's and SaveModel's) refusal of a NaN or Inf: the run
// diverged, which a caller may treat as a non-finite stop rather than as a
// file it could not write.
//
//   // setup: ToyRun
//   absl::Status st = trainer->SaveCheckpoint("run/ckpt.safetensors");
//   if (IsNonFiniteRefusal(st)) st = absl::AbortedError(st.message());  // diverged
bool IsNonFiniteRefusal(const absl::Status& status);

// IsNonFiniteStop says whether `status` is NonFiniteSteps::NonFinite's stop
// (a step's loss or gradient norm not finite), not another Aborted (a
// replica that left the job).
bool IsNonFiniteStop(const absl::Status& status);

// TokenCounts builds, for logits (..., V) and int64 targets (...), the
// float64 pair [correct, counted] (2,): how many targets that are not
// ignored (-100) equal the argmax of their row of logits, as torch.argmax
// picks it (the first maximum, and the first NaN of a row that holds one),
// and how many targets are not ignored. Computed where the logits are, so
// a run fetches two numbers instead of the logits.
//
//   Value counts = TokenCounts(logits, targets);   // (2,) float64
Value TokenCounts(Value logits, Value targets);

// TokenAccuracy returns correct / counted, of a fetched TokenCounts: the
// fraction of the targets counted that are right, 0 when none is counted.
double TokenAccuracy(double correct, double counted);

// EvalStats builds what an evaluation fetches, one float64 (3,) tensor
// [loss, correct, counted] (TokenCounts of logits and targets) from a float
// scalar loss; EvalResultOf reads it.
//
//   Value stats = EvalStats(CrossEntropy(logits, targets), logits, targets);
Value EvalStats(Value loss, Value logits, Value targets);
EvalResult EvalResultOf(const Tensor& stats);

// BatchShare is a trainer's share of each step's batch of `batch` rows
// (models/toy/toy_trainer.h and gpt_trainer.h use it alike). In one process it
// is the whole batch. Data parallel (a communicator of N ranks), `batch` is
// the global batch, which every rank draws whole, and rank r trains on
// rows [r B/N, (r+1) B/N) with dropout counters offset by its first row
// and a loss that is its sum over its targets divided by the global
// batch's count of targets: summed over the ranks, the loss, its gradients
// and the accuracy are those of one process training on the whole batch
// (within float summation order).
//
//   DAGRAD_ASSIGN_OR_RETURN(BatchShare share, BatchShare::Create(8, {.communicator = comm}));
//   Value loss = share.MeanLoss(g, logits, targets);  // in the scope "loss"
//   Executor exec(g, {.communicator = comm});
//   DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}));
//   DAGRAD_ASSIGN_OR_RETURN(Tensor my_targets, share.Rows(global_targets));
//   Feeds feeds = {{targets, my_targets}};
//   share.FeedWeight(global_targets, feeds);
//   DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, feeds, share.Training(/*step=*/1)));
class BatchShare {
 public:
  BatchShare() = default;
  // Create returns the share of this process (of parallel.communicator's
  // rank): InvalidArgument when the ranks do not divide `batch`.
  static absl::StatusOr<BatchShare> Create(int64_t batch, const DataParallelOptions& parallel);

  // MeanLoss builds in `g`, under the scope "loss", the training loss of
  // logits (rows, ..., V) for targets (rows, ...): their CrossEntropy mean
  // (with `label_smoothing`) in one process, this rank's share of the
  // global batch's mean data parallel (FeedWeight feeds its weight).
  Value MeanLoss(Graph& g, Value logits, Value targets, double label_smoothing = 0);
  // JobLoss is what a step fetches for the loss of the whole batch: the
  // loss, or data parallel the training step's sum of it over the ranks.
  Value JobLoss(const TrainingStep& ts) const;
  // Counts is TokenCounts of this rank's logits and targets; data parallel,
  // summed over the ranks in the graph (an all-reduce every rank runs), so
  // that it counts the global batch.
  Value Counts(Value logits, Value targets) const;

  // Rows returns this rank's rows of a tensor of the global batch (its
  // first axis); the tensor itself in one process.
  absl::StatusOr<Tensor> Rows(const Tensor& global) const;
  // FeedWeight adds MeanLoss's weight, 1 / the count of the global batch's
  // targets that are not ignored, to `feeds` (nothing in one process).
  void FeedWeight(const Tensor& global_targets, Feeds& feeds) const;
  // Training returns the RunOptions of training step `step` on this
  // rank's rows.
  RunOptions Training(uint64_t step) const;
  // BroadcastState gives every rank rank 0's values of `vars`, `step` and
  // `skips` (Trainer::BroadcastState; every rank calls it).
  absl::Status BroadcastState(Executor& exec, const std::vector<Value>& vars, int64_t& step,
                              NonFiniteSteps& skips) const;

  int64_t rows() const { return rows_; }
  int64_t first_row() const { return first_row_; }

 private:
  std::shared_ptr<Communicator> comm_;  // null: one process
  int64_t rows_ = 0, first_row_ = 0;
  Value weight_;  // data parallel: MeanLoss's fed weight
};

// Trainer is a model's training, what `dagrad train` drives. Steps and
// evaluation are the model's own (ToyTrainer, GptTrainer); the state a run
// carries from step to step is held here, and with it what every trainer
// does alike: checkpoints, the data-parallel start and the model file. A
// trainer builds graph_, exec_ and ts_ (its compiled training step), sets
// parallel_, share_ and skips_, advances step_, and names its parameters, its
// checkpoint format and config (State) and its model's metadata.
class Trainer {
 public:
  virtual ~Trainer() = default;
  // Step runs step step()+1: Aborted for a non-finite step the policy stops
  // at (nothing changed, step() included); the executor's errors otherwise.
  virtual absl::StatusOr<StepResult> Step() = 0;
  // Evaluate runs the held-out data in eval mode (no dropout).
  virtual absl::StatusOr<EvalResult> Evaluate() = 0;

  // SaveCheckpoint writes parameters, optimizer state, the step (with the
  // counts of skipped updates) and the config atomically, with checksums
  // (engine/io/checkpoint.h), keeping the file it replaces as
  // options.keep_previous_as if that is set. FailedPrecondition naming the
  // tensor, and nothing written, when a value is NaN or Inf.
  // LoadCheckpoint restores them, all or nothing. Errors: those of
  // ReadCheckpoint (NotFound; DataLoss for a damaged file, or one without
  // checksums); InvalidArgument
  // for a file that is not this trainer's checkpoint or does not fit the
  // model; FailedPrecondition when the checkpoint's config differs from
  // this trainer's, listing every differing field ("dim: checkpoint 16,
  // this run 32; lr: checkpoint 0.001, this run 0.5").
  //
  //   // setup: ToyRun
  //   DAGRAD_RETURN_IF_ERROR(trainer->SaveCheckpoint(
  //       "run/ckpt.safetensors", {.keep_previous_as = "run/ckpt.prev.safetensors"}));
  //   DAGRAD_RETURN_IF_ERROR(trainer->LoadCheckpoint("run/ckpt.safetensors"));
  absl::Status SaveCheckpoint(const std::string& path, const AtomicWriteOptions& options = {});
  absl::Status LoadCheckpoint(const std::string& path);
  // BroadcastState copies rank 0's parameters, optimizer state and step
  // counts to every rank (data parallel; nothing to do alone). Every rank
  // must call it, after rank 0 has initialised or loaded its state.
  absl::Status BroadcastState();
  // SaveModel writes the parameters with the model's metadata: what `dagrad
  // eval` and `dagrad generate` load, and the PyTorch references too.
  // FailedPrecondition naming the tensor, and nothing written, when one
  // holds a NaN or Inf.
  absl::Status SaveModel(const std::string& path);
  // Weights returns the parameters' current values under their checkpoint
  // names, with the model's metadata: SaveModel's file, in memory (e.g.
  // for a Generator).
  absl::StatusOr<SafetensorsFile> Weights();

  // run_config is the run's settings (the task's config's `run`).
  virtual const RunConfig& run_config() const = 0;
  int64_t step() const { return step_; }
  // Updates skipped so far (on_nonfinite = kSkip), in all and in a row.
  int64_t skipped_updates() const { return skips_.total(); }
  int64_t consecutive_skips() const { return skips_.in_a_row(); }
  // The compiled training step: its updates, gradients and norm.
  const TrainingStep& training_step() const { return ts_; }
  // The compiled training step (after Create).
  const Plan& train_plan() const { return *train_plan_; }
  Graph& graph() { return *graph_; }
  // The forward logits and loss of the training step.
  virtual Value logits() const = 0;
  virtual Value loss() const = 0;
  // Pictures draws the model as trained so far: (file name, SVG) pairs
  // such as attention heatmaps (WriteRunOutputs writes them); none unless
  // a trainer has its own.
  virtual absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Pictures() {
    return std::vector<std::pair<std::string, std::string>>{};
  }
  // Summary says, for a person, what a complete run reached given its
  // final evaluation, in lines: "held-out loss 0.1234 after 300 steps"
  // unless a trainer says more (the toy's accuracy, a language model's
  // windows, the GPT's sample).
  virtual absl::StatusOr<std::string> Summary(const EvalResult& final_eval);

 protected:
  // Parameters: the model's, in the order checkpoints hold them.
  virtual std::vector<Value> Parameters() const = 0;
  // State: the checkpoint format and the run's config (its ToMetadata).
  virtual TrainingState State() const = 0;
  // ModelMetadata: what SaveModel writes beside the parameters.
  virtual std::map<std::string, std::string> ModelMetadata() const = 0;

  // BuildStepStats builds, beside ts_ (after BuildTrainingStep with
  // skip_nonfinite or clipping, so that it has a gradient norm), what a
  // training step fetches: one float64 (4,) tensor [job loss, gradient norm,
  // correct, counted] (share_.Counts of `logits` and `targets`), so that a
  // step copies 32 bytes back from the device, once.
  void BuildStepStats(Value logits, Value targets);
  // CompileTrainingStep compiles train_plan_, fetching the step's stats
  // with ts_'s updates as targets.
  absl::Status CompileTrainingStep();
  // RunTrainingStep runs step `step` (step_ + 1) of train_plan_ on this
  // rank's `data` feeds at learning rate `lr`: the loss, gradient norm and
  // accuracy of the global batch (whose targets are `global_targets`), with
  // the skip policy applied, and step_ advanced.
  absl::StatusOr<StepResult> RunTrainingStep(int64_t step, double lr, Feeds data,
                                             const Tensor& global_targets);

  // Declared first, so destroyed last: every Value and plan of a trainer
  // refers to its graph.
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Executor> exec_;
  TrainingStep ts_;
  Value step_stats_;  // BuildStepStats
  std::unique_ptr<Plan> train_plan_;
  DataParallelOptions parallel_;  // the communicator (none: one process), buckets
  BatchShare share_;  // this rank's rows of the batch and share of its loss
  NonFiniteSteps skips_;
  int64_t step_ = 0;

 private:
  // The parameters and the optimizer state: what a checkpoint holds.
  std::vector<Value> StateVariables() const;
};

// RewriteForPrecision replaces each of `values` (forward values of one
// graph: a loss and its logits) with its rewrite under `precision`
// (ApplyPrecision, ops/autodiff/precision.h), all in one rewrite, so
// that they share its casts; ApplyPrecision's errors.
//
//   DAGRAD_RETURN_IF_ERROR(RewriteForPrecision(Precision::kBFloat16, {&loss, &logits}));
absl::Status RewriteForPrecision(Precision precision, std::initializer_list<Value*> values);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_TRAINER_H_
