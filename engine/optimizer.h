// engine/optimizer.h
//
// Training steps as graph: BuildTrainingStep differentiates a loss with
// respect to parameters and adds, under the scope "optimizer", gradient
// clipping by global norm and one fused update op per parameter (SGD with
// momentum, Adam or AdamW, as torch.optim defines them). The whole step —
// forward, backward, update — is one plan, compiled once and run every
// step; the learning rate and the step number are fed, so a schedule needs
// no re-planning.
//
//   DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts,
//       BuildTrainingStep(loss, g.Parameters(), {.kind = OptimizerKind::kAdamW,
//                                                .weight_decay = 0.01, .clip_norm = 1.0}));
//   DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}, ts.updates));
//   exec.Run(*plan, {{tokens, batch}, {ts.lr, Tensor::Scalar(LearningRate(sched, t))},
//                    {ts.step, Tensor::Scalar<double>(t)}}, {.training = true, .step = t});

#ifndef DAGRAD_ENGINE_OPTIMIZER_H_
#define DAGRAD_ENGINE_OPTIMIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"

namespace dagrad {

enum class OptimizerKind { kSgd, kAdam, kAdamW };

// ParseOptimizerKind accepts "sgd", "adam", "adamw"; InvalidArgument else.
absl::StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name);

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kAdam;
  double momentum = 0.9;  // SGD
  bool nesterov = false;  // SGD
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam, AdamW
  // SGD and Adam: L2 penalty added to the gradient; AdamW: decoupled decay.
  double weight_decay = 0.0;
  // > 0: scale gradients by min(1, clip_norm / (norm + 1e-6)), where norm is
  // the global L2 norm of all gradients (torch.nn.utils.clip_grad_norm_).
  double clip_norm = 0.0;
};

struct TrainingStep {
  Value lr;         // feed a float64 scalar each step
  Value step;       // feed a float64 scalar: 1 on the first step
  Value grad_norm;  // the global gradient norm before clipping (null when not clipping)
  std::vector<Value> params;
  std::vector<Value> grads;
  std::vector<Value> updates;  // plan targets
  std::vector<Value> state;    // the optimizer's variables (momenta, moments)
};

// BuildTrainingStep adds the step's nodes to loss's graph. Errors: those of
// Gradients; a parameter the loss does not depend on; bad options.
absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const std::vector<Value>& params,
                                               const OptimizerOptions& options);

// LrSchedule: linear warmup from 0 to `peak` over `warmup_steps`, then
// cosine decay to `peak * final_fraction` at `total_steps`.
struct LrSchedule {
  double peak = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double final_fraction = 0.0;
};

// LearningRate returns the rate for `step` (1-based); constant past the end.
double LearningRate(const LrSchedule& schedule, int64_t step);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_OPTIMIZER_H_
