#include "models/run_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"

namespace dagrad::models {
namespace {

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(what); }

// ValidateOptimizer checks weight decay, clipping and an eps the trainers'
// float32 parameters can hold, then the rest as ValidateOptimizerOptions.
absl::Status ValidateOptimizer(const OptimizerOptions& o) {
  if (o.kind != OptimizerKind::kSgd && o.eps > 0 && !(static_cast<float>(o.eps) > 0)) {
    return Bad(absl::StrCat("eps ", o.eps, " rounds to 0 in float32, the parameters' type (the "
                            "least above 0 is 1.4e-45)"));
  }
  if (!(o.weight_decay >= 0) || !std::isfinite(o.weight_decay)) {
    return Bad(absl::StrCat("weight_decay must be finite and >= 0, got ", o.weight_decay));
  }
  if (!(o.clip_norm >= 0) || !std::isfinite(o.clip_norm)) {
    return Bad(absl::StrCat("clip must be finite and >= 0, got ", o.clip_norm));
  }
  return ValidateOptimizerOptions(o);
}

}  // namespace

absl::StatusOr<NonFinitePolicy> ParseNonFinitePolicy(const std::string& name) {
  if (name == "stop") return NonFinitePolicy::kStop;
  if (name == "skip") return NonFinitePolicy::kSkip;
  return Bad(absl::StrCat("unknown non-finite policy '", name, "' (stop, skip)"));
}

absl::Status RunConfig::Validate() const {
  if (batch < 1) return Bad(absl::StrCat("batch must be >= 1, got ", batch));
  if (steps < 0) return Bad(absl::StrCat("steps must be >= 0, got ", steps));
  if (!(lr > 0) || !std::isfinite(lr)) {
    return Bad(absl::StrCat("lr must be finite and > 0, got ", lr));
  }
  if (warmup < 0) return Bad(absl::StrCat("warmup must be >= 0, got ", warmup));
  if (!(final_lr_fraction >= 0 && final_lr_fraction <= 1)) {
    return Bad(absl::StrCat("final_lr_fraction must be in [0, 1], got ", final_lr_fraction));
  }
  if (!(label_smoothing >= 0 && label_smoothing <= 1)) {
    return Bad(absl::StrCat("label_smoothing must be in [0, 1], got ", label_smoothing));
  }
  if (memory_limit_bytes < 0) {
    return Bad(absl::StrCat("memory limit must be >= 0, got ", memory_limit_bytes));
  }
  if (max_consecutive_skips < 1) {
    return Bad(absl::StrCat("max_consecutive_skips must be >= 1, got ", max_consecutive_skips));
  }
  return ValidateOptimizer(optimizer);
}

std::map<std::string, std::string> RunConfig::ToMetadata() const {
  std::map<std::string, std::string> m = {{"batch", absl::StrCat(batch)},
          {"steps", absl::StrCat(steps)},
          {"optimizer", OptimizerName(optimizer.kind)},
          {"beta1", MetadataNumber(optimizer.beta1)},
          {"beta2", MetadataNumber(optimizer.beta2)},
          {"eps", MetadataNumber(optimizer.eps)},
          {"lr_decay", lr_schedule ? "custom" : LrDecayName(lr_decay)},
          {"weight_decay", MetadataNumber(optimizer.weight_decay)},
          {"clip", MetadataNumber(optimizer.clip_norm)},
          {"lr", MetadataNumber(lr)},
          {"warmup", absl::StrCat(warmup)},
          {"final_lr_fraction", MetadataNumber(final_lr_fraction)},
          {"label_smoothing", MetadataNumber(label_smoothing)},
          {"precision", PrecisionName(optimizer.precision)},
          {"seed", absl::StrCat(seed)}};
  if (optimizer.kind == OptimizerKind::kSgd) {
    m.emplace("momentum", MetadataNumber(optimizer.momentum));
    m.emplace("nesterov", absl::StrCat(optimizer.nesterov ? 1 : 0));
  }
  return m;
}

LrSchedule RunConfig::Schedule() const {
  return {.peak = lr,
          .warmup_steps = warmup,
          .total_steps = steps,
          .final_fraction = final_lr_fraction,
          .decay = lr_decay,
          .custom = lr_schedule};
}

}  // namespace dagrad::models
