#include "tools/cli/optimizer_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "tools/cli/command.h"

ABSL_FLAG(std::string, optimizer, "adam", "sgd, adam or adamw");
ABSL_FLAG(double, beta1, 0.9, "adam, adamw: the first moment's decay, in [0, 1)");
ABSL_FLAG(double, beta2, 0.999, "adam, adamw: the second moment's decay, in [0, 1)");
ABSL_FLAG(double, eps, 1e-8, "adam, adamw: added to the second moment's root, finite and > 0");
ABSL_FLAG(double, weight_decay, 0.0, "weight decay, finite and >= 0 (decoupled for adamw)");
ABSL_FLAG(double, clip, 1.0, "clip the global gradient norm to this, finite and >= 0 (0: off)");
ABSL_FLAG(std::string, lr_decay, "cosine",
          "after --warmup: cosine, linear (both to --final_lr_fraction x --lr at the last step) "
          "or constant; the formulas are LrSchedule's (ops/autodiff/optimizer.h)");
ABSL_FLAG(double, final_lr_fraction, 0.1,
          "the learning rate at the last step, as a fraction of --lr, in [0, 1]");

namespace dagrad::cli {

absl::StatusOr<OptimizerOptions> OptimizerFromFlags() {
  auto kind = ParseOptimizerKind(absl::GetFlag(FLAGS_optimizer));
  if (!kind.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--optimizer: ", kind.status().message()));
  }
  if (*kind == OptimizerKind::kSgd) {
    DAGRAD_RETURN_IF_ERROR(RefuseFlagsNotFor({"beta1", "beta2", "eps"},
                                             "--optimizer=adam and adamw",
                                             "sgd keeps no moments"));
  }
  return OptimizerOptions{.kind = *kind,
                          .beta1 = absl::GetFlag(FLAGS_beta1),
                          .beta2 = absl::GetFlag(FLAGS_beta2),
                          .eps = absl::GetFlag(FLAGS_eps),
                          .weight_decay = absl::GetFlag(FLAGS_weight_decay),
                          .clip_norm = absl::GetFlag(FLAGS_clip)};
}

absl::StatusOr<LrDecay> LrDecayFromFlags() {
  auto decay = ParseLrDecay(absl::GetFlag(FLAGS_lr_decay));
  if (!decay.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--lr_decay: ", decay.status().message()));
  }
  return *decay;
}

double FinalLrFractionFlag() { return absl::GetFlag(FLAGS_final_lr_fraction); }

}  // namespace dagrad::cli
