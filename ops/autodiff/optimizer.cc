#include "ops/autodiff/optimizer.h"

#include <cmath>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/collective.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/sum_of_squares.h"

namespace dagrad {

absl::StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adam") return OptimizerKind::kAdam;
  if (name == "adamw") return OptimizerKind::kAdamW;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer '", name, "' (sgd, adam, adamw)"));
}

const char* OptimizerName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
  }
  return "?";
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
  if (o.scope.empty()) return absl::InvalidArgumentError("scope must not be empty");
  return absl::OkStatus();
}

absl::Status ValidateLrSchedule(const LrSchedule& s) {
  if (s.custom) return absl::OkStatus();
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

// GlobalNorm returns sqrt(sum over grads of sum(g^2)) as a float64 scalar,
// skipping null grads: one sum_of_squares over all of them, whose order of
// addition is fixed (ops/sum_of_squares.h).
Value GlobalNorm(const std::vector<Value>& grads) {
  std::vector<Value> present;
  for (const Value& g : grads) {
    if (!g.is_null()) present.push_back(g);
  }
  return Sqrt(SumOfSquares(present));
}

// ClipScale is min(1, max_norm / (norm + 1e-6)), as
// torch.nn.utils.clip_grad_norm_.
Value ClipScale(Value norm, double max_norm) {
  Value clip = ScalarLike(norm, max_norm);
  return Minimum(Div(clip, AddScalar(norm, 1e-6)), ScalarLike(clip, 1.0));
}

// SkipGuard is a float64 scalar that is finite exactly when the loss and
// the gradient norm are: 0 * loss is 0 for a finite loss and NaN otherwise.
Value SkipGuard(Value loss, Value grad_norm) {
  return Add(grad_norm, Scale(Sum(Cast(loss, DType::kFloat64)), 0.0));
}

std::string Quoted(const std::vector<std::string>& names) {
  return absl::StrCat(names.size() == 1 ? "parameter '" : "parameters '",
                      absl::StrJoin(names, "', '"), "'");
}

// CheckGroups validates each group's fields and that every parameter is a
// variable of one graph, in one group only; `caller` begins each message.
absl::Status CheckGroups(const std::vector<ParamGroup>& groups, absl::string_view caller) {
  const double inf = std::numeric_limits<double>::infinity();
  absl::flat_hash_set<NodeId> seen;
  const Graph* graph = nullptr;
  for (size_t i = 0; i < groups.size(); ++i) {
    const ParamGroup& group = groups[i];
    const std::string where = absl::StrCat(caller, ": param group ", i, ": ");
    if (group.weight_decay && !InRange(*group.weight_decay, 0, inf)) {
      return Bad(where + "weight_decay", "finite and >= 0", *group.weight_decay);
    }
    if (!InRange(group.lr_scale, 0, inf)) {
      return Bad(where + "lr_scale", "finite and >= 0", group.lr_scale);
    }
    for (const Value& p : group.params) {
      if (!p.ok()) return p.status();
      const std::string named = absl::StrCat(caller, ": parameter '", p.path(), "' ");
      if (!p.node().is_variable()) return absl::InvalidArgumentError(named + "is not a variable");
      if (graph == nullptr) graph = p.graph();
      if (p.graph() != graph) {
        return absl::InvalidArgumentError(named + "belongs to another graph than the first");
      }
      if (!seen.insert(p.id()).second) {
        return absl::InvalidArgumentError(named + "is in more than one param group");
      }
    }
  }
  if (seen.empty()) return absl::InvalidArgumentError(absl::StrCat(caller, ": no parameters"));
  return absl::OkStatus();
}

// MakeState returns parameter p's optimizer state, made under the scope
// "<scope>/<parameter path>": SGD's momentum, Adam's two moments.
std::vector<Value> MakeState(Graph& g, Value p, const OptimizerOptions& o) {
  Graph::ScopePathGuard in_scope(g, absl::StrCat(o.scope, "/", p.path()));
  if (o.kind == OptimizerKind::kSgd) {
    return {g.Variable("momentum", p.shape(), Initializer::Zeros(), p.dtype())};
  }
  return {g.Variable("exp_avg", p.shape(), Initializer::Zeros(), p.dtype()),
          g.Variable("exp_avg_sq", p.shape(), Initializer::Zeros(), p.dtype())};
}

// AddUpdate builds parameter i's update in `ts` on its `state`, at learning
// rate `lr`. `scale` (gradient clipping) and `guard` (skip a non-finite
// step) may be null.
void AddUpdate(TrainingStep& ts, size_t i, const std::vector<Value>& state,
               const OptimizerOptions& o, Value lr, Value scale, Value guard) {
  const Value p = ts.params[i];
  ts.state.insert(ts.state.end(), state.begin(), state.end());
  if (o.kind == OptimizerKind::kSgd) {
    ts.updates.push_back(SgdUpdate(p, ts.grads[i], state[0], lr,
                                   {.momentum = o.momentum, .weight_decay = o.weight_decay,
                                    .nesterov = o.nesterov},
                                   scale, guard));
    return;
  }
  const Value m = state[0], v = state[1];
  ts.updates.push_back(AdamUpdate(p, ts.grads[i], m, v, lr, ts.step,
                                  {.beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
                                   .weight_decay = o.weight_decay,
                                   .decoupled = o.kind == OptimizerKind::kAdamW},
                                  scale, guard));
}

// Trained lists the parameters that get an update, with their groups.
struct Trained {
  std::vector<Value> params, grads;
  std::vector<size_t> group;
  std::vector<std::string> unused;
};

// SplitUnused separates the parameters the loss reaches from those it does
// not, which are an error unless allow_unused.
absl::StatusOr<Trained> SplitUnused(Value loss, const std::vector<ParamGroup>& groups,
                                    bool allow_unused) {
  std::vector<Value> all;
  std::vector<size_t> group_of;
  for (size_t i = 0; i < groups.size(); ++i) {
    all.insert(all.end(), groups[i].params.begin(), groups[i].params.end());
    group_of.resize(all.size(), i);
  }
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, all));
  Trained t;
  for (size_t i = 0; i < all.size(); ++i) {
    if (grads[i].is_null()) {
      t.unused.push_back(all[i].path());
      continue;
    }
    t.params.push_back(all[i]);
    t.grads.push_back(grads[i]);
    t.group.push_back(group_of[i]);
  }
  if (!t.unused.empty() && (!allow_unused || t.params.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("BuildTrainingStep: the loss does not depend on ", Quoted(t.unused),
                     allow_unused ? "" : " (allow_unused skips them)"));
  }
  return t;
}

}  // namespace

std::vector<ParamGroup> DecayMatrices(const std::vector<Value>& params, double weight_decay) {
  ParamGroup matrices{.weight_decay = weight_decay}, others{.weight_decay = 0.0};
  for (const Value& p : params) (p.rank() >= 2 ? matrices : others).params.push_back(p);
  return {matrices, others};
}

absl::StatusOr<ClippedGrads> ClipGradNorm(const std::vector<Value>& grads, double max_norm) {
  if (!(max_norm > 0 && max_norm < std::numeric_limits<double>::infinity())) {
    return Bad("ClipGradNorm: max_norm", "finite and > 0", max_norm);
  }
  bool any = false;
  for (const Value& g : grads) {
    if (g.is_null()) continue;
    if (!g.ok()) return g.status();
    any = true;
  }
  if (!any) return absl::InvalidArgumentError("ClipGradNorm: no gradients");
  ClippedGrads c;
  c.norm = GlobalNorm(grads);
  c.scale = ClipScale(c.norm, max_norm);
  for (const Value& g : grads) {
    c.grads.push_back(g.is_null() ? Value() : Mul(g, Cast(c.scale, g.dtype())));
  }
  return c;
}

namespace {

// CheckScopeFree refuses a scope that holds a training step's inputs: the
// optimizer's check, made before any gradient is built, so that a refused
// step adds nothing.
absl::Status CheckScopeFree(Graph& g, const std::string& scope) {
  if (const std::string lr = absl::StrCat(scope, "/lr"); !g.Find(lr).is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the graph already has a training step in scope '", scope, "' (its input '", lr,
        "'); give a second one its own OptimizerOptions::scope"));
  }
  return absl::OkStatus();
}

// FirstParam is the first parameter of `groups` (CheckGroups has found one).
Value FirstParam(const std::vector<ParamGroup>& groups) {
  for (const ParamGroup& group : groups) {
    if (!group.params.empty()) return group.params.front();
  }
  return Value();
}

// UsedGroups is `groups` with only the parameters `trained` updates, each
// group kept at its index.
std::vector<ParamGroup> UsedGroups(const std::vector<ParamGroup>& groups,
                                   const Trained& trained) {
  std::vector<ParamGroup> used = groups;
  for (ParamGroup& group : used) group.params.clear();
  for (size_t i = 0; i < trained.params.size(); ++i) {
    used[trained.group[i]].params.push_back(trained.params[i]);
  }
  return used;
}

// StepOn builds the step of `loss` (already rewritten for the precision)
// with the gradients of `trained` on `opt`'s inputs and state.
absl::StatusOr<TrainingStep> StepOn(Value loss, Trained trained, const Optimizer& opt) {
  const OptimizerOptions& o = opt.options;
  TrainingStep ts;
  ts.loss = loss;
  Graph& g = *loss.graph();
  if (o.data_parallel.communicator != nullptr) {
    DAGRAD_ASSIGN_OR_RETURN(trained.grads,
                            ReduceGradients(trained.grads, o.data_parallel, &ts.num_buckets));
    Graph::RoleScope role(g, NodeRole::kCommunication);
    Graph::ScopePathGuard in_scope(g, "data_parallel");
    ts.global_loss = AllReduce(Sum(Cast(loss, DType::kFloat64)));
  }
  Graph::RoleScope role(g, NodeRole::kOptimizer);
  Graph::ScopePathGuard in_optimizer(g, o.scope);
  ts.params = trained.params;
  ts.grads = trained.grads;
  ts.unused_params = trained.unused;
  if (!ts.unused_params.empty()) {
    ts.warning = absl::StrCat("BuildTrainingStep: the loss does not depend on ",
                              Quoted(ts.unused_params), "; they get no update");
  }
  ts.lr = opt.lr;
  ts.step = opt.step;
  Value scale, guard;
  if (o.clip_norm > 0 || o.skip_nonfinite) ts.grad_norm = GlobalNorm(ts.grads);
  if (o.skip_nonfinite) {
    guard = SkipGuard(ts.global_loss.is_null() ? loss : ts.global_loss, ts.grad_norm);
  }
  // ClipGradNorm's scale, fused into the updates rather than a pass over
  // every gradient.
  if (o.clip_norm > 0) scale = ClipScale(ts.grad_norm, o.clip_norm);
  const std::vector<ParamGroup>& groups = opt.groups;
  std::vector<Value> group_lr(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    group_lr[i] = groups[i].lr_scale == 1.0 ? ts.lr : Scale(ts.lr, groups[i].lr_scale);
  }
  for (size_t i = 0; i < ts.params.size(); ++i) {
    OptimizerOptions group_options = o;
    group_options.weight_decay = groups[trained.group[i]].weight_decay.value_or(o.weight_decay);
    AddUpdate(ts, i, opt.state.at(ts.params[i].id()), group_options,
              group_lr[trained.group[i]], scale, guard);
  }
  for (const Value& u : ts.updates) {
    if (!u.ok()) return u.status();
  }
  return ts;
}

}  // namespace

absl::StatusOr<Optimizer> MakeOptimizer(const std::vector<Value>& params,
                                        const OptimizerOptions& o) {
  return MakeOptimizer(std::vector<ParamGroup>{{.params = params}}, o);
}

absl::StatusOr<Optimizer> MakeOptimizer(const std::vector<ParamGroup>& groups,
                                        const OptimizerOptions& o) {
  DAGRAD_RETURN_IF_ERROR(ValidateOptimizerOptions(o));
  DAGRAD_RETURN_IF_ERROR(CheckGroups(groups, "MakeOptimizer"));
  Graph& g = *FirstParam(groups).graph();
  if (absl::Status free = CheckScopeFree(g, o.scope); !free.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("MakeOptimizer: ", free.message()));
  }
  Optimizer opt{.options = o, .groups = groups};
  Graph::RoleScope role(g, NodeRole::kOptimizer);
  {
    Graph::ScopePathGuard in_optimizer(g, o.scope);
    opt.lr = g.Input("lr", DType::kFloat64, {});
    opt.step = g.Input("step", DType::kFloat64, {});
  }
  for (const ParamGroup& group : groups) {
    for (const Value& p : group.params) opt.state[p.id()] = MakeState(g, p, o);
  }
  for (const auto& [id, state] : opt.state) {
    for (const Value& v : state) DAGRAD_RETURN_IF_ERROR(v.status());
  }
  DAGRAD_RETURN_IF_ERROR(opt.lr.status());
  DAGRAD_RETURN_IF_ERROR(opt.step.status());
  return opt;
}

absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const std::vector<Value>& params,
                                               const OptimizerOptions& o) {
  return BuildTrainingStep(loss, std::vector<ParamGroup>{{.params = params}}, o);
}

absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const std::vector<ParamGroup>& groups,
                                               const OptimizerOptions& o) {
  if (!loss.ok()) return loss.status();
  DAGRAD_RETURN_IF_ERROR(ValidateOptimizerOptions(o));
  DAGRAD_RETURN_IF_ERROR(CheckGroups(groups, "BuildTrainingStep"));
  if (absl::Status free = CheckScopeFree(*loss.graph(), o.scope); !free.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("BuildTrainingStep: ", free.message()));
  }
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> rewritten, ApplyPrecision({loss}, o.precision));
  DAGRAD_ASSIGN_OR_RETURN(Trained trained, SplitUnused(rewritten[0], groups, o.allow_unused));
  // State for the parameters the loss reaches only, as torch makes it at
  // their first step.
  DAGRAD_ASSIGN_OR_RETURN(Optimizer opt, MakeOptimizer(UsedGroups(groups, trained), o));
  return StepOn(rewritten[0], std::move(trained), opt);
}

absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const Optimizer& opt) {
  if (!loss.ok()) return loss.status();
  if (opt.lr.is_null() || opt.lr.graph() != loss.graph()) {
    return absl::InvalidArgumentError(
        "BuildTrainingStep: the optimizer is not one MakeOptimizer made in the loss's graph");
  }
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> rewritten,
                          ApplyPrecision({loss}, opt.options.precision));
  DAGRAD_ASSIGN_OR_RETURN(Trained trained,
                          SplitUnused(rewritten[0], opt.groups, opt.options.allow_unused));
  return StepOn(rewritten[0], std::move(trained), opt);
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
      return Bad(absl::StrCat("the learning-rate schedule's value at step ", step),
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
