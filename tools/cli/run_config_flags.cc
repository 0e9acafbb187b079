// `dagrad train`'s run settings, every task's (models::RunConfig): the
// batch, steps and seed, the optimizer (OptimizerOptions,
// ops/autodiff/optimizer.h) and its learning-rate schedule (LrSchedule),
// the precision and the non-finite policy. Their ranges are checked where
// the config is (ValidateOptimizerOptions, models::RunConfig::Validate),
// and the errors name the flags.

#include <algorithm>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/train_run.h"

ABSL_FLAG(int64_t, batch, 64,
          "sequences per step; under mpirun the global batch, split evenly over the ranks");
ABSL_FLAG(int64_t, steps, 300, "training steps");
ABSL_FLAG(double, lr, 1e-3,
          "peak learning rate, finite and > 0 (linear warmup over --warmup steps, then "
          "--lr_decay); one too large for the model ends in a non-finite stop (see "
          "--on_nonfinite)");
ABSL_FLAG(int64_t, warmup, 30,
          "warmup steps; when not given, 30 or a tenth of --steps, whichever is fewer, so that "
          "a short run still warms up to --lr and decays");
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
ABSL_DECLARE_FLAG(int64_t, eval_every);  // train_command.cc
ABSL_FLAG(std::string, optimizer, "adam", "sgd, adam or adamw");
ABSL_FLAG(double, momentum, 0.9, "sgd: the velocity's decay, in [0, 1) (torch.optim.SGD's momentum)");
ABSL_FLAG(bool, nesterov, false, "sgd: Nesterov momentum (needs --momentum > 0)");
ABSL_FLAG(double, beta1, 0.9, "adam, adamw: the first moment's decay, in [0, 1)");
ABSL_FLAG(double, beta2, 0.999, "adam, adamw: the second moment's decay, in [0, 1)");
ABSL_FLAG(double, eps, 1e-8, "adam, adamw: added to the second moment's root, finite and > 0");
ABSL_FLAG(double, weight_decay, 0.0, "weight decay, finite and >= 0 (decoupled for adamw)");
ABSL_FLAG(double, label_smoothing, 0.0,
          "the training loss's label smoothing, in [0, 1] (torch's: the target is (1 - e) onehot "
          "+ e / classes); the validation loss is not smoothed");
ABSL_FLAG(double, clip, 1.0, "clip the global gradient norm to this, finite and >= 0 (0: off)");
ABSL_FLAG(std::string, lr_decay, "cosine",
          "after --warmup: cosine, linear (both to --final_lr_fraction x --lr at the last step; "
          "a --warmup of --steps or more leaves no step to decay in) or constant; the formulas "
          "are LrSchedule's (ops/autodiff/optimizer.h)");
ABSL_FLAG(double, final_lr_fraction, 0.1,
          "the learning rate at the last step, as a fraction of --lr, in [0, 1]");

namespace dagrad::cli {
namespace {

// OptimizerFromFlags returns the options the flags set (precision left at
// its default): InvalidArgument for an unknown --optimizer, for --beta1,
// --beta2 or --eps given with --optimizer=sgd, which keeps no moments, or
// for --momentum or --nesterov given with adam or adamw.
absl::StatusOr<OptimizerOptions> OptimizerFromFlags() {
  auto kind = ParseOptimizerKind(absl::GetFlag(FLAGS_optimizer));
  if (!kind.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--optimizer: ", kind.status().message()));
  }
  if (*kind == OptimizerKind::kSgd) {
    DAGRAD_RETURN_IF_ERROR(RefuseFlagsNotFor({"beta1", "beta2", "eps"},
                                             "--optimizer=adam and adamw",
                                             "sgd keeps no moments"));
  } else {
    DAGRAD_RETURN_IF_ERROR(RefuseFlagsNotFor({"momentum", "nesterov"}, "--optimizer=sgd",
                                             "adam's momentum is --beta1"));
  }
  return OptimizerOptions{.kind = *kind,
                          .momentum = absl::GetFlag(FLAGS_momentum),
                          .nesterov = absl::GetFlag(FLAGS_nesterov),
                          .beta1 = absl::GetFlag(FLAGS_beta1),
                          .beta2 = absl::GetFlag(FLAGS_beta2),
                          .eps = absl::GetFlag(FLAGS_eps),
                          .weight_decay = absl::GetFlag(FLAGS_weight_decay),
                          .clip_norm = absl::GetFlag(FLAGS_clip)};
}

// WarmupSteps is --warmup as given, else 30 or a tenth of --steps,
// whichever is fewer.
int64_t WarmupSteps() {
  if (FlagGiven("warmup")) return absl::GetFlag(FLAGS_warmup);
  const int64_t steps = std::max<int64_t>(absl::GetFlag(FLAGS_steps), 0);
  return std::min<int64_t>(absl::GetFlag(FLAGS_warmup), steps / 10);
}

absl::StatusOr<LrDecay> LrDecayFromFlags() {
  auto decay = ParseLrDecay(absl::GetFlag(FLAGS_lr_decay));
  if (!decay.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--lr_decay: ", decay.status().message()));
  }
  return *decay;
}

}  // namespace

absl::StatusOr<models::RunConfig> RunConfigFromFlags() {
  DAGRAD_ASSIGN_OR_RETURN(OptimizerOptions optimizer, OptimizerFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(const LrDecay lr_decay, LrDecayFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(optimizer.precision, PrecisionFromFlags());
  auto policy = models::ParseNonFinitePolicy(absl::GetFlag(FLAGS_on_nonfinite));
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--on_nonfinite: ", policy.status().message()));
  }
  DAGRAD_ASSIGN_OR_RETURN(const ExecutorOptions exec, ExecutorOptionsFromFlags());
  if (absl::GetFlag(FLAGS_eval_every) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--eval_every must be >= 1, got ", absl::GetFlag(FLAGS_eval_every)));
  }
  return models::RunConfig{.batch = absl::GetFlag(FLAGS_batch),
                           .steps = absl::GetFlag(FLAGS_steps),
                           .optimizer = optimizer,
                           .lr = absl::GetFlag(FLAGS_lr),
                           .warmup = WarmupSteps(),
                           .final_lr_fraction = absl::GetFlag(FLAGS_final_lr_fraction),
                           .lr_decay = lr_decay,
                           .label_smoothing = absl::GetFlag(FLAGS_label_smoothing),
                           .seed = absl::GetFlag(FLAGS_seed),
                           .on_nonfinite = *policy,
                           .max_consecutive_skips = absl::GetFlag(FLAGS_max_consecutive_skips),
                           .check_numerics = exec.check_numerics,
                           .memory_limit_bytes = exec.memory_limit_bytes,
                           .profile = exec.profile};
}

}  // namespace dagrad::cli
