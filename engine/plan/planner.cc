#include "engine/plan/planner.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/checked_math.h"
#include "engine/device/aligned_buffer.h"
#include "engine/op.h"
#include "engine/plan/internal/planner_internal.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace planner_internal {

int64_t NodeBytes(const Node& n) {
  return CheckedBytes(n.shape.num_elements(), SizeOf(n.dtype)).value_or(kMaxTensorBytes);
}
int64_t ArenaBytes(const Node& n) {
  return CheckedAlignUp(NodeBytes(n), kAlignment).value_or(kMaxTensorBytes);
}

absl::Status AddBytes(int64_t& sum, int64_t bytes, const Node& node, const char* what) {
  std::optional<int64_t> total = CheckedAdd(sum, bytes);
  if (!total.has_value()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " overflow int64 bytes at '", node.path(), "' (", node.TypeString(), ")"));
  }
  sum = *total;
  return absl::OkStatus();
}

bool WritesVariable(const Node& node) {
  return node.kind == NodeKind::kOp && node.op->mutates != 0;
}

}  // namespace planner_internal

namespace {

using planner_internal::AddBytes;
using planner_internal::NodeBytes;
using planner_internal::WritesVariable;

absl::Status CheckRoots(const Graph& graph, absl::Span<const Value> values,
                        const char* what) {
  for (const Value& v : values) {
    if (v.is_null()) {
      return absl::InvalidArgumentError(absl::StrCat("null ", what));
    }
    if (!v.ok()) return v.status();
    if (v.graph() != &graph) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", v.path(), "' belongs to another graph"));
    }
  }
  return absl::OkStatus();
}

// Writes says whether `node` writes variable `var` (a written input is the
// variable itself, never a view: Graph::AddOp checks).
bool Writes(const Node& node, NodeId var) {
  if (!WritesVariable(node)) return false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.op->Writes(i) && node.inputs[i] == var) return true;
  }
  return false;
}

// ReadsOtherwise says whether `node` reads variable `var` other than
// through the inputs it writes: directly or through a view (var_of maps each
// node to the variable its bytes are, kNoNode for none).
bool ReadsOtherwise(const Node& node, NodeId var, const std::vector<NodeId>& var_of) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const NodeId in = node.inputs[i];
    if (in != kNoNode && !node.op->Writes(i) && var_of[in] == var) return true;
  }
  return false;
}

// ReadsAfterAWrite is the refusal of a second update of a variable that
// also reads it: it runs after the first one's write, so it would read the
// written value where every other read of the run sees the value before
// the run's updates (and a failure of its kernel would come after a write).
absl::Status ReadsAfterAWrite(const Node& first, const Node& second, const Node& var) {
  return absl::FailedPreconditionError(absl::StrCat(
      "the update '", second.path(), "' reads variable '", var.path(),
      "' (directly or through a view) and writes it after '", first.path(),
      "' does, so it would read that write, not the value before the run's updates: read the "
      "variable through an op that copies (Scale(x, 1.0), say), or update it once"));
}

// ReadyKey orders ready nodes: writers of variables last, early ops
// (OpDef::early) first, then by id.
using ReadyKey = std::tuple<bool, bool, NodeId>;
ReadyKey KeyOf(const Node& node) {
  const bool early = node.kind == NodeKind::kOp && node.op->early;
  return {WritesVariable(node), !early, node.id};
}

// NoOrderError explains the needed nodes Order could not place (those whose
// `indegree` stayed above 0). A graph has no cycle: what remains are updates
// that each read (directly or through a view) a variable another writes, a
// swap, which needs a copy.
absl::Status NoOrderError(const Graph& graph, const std::vector<bool>& needed,
                          const std::vector<int>& indegree) {
  std::vector<std::string> stuck;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (needed[id] && indegree[id] > 0 && WritesVariable(graph.node(id))) {
      stuck.push_back(absl::StrCat("'", graph.node(id).path(), "'"));
    }
  }
  if (stuck.empty()) return absl::InternalError("no order for the plan: a cycle");
  return absl::FailedPreconditionError(absl::StrCat(
      "the updates ", absl::StrJoin(stuck, ", "), " each read (directly or through a view: "
      "Detach, Reshape, a contiguous Slice) a variable another of them writes, so none can "
      "run before the others' writes: read one of those variables through an op that copies "
      "(Scale(x, 1.0), say)"));
}

// Order returns the needed nodes in a deterministic topological order where
// each op that writes a variable follows every other reader of it (readers
// through views included), and every op that writes a variable follows
// every other node: the updates come last, so that a kernel that fails (an
// index out of range) fails before any variable is written, whatever the
// ids. Among the ready nodes, early ops go first, then the lowest id.
absl::StatusOr<std::vector<NodeId>> Order(const Graph& graph, const std::vector<bool>& needed) {
  const int n = graph.num_nodes();
  std::vector<std::vector<NodeId>> succ(n);
  std::vector<int> indegree(n, 0);
  auto add_edge = [&](NodeId from, NodeId to) {
    succ[from].push_back(to);
    ++indegree[to];
  };
  // The variable each node's bytes belong to, following views.
  std::vector<NodeId> var_of(n, kNoNode);
  std::vector<std::vector<NodeId>> readers(n);
  for (NodeId id = 0; id < n; ++id) {
    if (!needed[id]) continue;
    const Node& node = graph.node(id);
    if (node.is_variable()) var_of[id] = id;
    if (node.kind == NodeKind::kOp && node.op->view != nullptr && node.inputs[0] != kNoNode) {
      var_of[id] = var_of[node.inputs[0]];
    }
    for (NodeId in : node.inputs) {
      if (in == kNoNode) continue;
      add_edge(in, id);
      if (var_of[in] != kNoNode) readers[var_of[in]].push_back(id);
    }
  }
  for (NodeId id = 0; id < n; ++id) {
    if (!needed[id] || graph.node(id).kind != NodeKind::kOp) continue;
    const Node& node = graph.node(id);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!node.op->Writes(i)) continue;
      const NodeId var = node.inputs[i];
      for (NodeId reader : readers[var]) {
        const bool later_writer = reader > id && Writes(graph.node(reader), var);
        if (later_writer && ReadsOtherwise(graph.node(reader), var, var_of)) {
          return ReadsAfterAWrite(node, graph.node(reader), graph.node(var));
        }
        // Two ops that write one variable run in id order, one after the other.
        if (reader != id && !later_writer) add_edge(reader, id);
      }
    }
  }
  // Keys (writes a variable, not early, id): writers last, early ops first.
  std::priority_queue<ReadyKey, std::vector<ReadyKey>, std::greater<>> ready;
  auto push = [&](NodeId id) { ready.push(KeyOf(graph.node(id))); };
  for (NodeId id = 0; id < n; ++id) {
    if (needed[id] && indegree[id] == 0) push(id);
  }
  std::vector<NodeId> order;
  while (!ready.empty()) {
    const NodeId id = std::get<2>(ready.top());
    ready.pop();
    order.push_back(id);
    for (NodeId s : succ[id]) {
      if (--indegree[s] == 0) push(s);
    }
  }
  if (order.size() < static_cast<size_t>(std::count(needed.begin(), needed.end(), true))) {
    return NoOrderError(graph, needed, indegree);
  }
  return order;
}

// CheckNothingFollowsUpdates returns FailedPrecondition when a needed op that
// writes no variable depends on the output of one that does: it would run
// after the updates, where its failure could not leave the variables
// unchanged, and a read of the variable there would see the update. Direct
// inputs suffice: every needed node on a longer path is checked too.
absl::Status CheckNothingFollowsUpdates(const Graph& graph, const std::vector<bool>& needed) {
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    if (!needed[id] || node.kind != NodeKind::kOp || WritesVariable(node)) continue;
    for (NodeId in : node.inputs) {
      if (in == kNoNode || !WritesVariable(graph.node(in))) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          node.op->name, " '", node.path(), "' takes the output of ", graph.node(in).op->name,
          " '", graph.node(in).path(),
          "', which writes a variable: an update's output can only be a target or a fetch"));
    }
  }
  return absl::OkStatus();
}

bool Foldable(const Node& node, const std::vector<bool>& is_const) {
  if (node.kind != NodeKind::kOp || node.op->random || node.op->collective || node.op->mutates != 0 ||
      node.op->cpu == nullptr) {
    return false;
  }
  for (NodeId in : node.inputs) {
    if (in != kNoNode && !is_const[in]) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<Tensor> EvaluateOnHost(const Node& node,
                                      absl::Span<const Tensor* const> inputs) {
  auto out = Tensor::Zeros(node.dtype, node.shape);
  if (!out.ok()) return out.status();
  std::vector<TensorRef> refs;
  for (const Tensor* t : inputs) {
    if (t == nullptr) {
      refs.push_back(TensorRef{});
    } else {
      refs.push_back(TensorRef{const_cast<void*>(t->raw_data()), t->dtype(), &t->shape()});
    }
  }
  RunContext run;
  KernelContext ctx{node, refs, TensorRef{out->raw_data(), out->dtype(), &out->shape()}, run};
  absl::Status st = node.op->cpu(ctx);
  if (!st.ok()) {
    return absl::Status(st.code(), absl::StrCat(node.op->name, " '", node.path(),
                                                "': ", st.message()));
  }
  return out;
}

namespace {

// Phase 1 and 2: the needed nodes, in order.
absl::StatusOr<std::vector<NodeId>> PruneAndOrder(const Graph& graph,
                                                  absl::Span<const Value> fetches,
                                                  absl::Span<const Value> targets) {
  DAGRAD_RETURN_IF_ERROR(CheckRoots(graph, fetches, "fetch"));
  DAGRAD_RETURN_IF_ERROR(CheckRoots(graph, targets, "target"));
  if (fetches.empty() && targets.empty()) {
    return absl::InvalidArgumentError("nothing to compute: no fetches and no targets");
  }
  std::vector<Value> roots(fetches.begin(), fetches.end());
  roots.insert(roots.end(), targets.begin(), targets.end());
  const std::vector<bool> needed = DependedOn(graph, roots);
  DAGRAD_RETURN_IF_ERROR(CheckNothingFollowsUpdates(graph, needed));
  return Order(graph, needed);
}

// Phase 3: mark the constants and the op nodes to fold (plan.folded), and
// add up the folded bytes, all kept until folding ends, against
// max_folded_bytes, before anything is evaluated.
absl::StatusOr<std::vector<bool>> MarkFolded(const Graph& graph, const std::vector<NodeId>& order,
                                             const std::vector<bool>& fetched,
                                             const PlanOptions& options, ExecutionPlan& plan) {
  std::vector<bool> is_const(graph.num_nodes(), false);
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.kind == NodeKind::kConstant) {
      is_const[id] = true;
    } else if (options.fold_constants && Foldable(node, is_const)) {
      const int64_t bytes = NodeBytes(node);
      DAGRAD_RETURN_IF_ERROR(AddBytes(plan.folded_bytes, bytes, node, "folded constants"));
      if (options.max_folded_bytes > 0 && plan.folded_bytes > options.max_folded_bytes) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "memory limit: folding constant ", node.op->name, " '", node.path(), "' (",
            HumanBytes(bytes), ", ", HumanBytes(plan.folded_bytes),
            " folded in all) exceeds the ", HumanBytes(options.max_folded_bytes),
            " the plan may fold (PlanOptions::max_folded_bytes, or what the executor's memory "
            "limit leaves)"));
      }
      plan.folded.push_back(id);
      is_const[id] = true;
      if (!fetched[id]) ++plan.num_folded;
    }
  }
  return is_const;
}

}  // namespace

absl::StatusOr<ExecutionPlan> PlanLayout(const Graph& graph, absl::Span<const Value> fetches,
                                         absl::Span<const Value> targets,
                                         const PlanOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(const std::vector<NodeId> order,
                          PruneAndOrder(graph, fetches, targets));
  ExecutionPlan plan;
  std::vector<bool> fetched(graph.num_nodes(), false);
  for (const Value& v : fetches) {
    plan.fetches.push_back(v.id());
    fetched[v.id()] = true;
  }
  DAGRAD_ASSIGN_OR_RETURN(const std::vector<bool> is_const,
                          MarkFolded(graph, order, fetched, options, plan));
  DAGRAD_RETURN_IF_ERROR(planner_internal::Place(graph, order, is_const, options, plan));
  return plan;
}

absl::Status EvaluateFolded(const Graph& graph, ExecutionPlan& plan) {
  absl::flat_hash_map<NodeId, Tensor> values;
  auto value_of = [&](NodeId id) -> const Tensor* {
    if (id == kNoNode) return nullptr;
    const Node& node = graph.node(id);
    return node.kind == NodeKind::kConstant ? &node.value : &values[id];
  };
  for (NodeId id : plan.folded) {
    const Node& node = graph.node(id);
    std::vector<const Tensor*> ins;
    for (NodeId in : node.inputs) ins.push_back(value_of(in));
    DAGRAD_ASSIGN_OR_RETURN(values[id], EvaluateOnHost(node, ins));
  }
  for (auto& [id, tensor] : plan.constants) {
    if (graph.node(id).kind != NodeKind::kConstant) tensor = values[id];
  }
  return absl::OkStatus();
}

absl::StatusOr<ExecutionPlan> PlanGraph(const Graph& graph, absl::Span<const Value> fetches,
                                        absl::Span<const Value> targets,
                                        const PlanOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(ExecutionPlan plan, PlanLayout(graph, fetches, targets, options));
  DAGRAD_RETURN_IF_ERROR(EvaluateFolded(graph, plan));
  return plan;
}

std::string ExecutionPlan::Summary() const {
  return absl::StrFormat(
      "%d steps, arena %.3f MiB (intermediates %.3f MiB without reuse, %.1f%%), "
      "%d in place, %d views, %d folded",
      static_cast<int>(steps.size()), arena_bytes / 1048576.0,
      intermediate_bytes / 1048576.0,
      intermediate_bytes ? 100.0 * arena_bytes / intermediate_bytes : 0.0,
      num_in_place, num_views, num_folded);
}

}  // namespace dagrad
