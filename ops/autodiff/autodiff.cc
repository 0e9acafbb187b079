#include "ops/autodiff/autodiff.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

// Every float value carries a gradient, of dtype GradientDType(dtype): a
// 16-bit float's is float32.
bool CarriesGradient(const Node& n) { return IsAnyFloat(n.dtype); }

// PathToLoss lists node paths from `id` to the loss along the consumers that
// first sent each node its gradient.
std::string PathToLoss(const Graph& g, NodeId id, const std::vector<NodeId>& toward) {
  std::vector<std::string> path;
  for (NodeId n = id; n != kNoNode; n = toward[n]) path.push_back(g.node(n).path());
  return absl::StrJoin(path, " -> ");
}

// ConcatTiles returns the concatenation of the pieces when every gradient
// is one piece placed in zeros (OpDef::placement, as unslice does) and the
// pieces tile their common shape along one axis — the pieces of a split,
// like q, k and v of a packed projection; null otherwise. The
// concatenation is their sum, for one copy instead of zero-filled buffers
// and additions.
Value ConcatTiles(const std::vector<Value>& grads) {
  struct Piece {
    Placement at;
    Value grad;
  };
  std::vector<Piece> pieces;
  const Node& first = grads[0].node();
  for (const Value& g : grads) {
    const Node& n = g.node();
    if (n.kind != NodeKind::kOp || n.op->placement == nullptr || n.shape != first.shape) {
      return Value();
    }
    const std::optional<Placement> at = n.op->placement(n);
    if (!at.has_value() || (!pieces.empty() && at->axis != pieces[0].at.axis)) return Value();
    pieces.push_back({*at, g.graph()->value(n.inputs[0])});
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& a, const Piece& b) { return a.at.begin < b.at.begin; });
  int64_t covered = 0;
  for (const Piece& p : pieces) {
    if (p.at.begin != covered) return Value();
    covered = p.at.end;
  }
  const int axis = pieces[0].at.axis;
  if (covered != first.shape[axis]) return Value();
  std::vector<Value> parts;
  for (const Piece& p : pieces) parts.push_back(p.grad);
  return Concat(parts, axis);
}

// SumGradients adds the gradients that reached one node (concatenates them
// when they tile it: ConcatTiles).
Value SumGradients(const std::vector<Value>& grads) {
  if (grads.size() > 1) {
    Value tiled = ConcatTiles(grads);
    if (!tiled.is_null()) return tiled;
  }
  Value sum = grads[0];
  for (size_t i = 1; i < grads.size(); ++i) sum = Add(sum, grads[i]);
  return sum;
}

// ValidateArguments checks Gradients' arguments (see autodiff.h).
absl::Status ValidateArguments(const Value& loss, absl::Span<const Value> wrt,
                               const Value& seed) {
  if (loss.is_null()) return absl::InvalidArgumentError("Gradients: the loss is a null Value");
  if (!loss.ok()) return loss.status();  // an error Value: its building error
  const Graph* g = loss.graph();
  for (size_t i = 0; i < wrt.size(); ++i) {
    const Value& v = wrt[i];
    if (v.is_null()) {
      return absl::InvalidArgumentError(absl::StrCat("Gradients: wrt[", i, "] is a null Value"));
    }
    if (!v.ok()) return v.status();
    if (v.graph() != g) {
      return absl::InvalidArgumentError(
          absl::StrCat("Gradients: '", v.path(), "' belongs to another graph"));
    }
    if (!CarriesGradient(v.node())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Gradients: cannot differentiate with respect to ", DTypeName(v.dtype()), " '",
          v.path(), "'"));
    }
  }
  if (!CarriesGradient(loss.node())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gradients: loss '", loss.path(), "' is ", DTypeName(loss.dtype()), ", not float"));
  }
  if (seed.is_null()) {
    if (loss.shape().num_elements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Gradients: loss '", loss.path(), "' has shape ", loss.shape().ToString(),
          "; reduce it to one element or pass a seed gradient"));
    }
  } else if (!seed.ok() || seed.graph() != g || seed.dtype() != GradientDType(loss.dtype()) ||
             seed.shape() != loss.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gradients: seed must be a ", DTypeName(GradientDType(loss.dtype())), " ",
        loss.shape().ToString(), " value of the loss's graph"));
  }
  return absl::OkStatus();
}

// TakesGradient says whether input `i` of op node `node` receives a
// gradient, given which nodes depend on a wrt value.
bool TakesGradient(const Node& node, size_t i, const std::vector<bool>& reaches) {
  const NodeId in = node.inputs[i];
  return in != kNoNode && reaches[in] && !node.op->NoGradient(i);
}

// Reachability marks the nodes with ids in [0, n) that depend
// (differentiably) on some wrt value.
std::vector<bool> Reachability(const Graph& g, NodeId n, absl::Span<const Value> wrt) {
  std::vector<bool> reaches(n, false);
  for (const Value& v : wrt) {
    if (v.id() < n) reaches[v.id()] = true;
  }
  for (NodeId id = 0; id < n; ++id) {
    const Node& node = g.node(id);
    if (reaches[id] || node.kind != NodeKind::kOp || !node.op->differentiable ||
        !CarriesGradient(node)) {
      continue;
    }
    for (size_t i = 0; i < node.inputs.size() && !reaches[id]; ++i) {
      reaches[id] = TakesGradient(node, i, reaches);
    }
  }
  return reaches;
}

// BackwardWalk is the reverse pass: from the loss down, it sums the
// gradients that reached each node and sends that node's inputs theirs
// through the op's gradient rule.
class BackwardWalk {
 public:
  BackwardWalk(Graph& g, const Value& loss, std::vector<bool> reaches)
      : g_(g),
        reaches_(std::move(reaches)),
        pending_(loss.id() + 1),
        toward_(loss.id() + 1, kNoNode),
        total_(loss.id() + 1) {}

  // Run walks back from `loss`, whose gradient is `seed` (or 1), and
  // returns the total gradient of every node with an id up to the loss's.
  absl::StatusOr<std::vector<Value>> Run(const Value& loss, const Value& seed) {
    Graph::RoleScope role(g_, NodeRole::kGradient);
    Graph::ScopePathGuard in_grad(g_, "grad");
    g_.SetGradientOf(loss.id());
    Value first = seed.is_null() ? ScalarLike(loss, 1.0) : seed;
    if (seed.is_null() && loss.rank() > 0) {
      first = Reshape(first, std::vector<int64_t>(loss.rank(), 1));
    }
    pending_[loss.id()].push_back(first);
    for (NodeId id = loss.id(); id >= 0; --id) {
      if (pending_[id].empty()) continue;
      const Node& node = g_.node(id);
      g_.SetScopePath(node.scope.empty() ? "grad" : absl::StrCat("grad/", node.scope));
      g_.SetGradientOf(id);
      Value sum = SumGradients(pending_[id]);
      pending_[id].clear();
      if (!sum.ok()) return sum.status();
      total_[id] = sum;
      if (node.kind == NodeKind::kOp && reaches_[id]) {
        DAGRAD_RETURN_IF_ERROR(Propagate(node, sum));
      }
    }
    return std::move(total_);
  }

 private:
  // Propagate calls `node`'s gradient rule with `grad`, its output's
  // gradient, and queues what it returns for the node's inputs.
  absl::Status Propagate(const Node& node, const Value& grad) {
    GradContext ctx{node, g_.value(node.id), {}, grad, {}};
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const NodeId in = node.inputs[i];
      ctx.inputs.push_back(in == kNoNode ? Value() : g_.value(in));
      ctx.needs.push_back(TakesGradient(node, i, reaches_));
    }
    if (std::find(ctx.needs.begin(), ctx.needs.end(), true) == ctx.needs.end()) {
      return absl::OkStatus();
    }
    if (node.op->grad == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          "op '", node.op->name, "' has no gradient rule; node '", node.path(),
          "' lies on the path to the loss: ", PathToLoss(g_, node.id, toward_)));
    }
    const std::vector<Value> grads = node.op->grad(ctx);
    for (size_t i = 0; i < node.inputs.size() && i < grads.size(); ++i) {
      if (!ctx.needs[i] || grads[i].is_null()) continue;
      if (!grads[i].ok()) return grads[i].status();
      const NodeId in = node.inputs[i];
      if (grads[i].dtype() != GradientDType(g_.node(in).dtype)) {
        return absl::InternalError(absl::StrCat(
            "op '", node.op->name, "': its gradient rule gave input ", i, " of node '",
            node.path(), "' a ", DTypeName(grads[i].dtype()), " gradient; a ",
            DTypeName(g_.node(in).dtype), " value's is ",
            DTypeName(GradientDType(g_.node(in).dtype))));
      }
      Value gi = SumTo(grads[i], g_.node(in).shape);
      if (!gi.ok()) return gi.status();
      if (toward_[in] == kNoNode) toward_[in] = node.id;
      pending_[in].push_back(gi);
    }
    return absl::OkStatus();
  }

  Graph& g_;
  const std::vector<bool> reaches_;
  std::vector<std::vector<Value>> pending_;  // gradients not yet summed
  std::vector<NodeId> toward_;  // the consumer that first sent each node its gradient
  std::vector<Value> total_;    // each node's summed gradient
};

}  // namespace

absl::StatusOr<std::vector<Value>> Gradients(Value loss, absl::Span<const Value> wrt,
                                             Value seed) {
  DAGRAD_RETURN_IF_ERROR(ValidateArguments(loss, wrt, seed));
  Graph& g = *loss.graph();
  const NodeId n = loss.id() + 1;
  std::vector<bool> reaches = Reachability(g, n, wrt);
  std::vector<Value> result(wrt.size());
  if (!reaches[loss.id()]) return result;
  BackwardWalk walk(g, loss, std::move(reaches));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> total, walk.Run(loss, seed));
  // A wrt node made after the loss cannot reach it: `total` covers ids up to
  // the loss's only.
  for (size_t i = 0; i < wrt.size(); ++i) {
    if (wrt[i].id() < n) result[i] = total[wrt[i].id()];
  }
  return result;
}

}  // namespace dagrad
