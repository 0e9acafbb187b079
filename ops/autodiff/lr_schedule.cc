#include "ops/autodiff/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/op_util.h"

namespace dagrad {
absl::Status ValidateLrSchedule(const LrSchedule& s) {
  if (s.custom) return absl::OkStatus();
  const double inf = std::numeric_limits<double>::infinity();
  if (!(s.peak > 0 && s.peak < inf)) return MustBe("lr (peak)", "finite and > 0", s.peak);
  if (s.warmup_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("warmup must be >= 0, got ", s.warmup_steps));
  }
  if (s.total_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("total steps must be >= 0, got ", s.total_steps));
  }
  if (!(s.final_fraction >= 0 && s.final_fraction <= 1)) {
    return MustBe("final_lr_fraction", "in [0, 1]", s.final_fraction);
  }
  return absl::OkStatus();
}

absl::StatusOr<LrDecay> ParseLrDecay(const std::string& name) {
  if (name == "cosine") return LrDecay::kCosine;
  if (name == "linear") return LrDecay::kLinear;
  if (name == "constant") return LrDecay::kConstant;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown learning-rate decay '", name, "' (cosine, linear, constant)"));
}

const char* LrDecayName(LrDecay decay) {
  switch (decay) {
    case LrDecay::kCosine: return "cosine";
    case LrDecay::kLinear: return "linear";
    case LrDecay::kConstant: return "constant";
  }
  return "?";
}

absl::StatusOr<double> LearningRate(const LrSchedule& s, int64_t step) {
  if (step < 1) {  // the warmup's s / W would be a negative rate, the decay's above the peak
    return absl::InvalidArgumentError(absl::StrCat(
        "the learning-rate schedule's step must be >= 1 (steps count from 1), got ", step));
  }
  if (s.custom) {
    const double lr = s.custom(step);
    if (!(lr >= 0 && lr < std::numeric_limits<double>::infinity())) {
      return MustBe(absl::StrCat("the learning-rate schedule's value at step ", step),
                 "finite and >= 0", lr);
    }
    return lr;
  }
  DAGRAD_RETURN_IF_ERROR(ValidateLrSchedule(s));
  if (s.warmup_steps > 0 && step <= s.warmup_steps) {
    return s.peak * static_cast<double>(step) / static_cast<double>(s.warmup_steps);
  }
  const int64_t decay = s.total_steps - s.warmup_steps;
  if (decay <= 0 || s.decay == LrDecay::kConstant) return s.peak;
  const double progress =
      std::min(1.0, static_cast<double>(step - s.warmup_steps) / static_cast<double>(decay));
  const double left = s.decay == LrDecay::kCosine ? 0.5 * (1 + std::cos(M_PI * progress))
                                                  : 1 - progress;
  return s.peak * (s.final_fraction + (1 - s.final_fraction) * left);
}

}  // namespace dagrad
