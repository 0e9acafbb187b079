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
#include "ops/fill.h"
#include "ops/op_util.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "ops/sum_of_squares.h"
#include "ops/write_at.h"

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

// InRange is false for NaN: every comparison with it is.
bool InRange(double v, double lo, double hi_excluded) { return v >= lo && v < hi_excluded; }

}  // namespace

absl::Status ValidateOptimizerOptions(const OptimizerOptions& o) {
  const double inf = std::numeric_limits<double>::infinity();
  if (o.kind == OptimizerKind::kSgd) {
    if (!InRange(o.momentum, 0, 1)) return MustBe("momentum", "in [0, 1)", o.momentum);
    if (o.nesterov && o.momentum == 0) return MustBe("momentum", "> 0 for nesterov", o.momentum);
  } else {
    if (!InRange(o.beta1, 0, 1)) return MustBe("beta1", "in [0, 1)", o.beta1);
    if (!InRange(o.beta2, 0, 1)) return MustBe("beta2", "in [0, 1)", o.beta2);
    if (!(o.eps > 0 && o.eps < inf)) return MustBe("eps", "finite and > 0", o.eps);
  }
  if (!InRange(o.weight_decay, 0, inf)) {
    return MustBe("weight_decay", "finite and >= 0", o.weight_decay);
  }
  if (!InRange(o.clip_norm, 0, inf)) return MustBe("clip_norm", "finite and >= 0", o.clip_norm);
  if (o.scope.empty()) return absl::InvalidArgumentError("scope must not be empty");
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
      return MustBe(where + "weight_decay", "finite and >= 0", *group.weight_decay);
    }
    if (!InRange(group.lr_scale, 0, inf)) {
      return MustBe(where + "lr_scale", "finite and >= 0", group.lr_scale);
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
// With accumulate_gradients, the gradient sum comes last: flat, so that
// WriteAt writes it whole at any rank.
std::vector<Value> MakeState(Graph& g, Value p, const OptimizerOptions& o) {
  Graph::ScopePathGuard in_scope(g, absl::StrCat(o.scope, "/", p.path()));
  std::vector<Value> state;
  if (o.kind == OptimizerKind::kSgd) {
    state = {g.Variable("momentum", p.shape(), Initializer::Zeros(), p.dtype())};
  } else {
    state = {g.Variable("exp_avg", p.shape(), Initializer::Zeros(), p.dtype()),
             g.Variable("exp_avg_sq", p.shape(), Initializer::Zeros(), p.dtype())};
  }
  if (o.accumulate_gradients) {
    state.push_back(g.Variable("grad_sum", Shape({p.shape().num_elements()}),
                               Initializer::Zeros(), p.dtype()));
  }
  return state;
}

// SumGradients, for accumulate_gradients: ts.accumulate adds each gradient
// to its parameter's sum, `grads` become the sums with this micro-batch's
// gradients, and `clears` zero the sums (targets of the update).
void SumGradients(Graph& g, const Optimizer& opt, const std::vector<Value>& params,
                  std::vector<Value>& grads, TrainingStep& ts, std::vector<Value>& clears) {
  const Value at = g.Constant(Tensor::Scalar<int64_t>(0), "start");
  for (size_t i = 0; i < params.size(); ++i) {
    const Value sum = opt.state(params[i]).back();
    const int64_t n = sum.shape()[0];
    ts.accumulate.push_back(WriteAt(sum, Add(sum, Reshape(grads[i], {n})), at, 0));
    clears.push_back(WriteAt(sum, Fill(g, sum.shape(), 0, sum.dtype()), at, 0));
    const Dims& dims = params[i].shape().dims();
    grads[i] = Add(grads[i], Reshape(sum, std::vector<int64_t>(dims.begin(), dims.end())));
  }
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

constexpr absl::string_view kSkipHint = " (allow_unused skips them)";

// SplitUnused separates the parameters the loss reaches from those it does
// not, which are an error unless allow_unused; `why` ends the error.
absl::StatusOr<Trained> SplitUnused(Value loss, const std::vector<ParamGroup>& groups,
                                    bool allow_unused, absl::string_view why = kSkipHint) {
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
                     allow_unused ? "" : why));
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
    return MustBe("ClipGradNorm: max_norm", "finite and > 0", max_norm);
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

// CheckScopeFree refuses a scope that holds a training step's inputs.
absl::Status CheckScopeFree(Graph& g, const std::string& scope) {
  if (const std::string lr = absl::StrCat(scope, "/lr"); !g.Find(lr).is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the graph already has a training step in scope '", scope, "' (its input '", lr,
        "'); give a second one its own OptimizerOptions::scope (to train one model at "
        "several shapes, make its optimizer once, with MakeOptimizer before the ShapeFamily, "
        "and build each shape's step with BuildTrainingStep(loss, optimizer))"));
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

// CheckOptimizer makes an optimizer's checks (the options, the groups, a
// free scope), each message begun by `caller`, and returns the parameters'
// graph.
absl::StatusOr<Graph*> CheckOptimizer(const std::vector<ParamGroup>& groups,
                                      const OptimizerOptions& o, absl::string_view caller) {
  DAGRAD_RETURN_IF_ERROR(ValidateOptimizerOptions(o));
  DAGRAD_RETURN_IF_ERROR(CheckGroups(groups, caller));
  Graph* g = FirstParam(groups).graph();
  if (absl::Status free = CheckScopeFree(*g, o.scope); !free.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(caller, ": ", free.message()));
  }
  return g;
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
  const OptimizerOptions& o = opt.options();
  TrainingStep ts;
  ts.loss = loss;
  Graph& g = *loss.graph();
  std::vector<Value> clears;
  if (o.accumulate_gradients) {
    Graph::RoleScope role(g, NodeRole::kOptimizer);
    Graph::ScopePathGuard in_scope(g, absl::StrCat(o.scope, "/accumulate"));
    SumGradients(g, opt, trained.params, trained.grads, ts, clears);
  }
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
  ts.lr = opt.lr();
  ts.step = opt.step();
  Value scale, guard;
  if (o.clip_norm > 0 || o.skip_nonfinite) ts.grad_norm = GlobalNorm(ts.grads);
  if (o.skip_nonfinite) {
    guard = SkipGuard(ts.global_loss.is_null() ? loss : ts.global_loss, ts.grad_norm);
  }
  // ClipGradNorm's scale, fused into the updates rather than a pass over
  // every gradient.
  if (o.clip_norm > 0) scale = ClipScale(ts.grad_norm, o.clip_norm);
  const std::vector<ParamGroup>& groups = opt.groups();
  std::vector<Value> group_lr(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    group_lr[i] = groups[i].lr_scale == 1.0 ? ts.lr : Scale(ts.lr, groups[i].lr_scale);
  }
  for (size_t i = 0; i < ts.params.size(); ++i) {
    OptimizerOptions group_options = o;
    group_options.weight_decay = groups[trained.group[i]].weight_decay.value_or(o.weight_decay);
    AddUpdate(ts, i, opt.state(ts.params[i]), group_options,
              group_lr[trained.group[i]], scale, guard);
  }
  ts.updates.insert(ts.updates.end(), clears.begin(), clears.end());
  for (const std::vector<Value>* targets : {&ts.updates, &ts.accumulate}) {
    for (const Value& u : *targets) DAGRAD_RETURN_IF_ERROR(u.status());
  }
  return ts;
}

}  // namespace

absl::StatusOr<Optimizer> MakeOptimizer(const std::vector<ParamGroup>& groups,
                                        const OptimizerOptions& o) {
  DAGRAD_ASSIGN_OR_RETURN(Graph* const graph, CheckOptimizer(groups, o, "MakeOptimizer"));
  Graph& g = *graph;
  Optimizer opt;
  opt.options_ = o;
  opt.groups_ = groups;
  Graph::RoleScope role(g, NodeRole::kOptimizer);
  {
    Graph::ScopePathGuard in_optimizer(g, o.scope);
    opt.lr_ = g.Input("lr", DType::kFloat64, {});
    opt.step_ = g.Input("step", DType::kFloat64, {});
  }
  for (const ParamGroup& group : groups) {
    for (const Value& p : group.params) opt.state_[p.id()] = MakeState(g, p, o);
  }
  for (const auto& [id, state] : opt.state_) {
    for (const Value& v : state) DAGRAD_RETURN_IF_ERROR(v.status());
  }
  DAGRAD_RETURN_IF_ERROR(opt.lr_.status());
  DAGRAD_RETURN_IF_ERROR(opt.step_.status());
  return opt;
}

absl::StatusOr<Optimizer> MakeOptimizer(const std::vector<Value>& params,
                                        const OptimizerOptions& o) {
  return MakeOptimizer(std::vector<ParamGroup>{{.params = params}}, o);
}

const std::vector<Value>& Optimizer::state(Value param) const {
  static const std::vector<Value>* const none = new std::vector<Value>();
  auto it = param.graph() == lr_.graph() ? state_.find(param.id()) : state_.end();
  return it == state_.end() ? *none : it->second;
}

absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const std::vector<Value>& params,
                                               const OptimizerOptions& o) {
  return BuildTrainingStep(loss, std::vector<ParamGroup>{{.params = params}}, o);
}

absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const std::vector<ParamGroup>& groups,
                                               const OptimizerOptions& o) {
  if (!loss.ok()) return loss.status();
  // Before any gradient is built, so that a refused step adds nothing.
  DAGRAD_RETURN_IF_ERROR(CheckOptimizer(groups, o, "BuildTrainingStep").status());
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> rewritten, ApplyPrecision({loss}, o.precision));
  DAGRAD_ASSIGN_OR_RETURN(Trained trained, SplitUnused(rewritten[0], groups, o.allow_unused));
  // State for the parameters the loss reaches only, as torch makes it at
  // their first step.
  DAGRAD_ASSIGN_OR_RETURN(Optimizer opt, MakeOptimizer(UsedGroups(groups, trained), o));
  return StepOn(rewritten[0], std::move(trained), opt);
}

namespace {

// WhyEveryStepReachesAll says why a step on `o` that leaves a parameter out
// is refused, or is empty when allow_unused may skip it (SGD, as torch
// skips a parameter whose .grad is None).
std::string WhyEveryStepReachesAll(const OptimizerOptions& o) {
  const std::string make = "; make the optimizer of the parameters every step reaches";
  if (o.accumulate_gradients) {
    return absl::StrCat(": with accumulate_gradients a step updates the parameters its loss "
                        "reaches, from their sums, so a parameter this loss leaves out would "
                        "keep other micro-batches' gradients in its sum", make);
  }
  if (o.kind == OptimizerKind::kSgd) return "";
  return absl::StrCat(": ", OptimizerName(o.kind), "'s bias correction counts the fed step, "
                      "one count for every parameter (torch counts each one's own), so a "
                      "parameter some steps leave out would be corrected for steps it never "
                      "took", make);
}

}  // namespace

absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const Optimizer& opt) {
  if (!loss.ok()) return loss.status();
  if (opt.lr().is_null() || opt.lr().graph() != loss.graph()) {
    return absl::InvalidArgumentError(
        "BuildTrainingStep: the optimizer is not one MakeOptimizer made in the loss's graph");
  }
  const OptimizerOptions& o = opt.options();
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> rewritten, ApplyPrecision({loss}, o.precision));
  const std::string why = WhyEveryStepReachesAll(o);
  const bool skip_unused = o.allow_unused && why.empty();
  DAGRAD_ASSIGN_OR_RETURN(Trained trained, SplitUnused(rewritten[0], opt.groups(), skip_unused,
                                                       why.empty() ? kSkipHint : why));
  return StepOn(rewritten[0], std::move(trained), opt);
}

}  // namespace dagrad
