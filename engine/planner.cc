#include "engine/planner.h"

#include <algorithm>
#include <optional>
#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/aligned_buffer.h"
#include "engine/op.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

int64_t NodeBytes(const Node& n) {
  return n.shape.num_elements() * static_cast<int64_t>(SizeOf(n.dtype));
}

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

// Needed returns, per node id, whether a fetch or target depends on it.
std::vector<bool> Needed(const Graph& graph, absl::Span<const Value> roots) {
  std::vector<bool> needed(graph.num_nodes(), false);
  std::vector<NodeId> stack;
  for (const Value& v : roots) stack.push_back(v.id());
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (needed[id]) continue;
    needed[id] = true;
    for (NodeId in : graph.node(id).inputs) {
      if (in != kNoNode && !needed[in]) stack.push_back(in);
    }
  }
  return needed;
}

bool WritesVariable(const Node& node) {
  return node.kind == NodeKind::kOp && node.op->mutates != 0;
}

// Writes says whether `node` writes variable `var` (a written input is the
// variable itself, never a view: Graph::AddOp checks).
bool Writes(const Node& node, NodeId var) {
  if (!WritesVariable(node)) return false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if ((node.op->mutates >> i & 1) && node.inputs[i] == var) return true;
  }
  return false;
}

// Order returns the needed nodes in a deterministic topological order where
// each op that writes a variable follows every other reader of it (readers
// through views included), and every op that writes a variable follows
// every other node: the updates come last, so that a kernel that fails (an
// index out of range) fails before any variable is written, whatever the
// ids. Among the ready nodes, the lowest id goes first.
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
      if (!(node.op->mutates >> i & 1)) continue;
      const NodeId var = node.inputs[i];
      for (NodeId reader : readers[var]) {
        // Two ops that write one variable run in id order, one after the other.
        if (reader == id || (reader > id && Writes(graph.node(reader), var))) continue;
        add_edge(reader, id);
      }
    }
  }
  using Key = std::pair<bool, NodeId>;  // (writes a variable, id): writers last
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  auto push = [&](NodeId id) { ready.push({WritesVariable(graph.node(id)), id}); };
  for (NodeId id = 0; id < n; ++id) {
    if (needed[id] && indegree[id] == 0) push(id);
  }
  std::vector<NodeId> order;
  while (!ready.empty()) {
    const NodeId id = ready.top().second;
    ready.pop();
    order.push_back(id);
    for (NodeId s : succ[id]) {
      if (--indegree[s] == 0) push(s);
    }
  }
  for (NodeId id = 0; id < n; ++id) {
    if (needed[id] && indegree[id] > 0) {
      return absl::InternalError(absl::StrCat("no order for the plan: '", graph.node(id).path(),
                                              "' lies on a cycle"));
    }
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

// FindUpdates sets plan.first_update from plan.steps and returns, per node
// id, whether the plan writes that variable.
std::vector<bool> FindUpdates(const Graph& graph, ExecutionPlan& plan) {
  std::vector<bool> written(graph.num_nodes(), false);
  plan.first_update = static_cast<int>(plan.steps.size());
  for (int i = static_cast<int>(plan.steps.size()) - 1; i >= 0; --i) {
    const Node& node = graph.node(plan.steps[i]);
    if (!WritesVariable(node)) continue;
    plan.first_update = i;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (node.op->mutates >> k & 1) written[node.inputs[k]] = true;
    }
  }
  return written;
}

bool Foldable(const Node& node, const std::vector<bool>& is_const) {
  if (node.kind != NodeKind::kOp || node.op->random || node.op->mutates != 0 ||
      node.op->cpu == nullptr) {
    return false;
  }
  for (NodeId in : node.inputs) {
    if (in != kNoNode && !is_const[in]) return false;
  }
  return true;
}

struct Interval {
  int32_t root;
  int64_t bytes;
  int begin, end;  // schedule positions, inclusive
};

// Greedy-by-size placement: biggest buffers first, each at the lowest offset
// that does not overlap a placed buffer alive at the same time.
int64_t PlaceBuffers(std::vector<Interval>& intervals,
                     std::vector<Storage>& storage) {
  std::sort(intervals.begin(), intervals.end(), [](const auto& a, const auto& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.root < b.root;
  });
  std::vector<const Interval*> placed;
  int64_t peak = 0;
  for (Interval& iv : intervals) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, offset+bytes)
    for (const Interval* p : placed) {
      if (p->begin <= iv.end && iv.begin <= p->end) {
        const int64_t off = storage[p->root].offset;
        busy.push_back({off, off + p->bytes});
      }
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + iv.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    storage[iv.root].offset = offset;
    peak = std::max(peak, offset + iv.bytes);
    placed.push_back(&iv);
  }
  return peak;
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

absl::StatusOr<ExecutionPlan> PlanGraph(const Graph& graph,
                                        absl::Span<const Value> fetches,
                                        absl::Span<const Value> targets,
                                        const PlanOptions& options) {
  if (absl::Status st = CheckRoots(graph, fetches, "fetch"); !st.ok()) return st;
  if (absl::Status st = CheckRoots(graph, targets, "target"); !st.ok()) return st;
  if (fetches.empty() && targets.empty()) {
    return absl::InvalidArgumentError("nothing to compute: no fetches and no targets");
  }
  std::vector<Value> roots(fetches.begin(), fetches.end());
  roots.insert(roots.end(), targets.begin(), targets.end());
  const std::vector<bool> needed = Needed(graph, roots);
  DAGRAD_RETURN_IF_ERROR(CheckNothingFollowsUpdates(graph, needed));
  DAGRAD_ASSIGN_OR_RETURN(const std::vector<NodeId> order, Order(graph, needed));

  ExecutionPlan plan;
  const int n = graph.num_nodes();
  for (const Value& v : fetches) plan.fetches.push_back(v.id());
  std::vector<bool> fetched(n, false);
  for (NodeId id : plan.fetches) fetched[id] = true;

  // Fold constants: evaluate each foldable node, keep those read by the
  // rest of the plan (or fetched).
  std::vector<bool> is_const(n, false);
  absl::flat_hash_map<NodeId, Tensor> values;
  int64_t folded_bytes = 0;
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.kind == NodeKind::kConstant) {
      is_const[id] = true;
      values[id] = node.value;
    } else if (options.fold_constants && Foldable(node, is_const)) {
      const int64_t bytes = NodeBytes(node);
      folded_bytes += bytes;
      if (options.max_folded_bytes > 0 && folded_bytes > options.max_folded_bytes) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "memory limit: folding constant ", node.op->name, " '", node.path(), "' (",
            bytes, " bytes) exceeds the limit of ", options.max_folded_bytes, " bytes"));
      }
      std::vector<const Tensor*> ins;
      for (NodeId in : node.inputs) ins.push_back(in == kNoNode ? nullptr : &values[in]);
      auto t = EvaluateOnHost(node, ins);
      if (!t.ok()) return t.status();
      values[id] = *std::move(t);
      is_const[id] = true;
      if (!fetched[id]) ++plan.num_folded;
    }
  }

  // Schedule positions and the last position each node is read at.
  std::vector<int> pos(n, -1), last_read(n, -1);
  std::vector<NodeId> ops;  // every op to run or to alias, in order
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.kind == NodeKind::kOp && !is_const[id]) {
      pos[id] = static_cast<int>(ops.size());
      ops.push_back(id);
    }
  }
  const int end = static_cast<int>(ops.size());
  for (NodeId id : ops) {
    for (NodeId in : graph.node(id).inputs) {
      if (in != kNoNode) last_read[in] = std::max(last_read[in], pos[id]);
    }
  }
  for (NodeId id : plan.fetches) last_read[id] = end;

  // Storage: external roots for inputs, variables and constants; arena roots
  // for op outputs, shared by views and in-place outputs.
  plan.root.assign(n, -1);
  plan.offset.assign(n, 0);
  std::vector<int> root_last(0);  // per root: last read of any alias
  std::vector<int> root_begin(0);
  auto new_root = [&](Storage s, int begin) {
    plan.storage.push_back(s);
    root_last.push_back(-1);
    root_begin.push_back(begin);
    return static_cast<int32_t>(plan.storage.size() - 1);
  };
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.kind == NodeKind::kInput) {
      plan.inputs.push_back(id);
      plan.root[id] = new_root({Storage::Kind::kInput, 0, id}, -1);
    } else if (node.is_variable()) {
      plan.variables.push_back(id);
      plan.root[id] = new_root({Storage::Kind::kVariable, 0, id}, -1);
    } else if (is_const[id]) {
      const bool read = last_read[id] >= 0;
      if (read) plan.constants[id] = values[id];
      plan.root[id] = new_root({Storage::Kind::kConstant, 0, id}, -1);
    } else {
      continue;
    }
    root_last[plan.root[id]] = last_read[id];
  }
  for (NodeId id : ops) {
    const Node& node = graph.node(id);
    const NodeId in0 = node.inputs.empty() ? kNoNode : node.inputs[0];
    int32_t root = -1;
    std::optional<int64_t> view_offset;
    if (node.op->view != nullptr && in0 != kNoNode) {
      view_offset = node.op->view(node, graph.node(in0));
    }
    if (view_offset.has_value()) {
      root = plan.root[in0];
      plan.offset[id] = plan.offset[in0] + *view_offset;
      ++plan.num_views;
    } else if (NodeBytes(node) == 0) {
      root = new_root({Storage::Kind::kNone, 0, id}, pos[id]);
    } else {
      plan.intermediate_bytes += static_cast<int64_t>(AlignUp(NodeBytes(node)));
      const int32_t r0 = in0 == kNoNode ? -1 : plan.root[in0];
      bool in_place = options.in_place && node.op->inplace && r0 >= 0 &&
                      plan.storage[r0].kind == Storage::Kind::kArena &&
                      root_last[r0] == pos[id] &&
                      NodeBytes(graph.node(in0)) == NodeBytes(node) &&
                      graph.node(in0).dtype == node.dtype;
      for (size_t i = 1; in_place && i < node.inputs.size(); ++i) {
        const NodeId in = node.inputs[i];
        if (in != kNoNode && plan.root[in] == r0) in_place = false;
      }
      if (in_place) {
        root = r0;
        plan.offset[id] = plan.offset[in0];
        ++plan.num_in_place;
      } else {
        root = new_root({Storage::Kind::kArena, 0, id}, pos[id]);
      }
    }
    plan.root[id] = root;
    root_last[root] = std::max(root_last[root], last_read[id]);
    if (!view_offset.has_value()) plan.steps.push_back(id);
  }
  const std::vector<bool> written = FindUpdates(graph, plan);
  // A fetch whose bytes are a written variable's gets bytes of its own, for
  // the whole run (see ExecutionPlan::fetch_copies).
  for (NodeId id : plan.fetches) {
    const Storage& s = plan.storage[plan.root[id]];
    const bool done = std::any_of(plan.fetch_copies.begin(), plan.fetch_copies.end(),
                                  [&](const auto& c) { return c.node == id; });
    if (s.kind != Storage::Kind::kVariable || !written[s.node] || done) continue;
    const int32_t r = new_root({Storage::Kind::kArena, 0, id}, 0);
    root_last[r] = end;
    plan.intermediate_bytes += static_cast<int64_t>(AlignUp(NodeBytes(graph.node(id))));
    plan.fetch_copies.push_back({id, r});
  }

  std::vector<Interval> intervals;
  for (int32_t r = 0; r < static_cast<int32_t>(plan.storage.size()); ++r) {
    const Storage& s = plan.storage[r];
    if (s.kind != Storage::Kind::kArena) continue;
    const int64_t bytes = static_cast<int64_t>(AlignUp(NodeBytes(graph.node(s.node))));
    // A buffer nobody reads (a dead output) still lives for its own step.
    const int last = std::max(root_last[r], root_begin[r]);
    intervals.push_back({r, bytes, options.reuse_memory ? root_begin[r] : 0,
                         options.reuse_memory ? last : end});
  }
  plan.arena_bytes = PlaceBuffers(intervals, plan.storage);
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
