// engine/graph.h
//
// Graph: the dataflow IR. A graph owns nodes; each node is an input (a
// placeholder fed at run time), a variable (a parameter or optimizer state,
// with an initializer, living in the executor between runs), a constant, or
// an op application. Every node has a dtype, a validated shape, a name and
// the name-scope path it was built under ("encoder/layer0/self_attn").
//
// Builders return Value, a light handle (graph pointer + node id). A builder
// that fails — wrong shapes, wrong dtype, bad attribute — never aborts: it
// returns an error Value holding an absl::Status whose message names the op,
// the scope path and the shapes, and records it in the graph. Ops given an
// error Value return it unchanged, so a model can be built straight through
// and checked once (the style of XLA's XlaBuilder):
//
//   Graph g;
//   Value x = g.Input("x", DType::kFloat32, {B, T, E});
//   Value w = g.Parameter("w", {E, E}, Initializer::XavierUniform());
//   Value y = MatMul(x, w);
//   if (!y.ok()) return y.status();   // or g.status(): the first error
//
// Names. A node's name is one non-empty word without '/'; its path is
// "scope/name" under the Scopes open when it was built. Inputs, parameters
// and variables keep the name given, and one whose name is empty, holds a
// '/' or repeats a path already in the graph is an InvalidArgument error
// Value. Nested names come from scopes, which checkpoints show with '.'
// (engine/io/checkpoint.h):
//
//   Graph::Scope scope(g, "tok_emb");
//   Value table = g.Parameter("weight", {V, E}, Initializer::Normal(0, 1));
//   // table.path() == "tok_emb/weight", checkpoint name "tok_emb.weight"
//
// Ops and constants are named after their op (or the name given, with the
// same rule) and made unique within their scope by a suffix: "add", "add_1".
//
// Node ids are assigned in creation order, so ids are a topological order.

#ifndef DAGRAD_ENGINE_GRAPH_H_
#define DAGRAD_ENGINE_GRAPH_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/attrs.h"
#include "engine/dtype.h"
#include "engine/initializer.h"
#include "engine/shape.h"
#include "engine/tensor.h"

namespace dagrad {

class Graph;
struct Node;
struct OpDef;

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

// Value is a handle to a node's output, an error, or nothing (default
// constructed: "null", used for absent optional inputs and gradients).
class Value {
 public:
  Value() = default;

  // ok is true when this refers to a node.
  bool ok() const { return graph_ != nullptr && id_ >= 0; }
  // is_null is true for a default-constructed Value.
  bool is_null() const { return graph_ == nullptr; }
  // status is OK for a node, the recorded error for an error Value, and
  // FailedPrecondition for a null Value.
  absl::Status status() const;

  Graph* graph() const { return graph_; }
  NodeId id() const { return id_; }
  const Node& node() const;

  // Type accessors return float32 / scalar defaults for non-node Values so
  // that model code can run on and report the first error at the end.
  DType dtype() const;
  const Shape& shape() const;
  int rank() const { return shape().rank(); }
  // dim accepts negative axes; out of range gives 0.
  int64_t dim(int axis) const;
  // path returns "scope/name", or "" for non-node Values.
  std::string path() const;

  friend bool operator==(const Value& a, const Value& b) {
    return a.graph_ == b.graph_ && a.id_ == b.id_ && a.error_ == b.error_;
  }
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const Value& v) {
    return H::combine(std::move(h), v.graph_, v.id_, v.error_);
  }

 private:
  friend class Graph;
  Value(Graph* g, NodeId id, int32_t error) : graph_(g), id_(id), error_(error) {}

  Graph* graph_ = nullptr;
  NodeId id_ = kNoNode;
  int32_t error_ = -1;  // index into the graph's errors when id_ < 0
};

enum class NodeKind { kInput, kVariable, kConstant, kOp };

// What a node is for; DOT styles by it. Autodiff builds kGradient nodes,
// optimizers kOptimizer nodes, data parallelism kCommunication nodes (the
// gradient all-reduce).
enum class NodeRole { kForward, kGradient, kOptimizer, kCommunication };

struct Node {
  NodeId id = kNoNode;
  NodeKind kind = NodeKind::kOp;
  NodeRole role = NodeRole::kForward;
  const OpDef* op = nullptr;    // set for kOp
  std::vector<NodeId> inputs;   // kNoNode marks an absent optional input
  Attrs attrs;
  DType dtype = DType::kFloat32;
  Shape shape;
  std::string name;   // unique within its scope
  std::string scope;  // "" or "a/b/c"
  // gradient_of: for a gradient node (NodeRole::kGradient), the forward
  // node whose gradient rule (or gradient sum) autodiff was running when it
  // built this one; kNoNode for every other node.
  NodeId gradient_of = kNoNode;
  bool trainable = false;   // variables: a parameter (vs optimizer state)
  Initializer initializer;  // variables
  Tensor value;             // constants

  // stream_origin: the first node built under the StreamOrigin this node
  // was built under, or kNoNode.
  NodeId stream_origin = kNoNode;

  // path returns "scope/name".
  std::string path() const { return scope.empty() ? name : scope + "/" + name; }
  // RandomStream is the counter stream word of a random op (dropout,
  // attention's dropout: ops/dropout.h): its "stream" attribute when set (a
  // backward op carries its forward node's), else its id, or, built under a
  // StreamOrigin, 2^31 + its offset from the origin.
  uint32_t RandomStream() const {
    const int64_t own = stream_origin == kNoNode ? id : (int64_t{1} << 31) + (id - stream_origin);
    return static_cast<uint32_t>(attrs.GetInt("stream", own));
  }
  // TypeString returns the dtype and shape for a message, as Tensor's does:
  // "float32 (2, 3)".
  std::string TypeString() const;
  bool is_variable() const { return kind == NodeKind::kVariable; }
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Input declares a placeholder fed at run time. Errors: invalid shape,
  // duplicate path.
  Value Input(absl::string_view name, DType dtype, const Shape& shape);

  // Parameter declares a trainable float variable (any float dtype; the
  // optimizers update float32 and float64 ones, and a bfloat16 or float16
  // parameter's gradient is float32: GradientDType). Errors: a dtype that
  // is not a float, invalid shape or initializer, duplicate path.
  Value Parameter(absl::string_view name, const Shape& shape,
                  const Initializer& init, DType dtype = DType::kFloat32);

  // Variable declares non-trainable state (optimizer moments, counters).
  Value Variable(absl::string_view name, const Shape& shape,
                 const Initializer& init, DType dtype = DType::kFloat32);

  // Constant embeds a copy of `value` in the graph: changing the caller's
  // tensor afterwards does not change the constant. The name is made unique.
  // An error Value: InvalidArgument for an empty name or one holding '/',
  // ResourceExhausted when the copy cannot be allocated.
  Value Constant(const Tensor& value, absl::string_view name = "constant");

  // AddOp applies `op` to `inputs` (null Values for absent optional inputs)
  // with `attrs`, inferring its type. The name defaults to the op's name and
  // is made unique within the scope. Returns the first error Value among the
  // inputs, or a new error when inference fails.
  Value AddOp(const OpDef& op, absl::Span<const Value> inputs,
              Attrs attrs = Attrs(), absl::string_view name = "");

  // Error records `status` (prefixed with the current scope) and returns an
  // error Value holding it; for builders that validate their own arguments.
  Value Error(const absl::Status& status);

  // Scope is an RAII name scope: nodes built while it lives get its path.
  // Empty parts of the name are ignored (Scope(g, "") changes nothing), so
  // a path never holds "//".
  //   { Graph::Scope s(g, "encoder"); g.Input("x", DType::kFloat32, {2}); }  // "encoder/x"
  class Scope {
   public:
    Scope(Graph& g, absl::string_view name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Graph& g_;
    size_t saved_size_;
  };

  // RoleScope marks nodes built while it lives as gradient or optimizer
  // nodes; when it ends, SetGradientOf's node is kNoNode again.
  class RoleScope {
   public:
    RoleScope(Graph& g, NodeRole role) : g_(g), saved_(g.role_) { g.role_ = role; }
    ~RoleScope() {
      g_.role_ = saved_;
      g_.gradient_of_ = kNoNode;
    }
    RoleScope(const RoleScope&) = delete;
    RoleScope& operator=(const RoleScope&) = delete;

   private:
    Graph& g_;
    NodeRole saved_;
  };

  // SetScopePath replaces the whole current scope path (autodiff uses it to
  // put gradient nodes under "grad/<forward scope>"), without empty parts;
  // returns the old one.
  std::string SetScopePath(std::string path);

  // SetGradientOf records `forward` as Node::gradient_of of the gradient
  // nodes built from now on (autodiff sets it per forward node it walks).
  void SetGradientOf(NodeId forward) { gradient_of_ = forward; }

  // ScopePathGuard sets the whole scope path while it lives and puts the
  // previous one back when it ends, on every return path:
  //
  //   Graph::ScopePathGuard in_grad(g, "grad");
  //   if (!x.ok()) return x.status();   // the old path is restored
  class ScopePathGuard {
   public:
    ScopePathGuard(Graph& g, std::string path)
        : g_(g), saved_(g.SetScopePath(std::move(path))) {}
    ~ScopePathGuard() { g_.SetScopePath(std::move(saved_)); }
    ScopePathGuard(const ScopePathGuard&) = delete;
    ScopePathGuard& operator=(const ScopePathGuard&) = delete;

   private:
    Graph& g_;
    std::string saved_;
  };

  // StreamOrigin: while one lives, the random ops built draw by their
  // offset from the first node built under it (Node::RandomStream), not by
  // their ids, so a subgraph built at several points of a graph's life draws
  // the same numbers wherever it lands: a ShapeFamily's specialisation,
  // built when a run first meets its shape, in whatever order a resumed
  // run meets the shapes. Nested, the outermost counts (an inner one
  // changes nothing), so no two nodes under it share a stream.
  //   { Graph::StreamOrigin origin(g); Value y = Dropout(x, 0.1); }
  class StreamOrigin {
   public:
    explicit StreamOrigin(Graph& g) : g_(g), saved_(g.stream_origin_) {
      if (saved_ == kNoNode) g.stream_origin_ = static_cast<NodeId>(g.nodes_.size());
    }
    ~StreamOrigin() { g_.stream_origin_ = saved_; }
    StreamOrigin(const StreamOrigin&) = delete;
    StreamOrigin& operator=(const StreamOrigin&) = delete;

   private:
    Graph& g_;
    NodeId saved_;
  };

  const std::string& scope() const { return scope_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const Node& node(NodeId id) const { return nodes_[id]; }
  Value value(NodeId id) { return Value(this, id, -1); }

  // status returns the first error recorded while building, or OK.
  absl::Status status() const;
  // ErrorOf returns the error an error Value holds.
  absl::Status ErrorOf(const Value& v) const;

  // Find returns the node with path `path`, or a null Value.
  Value Find(absl::string_view path);
  // Parameters returns the trainable variables in creation order.
  std::vector<Value> Parameters();
  // Variables returns all variables in creation order.
  std::vector<Value> Variables();

 private:
  Value AddNode(Node node);
  Value AddVariable(absl::string_view name, const Shape& shape,
                    const Initializer& init, DType dtype, bool trainable);
  std::string UniqueName(absl::string_view base);

  std::deque<Node> nodes_;  // a deque: references stay valid as it grows
  std::vector<absl::Status> errors_;
  absl::flat_hash_map<std::string, NodeId> by_path_;
  absl::flat_hash_map<std::string, int> name_counts_;
  std::string scope_;
  NodeRole role_ = NodeRole::kForward;
  NodeId gradient_of_ = kNoNode;
  NodeId stream_origin_ = kNoNode;
};

// CheckSameGraph returns InvalidArgument when the values belong to different
// graphs; for functions that take several Values.
absl::Status CheckSameGraph(absl::Span<const Value> values);

// DependedOn returns, per node id of `g`, whether one of `roots` depends on
// that node (a root depends on itself); AncestorsOf lists those ids in id
// order, a topological order. Null roots (kNoNode ids) are skipped.
//
//   Graph g;
//   Value x = g.Input("x", DType::kFloat32, {2});
//   Value y = Exp(x), z = Neg(x);
//   std::vector<NodeId> ids = AncestorsOf(g, {y});   // {x.id(), y.id()}: not z
std::vector<bool> DependedOn(const Graph& g, absl::Span<const Value> roots);
std::vector<bool> DependedOn(const Graph& g, std::vector<NodeId> roots);
std::vector<NodeId> AncestorsOf(const Graph& g, absl::Span<const Value> roots);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_GRAPH_H_
