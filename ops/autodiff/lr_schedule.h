// ops/autodiff/lr_schedule.h
//
// Learning-rate schedules: warmup then cosine, linear or constant decay, as
// nanoGPT and torch.optim.lr_scheduler define them, or any function of the
// step. A training step's rate is fed each step (ops/autodiff/optimizer.h),
// so a schedule needs no re-planning.

#ifndef DAGRAD_OPS_AUTODIFF_LR_SCHEDULE_H_
#define DAGRAD_OPS_AUTODIFF_LR_SCHEDULE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace dagrad {

// LrDecay: how an LrSchedule's rate falls after the warmup.
enum class LrDecay { kCosine, kLinear, kConstant };

// ParseLrDecay accepts "cosine", "linear", "constant"; InvalidArgument else.
absl::StatusOr<LrDecay> ParseLrDecay(const std::string& name);

// LrDecayName returns the name ParseLrDecay accepts for `decay`.
const char* LrDecayName(LrDecay decay);

// LrFunction is a schedule of the user's: the learning rate of each
// 1-based step.
using LrFunction = std::function<double(int64_t step)>;

// LrSchedule is the learning rate of each step s = 1, 2, ... (the step
// that applies the update: 1 on the first), with P = peak, W =
// warmup_steps, N = total_steps, f = final_fraction:
//
//   warmup, s <= W:  lr(s) = P * s / W              (lr(W) = P; none if W = 0)
//   then, with progress p = min(1, (s - W) / (N - W)), or P when N <= W:
//     kCosine:    lr(s) = P * (f + (1 - f) * (1 + cos(pi * p)) / 2)
//     kLinear:    lr(s) = P * (f + (1 - f) * (1 - p))
//     kConstant:  lr(s) = P
//
// so lr(N) = f * P (P for kConstant), and it stays so past N. Beside the
// common forms: nanoGPT's get_lr(it), it = s - 1, warms up as
// P * (it + 1) / (W + 1), and PyTorch's CosineAnnealingLR and LinearLR,
// stepped after each optimizer.step(), give the first step after the warmup
// progress 0 where this gives 1 / (N - W). A `custom` function reproduces
// those exactly, or any other schedule: set, it alone gives the rate
// (the fields above are unused).
//
//   LrSchedule warm_cosine{.peak = 6e-4, .warmup_steps = 100, .total_steps = 2000,
//                          .final_fraction = 0.1};
//   LrSchedule nanogpt{.custom = [](int64_t s) { return 6e-4 * std::min<double>(s, 101) / 101; }};
//   DAGRAD_ASSIGN_OR_RETURN(const double first, LearningRate(warm_cosine, 1));  // 6e-6
struct LrSchedule {
  double peak = 1e-3;          // finite, > 0
  int64_t warmup_steps = 0;    // >= 0
  int64_t total_steps = 1;     // >= 0
  double final_fraction = 0.0;  // in [0, 1]
  LrDecay decay = LrDecay::kCosine;
  LrFunction custom;           // set: the schedule is custom(s)
};

// ValidateLrSchedule returns InvalidArgument naming the first bad field and
// its value (NaN and +-Inf are bad everywhere); a custom schedule's values
// are checked as LearningRate returns them.
absl::Status ValidateLrSchedule(const LrSchedule& schedule);

// LearningRate returns the rate of `step` (1-based), as LrSchedule's
// formulas say: InvalidArgument for a step < 1, for a schedule that
// ValidateLrSchedule refuses, and, naming the step and the value, when a
// custom schedule returns one that is not finite and >= 0.
absl::StatusOr<double> LearningRate(const LrSchedule& schedule, int64_t step);

}  // namespace dagrad

#endif  // DAGRAD_OPS_AUTODIFF_LR_SCHEDULE_H_
