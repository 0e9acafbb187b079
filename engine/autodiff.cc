#include "engine/autodiff.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

bool CarriesGradient(const Node& n) { return IsFloating(n.dtype); }

// PathToLoss lists node paths from `id` to the loss along the consumers that
// first sent each node its gradient.
std::string PathToLoss(const Graph& g, NodeId id, const std::vector<NodeId>& toward) {
  std::vector<std::string> path;
  for (NodeId n = id; n != kNoNode; n = toward[n]) path.push_back(g.node(n).path());
  return absl::StrJoin(path, " -> ");
}

// SumGradients adds the gradients that reached one node. When they all come
// from slices (unslice nodes) that tile the node along one axis — the
// pieces of a split, like q, k and v of a packed projection — their sum is
// the concatenation of the pieces, which costs one copy instead of zero-
// filled buffers and additions.
Value SumGradients(const std::vector<Value>& grads) {
  if (grads.size() > 1) {
    struct Piece {
      int64_t start, end;
      Value grad;
    };
    std::vector<Piece> pieces;
    const Node& first = grads[0].node();
    for (const Value& g : grads) {
      const Node& n = g.node();
      if (n.kind != NodeKind::kOp || n.op->name != "unslice" || n.attrs.GetInt("step", 1) != 1 ||
          n.attrs.GetInt("axis") != first.attrs.GetInt("axis") || n.shape != first.shape) {
        pieces.clear();
        break;
      }
      Value piece = g.graph()->value(n.inputs[0]);
      const int axis = static_cast<int>(n.attrs.GetInt("axis") < 0
                                            ? n.attrs.GetInt("axis") + n.shape.rank()
                                            : n.attrs.GetInt("axis"));
      const int64_t len = n.shape[axis];
      int64_t start = n.attrs.GetInt("start");
      if (start < 0) start += len;
      pieces.push_back({start, start + piece.dim(axis), piece});
    }
    std::sort(pieces.begin(), pieces.end(),
              [](const Piece& a, const Piece& b) { return a.start < b.start; });
    bool tiles = !pieces.empty() && pieces.front().start == 0;
    for (size_t i = 1; tiles && i < pieces.size(); ++i) {
      tiles = pieces[i].start == pieces[i - 1].end;
    }
    if (tiles) {
      const int axis = static_cast<int>(first.attrs.GetInt("axis"));
      const int rank = first.shape.rank();
      tiles = pieces.back().end == first.shape[axis < 0 ? axis + rank : axis];
    }
    if (tiles) {
      std::vector<Value> parts;
      for (const Piece& p : pieces) parts.push_back(p.grad);
      return Concat(parts, first.attrs.GetInt("axis"));
    }
  }
  Value sum = grads[0];
  for (size_t i = 1; i < grads.size(); ++i) sum = Add(sum, grads[i]);
  return sum;
}

}  // namespace

absl::StatusOr<std::vector<Value>> Gradients(Value loss, absl::Span<const Value> wrt,
                                             Value seed) {
  if (!loss.ok()) return loss.status();
  Graph& g = *loss.graph();
  for (const Value& v : wrt) {
    if (!v.ok()) return v.status();
    if (v.graph() != &g) {
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
  } else if (!seed.ok() || seed.graph() != &g || seed.dtype() != loss.dtype() ||
             seed.shape() != loss.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gradients: seed must be a ", DTypeName(loss.dtype()), " ",
        loss.shape().ToString(), " value of the loss's graph"));
  }

  // Which nodes depend (differentiably) on some wrt value.
  const int n = loss.id() + 1;
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
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const NodeId in = node.inputs[i];
      if (in != kNoNode && reaches[in] && !(node.op->nondiff_inputs >> i & 1)) {
        reaches[id] = true;
      }
    }
  }
  std::vector<Value> result(wrt.size());
  if (!reaches[loss.id()]) return result;

  Graph::RoleScope role(g, NodeRole::kGradient);
  const std::string saved_scope = g.SetScopePath("grad");
  auto restore_scope = [&] { g.SetScopePath(saved_scope); };

  std::vector<std::vector<Value>> pending(n);
  std::vector<NodeId> toward(n, kNoNode);
  std::vector<Value> total(n);
  pending[loss.id()].push_back(seed.is_null() ? ScalarLike(loss, 1.0) : seed);
  if (seed.is_null() && loss.rank() > 0) {
    pending[loss.id()][0] = Reshape(pending[loss.id()][0], std::vector<int64_t>(loss.rank(), 1));
  }

  for (NodeId id = loss.id(); id >= 0; --id) {
    if (pending[id].empty()) continue;
    const Node& node = g.node(id);
    g.SetScopePath(node.scope.empty() ? "grad" : absl::StrCat("grad/", node.scope));
    Value sum = SumGradients(pending[id]);
    pending[id].clear();
    if (!sum.ok()) {
      restore_scope();
      return sum.status();
    }
    total[id] = sum;
    if (node.kind != NodeKind::kOp || !reaches[id]) continue;
    GradContext ctx{node, g.value(id), {}, sum, {}};
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const NodeId in = node.inputs[i];
      ctx.inputs.push_back(in == kNoNode ? Value() : g.value(in));
      ctx.needs.push_back(in != kNoNode && reaches[in] && !(node.op->nondiff_inputs >> i & 1));
    }
    if (std::find(ctx.needs.begin(), ctx.needs.end(), true) == ctx.needs.end()) continue;
    if (node.op->grad == nullptr) {
      restore_scope();
      return absl::UnimplementedError(absl::StrCat(
          "op '", node.op->name, "' has no gradient rule; node '", node.path(),
          "' lies on the path to the loss: ", PathToLoss(g, id, toward)));
    }
    const std::vector<Value> grads = node.op->grad(ctx);
    for (size_t i = 0; i < node.inputs.size() && i < grads.size(); ++i) {
      if (!ctx.needs[i] || grads[i].is_null()) continue;
      if (!grads[i].ok()) {
        restore_scope();
        return grads[i].status();
      }
      const NodeId in = node.inputs[i];
      Value gi = SumTo(grads[i], g.node(in).shape);
      if (!gi.ok()) {
        restore_scope();
        return gi.status();
      }
      if (toward[in] == kNoNode) toward[in] = id;
      pending[in].push_back(gi);
    }
  }
  restore_scope();
  // A wrt node made after the loss cannot reach it: `total` covers ids up to
  // the loss's only.
  for (size_t i = 0; i < wrt.size(); ++i) {
    if (wrt[i].id() < n) result[i] = total[wrt[i].id()];
  }
  return result;
}

}  // namespace dagrad
