#include "engine/autodiff/optimizer.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/autodiff/autodiff.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/optim.h"
#include "ops/reduce.h"

namespace dagrad {

absl::StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adam") return OptimizerKind::kAdam;
  if (name == "adamw") return OptimizerKind::kAdamW;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer '", name, "' (sgd, adam, adamw)"));
}

namespace {

absl::Status Bad(absl::string_view field, absl::string_view range, double value) {
  return absl::InvalidArgumentError(absl::StrCat(field, " must be ", range, ", got ", value));
}

// InRange is false for NaN: every comparison with it is.
bool InRange(double v, double lo, double hi_excluded) { return v >= lo && v < hi_excluded; }

}  // namespace

absl::Status ValidateOptimizerOptions(const OptimizerOptions& o) {
  const double inf = std::numeric_limits<double>::infinity();
  if (o.kind == OptimizerKind::kSgd) {
    if (!InRange(o.momentum, 0, 1)) return Bad("momentum", "in [0, 1)", o.momentum);
    if (o.nesterov && o.momentum == 0) return Bad("momentum", "> 0 for nesterov", o.momentum);
  } else {
    if (!InRange(o.beta1, 0, 1)) return Bad("beta1", "in [0, 1)", o.beta1);
    if (!InRange(o.beta2, 0, 1)) return Bad("beta2", "in [0, 1)", o.beta2);
    if (!(o.eps > 0 && o.eps < inf)) return Bad("eps", "finite and > 0", o.eps);
  }
  if (!InRange(o.weight_decay, 0, inf)) {
    return Bad("weight_decay", "finite and >= 0", o.weight_decay);
  }
  if (!InRange(o.clip_norm, 0, inf)) return Bad("clip_norm", "finite and >= 0", o.clip_norm);
  return absl::OkStatus();
}

absl::Status ValidateLrSchedule(const LrSchedule& s) {
  const double inf = std::numeric_limits<double>::infinity();
  if (!(s.peak > 0 && s.peak < inf)) return Bad("lr (peak)", "finite and > 0", s.peak);
  if (s.warmup_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("warmup must be >= 0, got ", s.warmup_steps));
  }
  if (s.total_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("total steps must be >= 0, got ", s.total_steps));
  }
  if (!(s.final_fraction >= 0 && s.final_fraction <= 1)) {
    return Bad("final_lr_fraction", "in [0, 1]", s.final_fraction);
  }
  return absl::OkStatus();
}

bool UpdateSkipped(double loss, double grad_norm) {
  return !std::isfinite(loss) || !std::isfinite(grad_norm);
}

namespace {

// GlobalNorm returns sqrt(sum over grads of sum(g^2)) as a float64 scalar.
Value GlobalNorm(const std::vector<Value>& grads) {
  Value total;
  for (const Value& g : grads) {
    Value s = Cast(Sum(Mul(g, g)), DType::kFloat64);
    total = total.is_null() ? s : Add(total, s);
  }
  return Sqrt(total);
}

// SkipGuard is a float64 scalar that is finite exactly when the loss and
// the gradient norm are: 0 * loss is 0 for a finite loss and NaN otherwise.
Value SkipGuard(Value loss, Value grad_norm) {
  return Add(grad_norm, Scale(Sum(Cast(loss, DType::kFloat64)), 0.0));
}

// CheckParams says why `params`, whose gradients are `grads`, cannot be
// trained: one is not a variable, or the loss does not depend on it.
absl::Status CheckParams(const std::vector<Value>& params, const std::vector<Value>& grads) {
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].node().is_variable()) {
      return absl::InvalidArgumentError(
          absl::StrCat("BuildTrainingStep: '", params[i].path(), "' is not a variable"));
    }
    if (grads[i].is_null()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "BuildTrainingStep: the loss does not depend on parameter '", params[i].path(), "'"));
    }
  }
  return absl::OkStatus();
}

// AddUpdate builds parameter i's optimizer state and update in `ts`, under
// the scope "optimizer/<parameter path>". `scale` (gradient clipping) and
// `guard` (skip a non-finite step) may be null.
void AddUpdate(Graph& g, TrainingStep& ts, size_t i, const OptimizerOptions& o, Value scale,
               Value guard) {
  const Value p = ts.params[i];
  Graph::ScopePathGuard in_scope(g, absl::StrCat("optimizer/", p.path()));
  if (o.kind == OptimizerKind::kSgd) {
    Value vel = g.Variable("momentum", p.shape(), Initializer::Zeros(), p.dtype());
    ts.state.push_back(vel);
    ts.updates.push_back(SgdUpdate(p, ts.grads[i], vel, ts.lr,
                                   {.momentum = o.momentum, .weight_decay = o.weight_decay,
                                    .nesterov = o.nesterov},
                                   scale, guard));
    return;
  }
  Value m = g.Variable("exp_avg", p.shape(), Initializer::Zeros(), p.dtype());
  Value v = g.Variable("exp_avg_sq", p.shape(), Initializer::Zeros(), p.dtype());
  ts.state.push_back(m);
  ts.state.push_back(v);
  ts.updates.push_back(AdamUpdate(p, ts.grads[i], m, v, ts.lr, ts.step,
                                  {.beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
                                   .weight_decay = o.weight_decay,
                                   .decoupled = o.kind == OptimizerKind::kAdamW},
                                  scale, guard));
}

}  // namespace

absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const std::vector<Value>& params,
                                               const OptimizerOptions& o) {
  if (!loss.ok()) return loss.status();
  if (params.empty()) return absl::InvalidArgumentError("BuildTrainingStep: no parameters");
  DAGRAD_RETURN_IF_ERROR(ValidateOptimizerOptions(o));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, params));
  DAGRAD_RETURN_IF_ERROR(CheckParams(params, grads));
  Graph& g = *loss.graph();
  Graph::RoleScope role(g, NodeRole::kOptimizer);
  Graph::ScopePathGuard in_optimizer(g, "optimizer");
  TrainingStep ts;
  ts.params = params;
  ts.grads = grads;
  ts.lr = g.Input("lr", DType::kFloat64, {});
  ts.step = g.Input("step", DType::kFloat64, {});
  Value scale, guard;
  if (o.clip_norm > 0 || o.skip_nonfinite) ts.grad_norm = GlobalNorm(grads);
  if (o.skip_nonfinite) guard = SkipGuard(loss, ts.grad_norm);
  if (o.clip_norm > 0) {
    Value clip = ScalarLike(ts.grad_norm, o.clip_norm);
    // min(1, clip / (norm + 1e-6)), as torch.nn.utils.clip_grad_norm_.
    scale = Minimum(Div(clip, AddScalar(ts.grad_norm, 1e-6)), ScalarLike(clip, 1.0));
  }
  for (size_t i = 0; i < params.size(); ++i) AddUpdate(g, ts, i, o, scale, guard);
  for (const Value& u : ts.updates) {
    if (!u.ok()) return u.status();
  }
  return ts;
}

double LearningRate(const LrSchedule& s, int64_t step) {
  if (s.warmup_steps > 0 && step <= s.warmup_steps) {
    return s.peak * static_cast<double>(step) / static_cast<double>(s.warmup_steps);
  }
  const int64_t decay = s.total_steps - s.warmup_steps;
  if (decay <= 0) return s.peak;
  const double progress =
      std::min(1.0, static_cast<double>(step - s.warmup_steps) / static_cast<double>(decay));
  const double cosine = 0.5 * (1 + std::cos(M_PI * progress));
  return s.peak * (s.final_fraction + (1 - s.final_fraction) * cosine);
}

}  // namespace dagrad
