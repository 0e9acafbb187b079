#include "engine/optimizer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/autodiff.h"
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

// GlobalNorm returns sqrt(sum over grads of sum(g^2)) as a float64 scalar.
Value GlobalNorm(const std::vector<Value>& grads) {
  Value total;
  for (const Value& g : grads) {
    Value s = Cast(Sum(Mul(g, g)), DType::kFloat64);
    total = total.is_null() ? s : Add(total, s);
  }
  return Sqrt(total);
}

}  // namespace

absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const std::vector<Value>& params,
                                               const OptimizerOptions& o) {
  if (!loss.ok()) return loss.status();
  if (params.empty()) return absl::InvalidArgumentError("BuildTrainingStep: no parameters");
  if (o.clip_norm < 0 || !std::isfinite(o.clip_norm)) {
    return absl::InvalidArgumentError(
        absl::StrCat("clip_norm must be finite and >= 0, got ", o.clip_norm));
  }
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, params));
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
  Graph& g = *loss.graph();
  Graph::RoleScope role(g, NodeRole::kOptimizer);
  const std::string saved = g.SetScopePath("optimizer");
  TrainingStep ts;
  ts.params = params;
  ts.grads = grads;
  ts.lr = g.Input("lr", DType::kFloat64, {});
  ts.step = g.Input("step", DType::kFloat64, {});
  Value scale;
  if (o.clip_norm > 0) {
    ts.grad_norm = GlobalNorm(grads);
    Value clip = ScalarLike(ts.grad_norm, o.clip_norm);
    // min(1, clip / (norm + 1e-6)), as torch.nn.utils.clip_grad_norm_.
    scale = Minimum(Div(clip, AddScalar(ts.grad_norm, 1e-6)), ScalarLike(clip, 1.0));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Value p = params[i];
    g.SetScopePath(absl::StrCat("optimizer/", p.path()));
    Value update;
    if (o.kind == OptimizerKind::kSgd) {
      Value vel = g.Variable("momentum", p.shape(), Initializer::Zeros(),
                             p.dtype());
      ts.state.push_back(vel);
      update = SgdUpdate(p, grads[i], vel, ts.lr,
                         {.momentum = o.momentum, .weight_decay = o.weight_decay,
                          .nesterov = o.nesterov},
                         scale);
    } else {
      Value m = g.Variable("exp_avg", p.shape(), Initializer::Zeros(),
                           p.dtype());
      Value v = g.Variable("exp_avg_sq", p.shape(), Initializer::Zeros(),
                           p.dtype());
      ts.state.push_back(m);
      ts.state.push_back(v);
      update = AdamUpdate(p, grads[i], m, v, ts.lr, ts.step,
                          {.beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
                           .weight_decay = o.weight_decay,
                           .decoupled = o.kind == OptimizerKind::kAdamW},
                          scale);
    }
    ts.updates.push_back(update);
  }
  g.SetScopePath(saved);
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
