#include "ops/autodiff/precision.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/registry.h"

namespace dagrad {

absl::StatusOr<Precision> ParsePrecision(const std::string& name) {
  if (name == "fp32") return Precision::kFloat32;
  if (name == "tf32") return Precision::kTF32;
  if (name == "bf16") return Precision::kBFloat16;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision '", name, "' (fp32, tf32, bf16)"));
}

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFloat32: return "fp32";
    case Precision::kTF32: return "tf32";
    case Precision::kBFloat16: return "bf16";
  }
  return "?";
}

namespace {

// The products that take bfloat16 operands and give float32 (ops/matmul.h).
// The fused attention op takes no bfloat16 (its OpDef's reduced_floats), so
// it stays float32.
bool IsProduct(const Node& node) {
  return node.op->name == "matmul" || node.op->name == "linear";
}

// BFloat16Rewriter rebuilds the ancestors of some values, visited in id
// order, with every float32 product reading bfloat16 casts of its operands.
class BFloat16Rewriter {
 public:
  explicit BFloat16Rewriter(Graph& g) : g_(g), cast_(FindOp("cast")) {}

  // Visit records what node `id` becomes; every input of it must have been
  // visited already.
  absl::Status Visit(NodeId id) {
    DAGRAD_ASSIGN_OR_RETURN(mapped_[id], Rewritten(g_.node(id)));
    return absl::OkStatus();
  }

  // Of returns what `v`, visited, became.
  Value Of(const Value& v) { return g_.value(mapped_.at(v.id())); }

 private:
  absl::StatusOr<NodeId> Rewritten(const Node& node) {
    if (node.kind != NodeKind::kOp) return node.id;
    std::vector<Value> inputs;
    bool changed = false;
    for (NodeId in : node.inputs) {
      const NodeId now = in == kNoNode ? kNoNode : mapped_.at(in);
      changed |= now != in;
      inputs.push_back(now == kNoNode ? Value() : g_.value(now));
    }
    const bool product = IsProduct(node) && inputs[0].dtype() == DType::kFloat32 &&
                         inputs[1].dtype() == DType::kFloat32;
    if (!product && !changed) return node.id;
    Graph::ScopePathGuard in_scope(g_, node.scope);
    Graph::RoleScope role(g_, node.role);
    const auto forward = mapped_.find(node.gradient_of);
    g_.SetGradientOf(forward == mapped_.end() ? node.gradient_of : forward->second);
    if (product) {
      for (int i : {0, 1}) {
        DAGRAD_ASSIGN_OR_RETURN(inputs[i], CastOnce(inputs[i]));
      }
    }
    Attrs attrs = node.attrs;
    // A random op (dropout, attention's dropout) keeps the original's stream
    // word, so the rebuilt node draws the masks float32 would.
    if (node.op->random && !attrs.Has("stream")) attrs.Int("stream", node.RandomStream());
    Value out = g_.AddOp(*node.op, inputs, attrs, node.name);
    if (!out.ok()) return out.status();
    return out.id();
  }

  // CastOnce returns the one bfloat16 cast of `v`, under v's own scope and
  // named after it ("weight_bf16"), shared by every product that reads v.
  absl::StatusOr<Value> CastOnce(Value v) {
    auto it = casts_.find(v.id());
    if (it != casts_.end()) return it->second;
    const Node& source = v.node();
    Graph::ScopePathGuard in_scope(g_, source.scope);
    const Attrs to_bf16 = Attrs().Str("dtype", std::string(DTypeName(DType::kBFloat16)));
    Value cast = g_.AddOp(*cast_, {v}, to_bf16, absl::StrCat(source.name, "_bf16"));
    if (!cast.ok()) return cast.status();
    casts_.emplace(v.id(), cast);
    return cast;
  }

  Graph& g_;
  const OpDef* cast_;
  absl::flat_hash_map<NodeId, NodeId> mapped_;
  absl::flat_hash_map<NodeId, Value> casts_;
};

}  // namespace

absl::StatusOr<std::vector<Value>> ApplyPrecision(absl::Span<const Value> values,
                                                  Precision precision) {
  for (const Value& v : values) {
    if (!v.ok()) return v.status();
  }
  DAGRAD_RETURN_IF_ERROR(CheckSameGraph(values));
  std::vector<Value> out(values.begin(), values.end());
  if (precision != Precision::kBFloat16 || values.empty()) return out;
  Graph& g = *values[0].graph();
  BFloat16Rewriter rewriter(g);
  for (NodeId id : AncestorsOf(g, values)) DAGRAD_RETURN_IF_ERROR(rewriter.Visit(id));
  for (Value& v : out) v = rewriter.Of(v);
  return out;
}

}  // namespace dagrad
