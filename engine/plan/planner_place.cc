// Phase 4 of planning (engine/plan/planner.h): place every node's bytes.

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/op.h"
#include "engine/plan/internal/planner_internal.h"
#include "engine/status_macros.h"

namespace dagrad::planner_internal {
namespace {

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
      if (node.op->Writes(k)) written[node.inputs[k]] = true;
    }
  }
  return written;
}

struct Interval {
  int32_t root;
  int64_t bytes;
  int begin, end;  // schedule positions, inclusive
};

// Placed holds the placed buffers in order of offset, as columns: the
// lowest free offset for a buffer is then one pass over them, with no
// list of the busy ones to build and sort (which made a 200k-node training
// graph's placement take 25 s).
struct Placed {
  std::vector<int64_t> lo, hi;  // [offset, offset + bytes)
  std::vector<int> begin, end;  // alive at schedule positions [begin, end]

  // LowestFit is the lowest offset at which `bytes` overlap no placed
  // buffer alive at the same time as [b, e]: a pass in offset order that
  // moves past each such buffer in the way and stops at the first gap.
  int64_t LowestFit(int64_t bytes, int b, int e) const {
    int64_t offset = 0;
    for (size_t i = 0; i < lo.size() && offset + bytes > lo[i]; ++i) {
      if (begin[i] <= e && b <= end[i]) offset = std::max(offset, hi[i]);
    }
    return offset;
  }

  void Insert(int64_t offset, int64_t bytes, int b, int e) {
    const auto at = std::upper_bound(lo.begin(), lo.end(), offset) - lo.begin();
    lo.insert(lo.begin() + at, offset);
    hi.insert(hi.begin() + at, offset + bytes);
    begin.insert(begin.begin() + at, b);
    end.insert(end.begin() + at, e);
  }
};

// Greedy-by-size placement: biggest buffers first, each at the lowest offset
// that does not overlap a placed buffer alive at the same time.
int64_t PlaceBuffers(std::vector<Interval>& intervals,
                     std::vector<Storage>& storage) {
  std::sort(intervals.begin(), intervals.end(), [](const auto& a, const auto& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.root < b.root;
  });
  Placed placed;
  int64_t peak = 0;
  for (const Interval& iv : intervals) {
    const int64_t offset = placed.LowestFit(iv.bytes, iv.begin, iv.end);
    storage[iv.root].offset = offset;
    peak = std::max(peak, offset + iv.bytes);
    placed.Insert(offset, iv.bytes, iv.begin, iv.end);
  }
  return peak;
}

// Schedule positions and the last position each node is read at.
struct Schedule {
  std::vector<NodeId> ops;  // every op to run or to alias, in order
  std::vector<int> pos, last_read;
  int end = 0;
};

Schedule MakeSchedule(const Graph& graph, const std::vector<NodeId>& order,
                      const std::vector<bool>& is_const, const std::vector<NodeId>& fetches) {
  Schedule s;
  s.pos.assign(graph.num_nodes(), -1);
  s.last_read.assign(graph.num_nodes(), -1);
  for (NodeId id : order) {
    if (graph.node(id).kind == NodeKind::kOp && !is_const[id]) {
      s.pos[id] = static_cast<int>(s.ops.size());
      s.ops.push_back(id);
    }
  }
  s.end = static_cast<int>(s.ops.size());
  for (NodeId id : s.ops) {
    for (NodeId in : graph.node(id).inputs) {
      if (in != kNoNode) s.last_read[in] = std::max(s.last_read[in], s.pos[id]);
    }
  }
  for (NodeId id : fetches) s.last_read[id] = s.end;
  return s;
}

// Roots hands out storage roots, tracking each one's live range.
struct Roots {
  ExecutionPlan& plan;
  std::vector<int> last, begin;  // per root: last read of any alias; first position

  int32_t New(Storage s, int first) {
    plan.storage.push_back(s);
    last.push_back(-1);
    begin.push_back(first);
    return static_cast<int32_t>(plan.storage.size() - 1);
  }
};

// External roots: inputs, variables and constants (folded ones read by the
// plan get an empty tensor in plan.constants until EvaluateFolded).
void AssignExternalRoots(const Graph& graph, const std::vector<NodeId>& order,
                         const std::vector<bool>& is_const, const Schedule& s, Roots& roots) {
  ExecutionPlan& plan = roots.plan;
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.kind == NodeKind::kInput) {
      plan.inputs.push_back(id);
      plan.root[id] = roots.New({Storage::Kind::kInput, 0, id}, -1);
    } else if (node.is_variable()) {
      plan.variables.push_back(id);
      plan.root[id] = roots.New({Storage::Kind::kVariable, 0, id}, -1);
    } else if (is_const[id]) {
      if (s.last_read[id] >= 0) plan.constants[id] = node.value;
      plan.root[id] = roots.New({Storage::Kind::kConstant, 0, id}, -1);
    } else {
      continue;
    }
    roots.last[plan.root[id]] = s.last_read[id];
  }
}

// InPlaceRoot returns the root of `node`'s first input when the node may
// write over it: an in-place op whose same-sized first input, in the arena,
// dies at this node and is not also another of its inputs. -1 otherwise.
int32_t InPlaceRoot(const Graph& graph, const Node& node, const Schedule& s, const Roots& roots,
                    const PlanOptions& options) {
  const ExecutionPlan& plan = roots.plan;
  const NodeId in0 = node.inputs.empty() ? kNoNode : node.inputs[0];
  const int32_t r0 = in0 == kNoNode ? -1 : plan.root[in0];
  if (!options.in_place || !node.op->inplace || r0 < 0 ||
      plan.storage[r0].kind != Storage::Kind::kArena || roots.last[r0] != s.pos[node.id] ||
      NodeBytes(graph.node(in0)) != NodeBytes(node) || graph.node(in0).dtype != node.dtype) {
    return -1;
  }
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.inputs[i] != kNoNode && plan.root[node.inputs[i]] == r0) return -1;
  }
  return r0;
}

// Op roots: a view aliases its input, an in-place op its first input's
// bytes; every other op gets an arena buffer of its own.
absl::Status AssignOpRoots(const Graph& graph, const Schedule& s, const PlanOptions& options,
                           Roots& roots) {
  ExecutionPlan& plan = roots.plan;
  for (NodeId id : s.ops) {
    const Node& node = graph.node(id);
    const NodeId in0 = node.inputs.empty() ? kNoNode : node.inputs[0];
    std::optional<int64_t> view_offset;
    if (node.op->view != nullptr && in0 != kNoNode) view_offset = node.op->view(node, graph.node(in0));
    int32_t root = -1;
    if (view_offset.has_value()) {
      root = plan.root[in0];
      plan.offset[id] = plan.offset[in0] + *view_offset;
      ++plan.num_views;
    } else if (NodeBytes(node) == 0) {
      root = roots.New({Storage::Kind::kNone, 0, id}, s.pos[id]);
    } else {
      DAGRAD_RETURN_IF_ERROR(
          AddBytes(plan.intermediate_bytes, ArenaBytes(node), node, "the plan's intermediates"));
      root = InPlaceRoot(graph, node, s, roots, options);
      if (root >= 0) {
        plan.offset[id] = plan.offset[in0];
        ++plan.num_in_place;
      } else {
        root = roots.New({Storage::Kind::kArena, 0, id}, s.pos[id]);
      }
    }
    plan.root[id] = root;
    roots.last[root] = std::max(roots.last[root], s.last_read[id]);
    if (!view_offset.has_value()) plan.steps.push_back(id);
  }
  return absl::OkStatus();
}

// A fetch whose bytes are a written variable's gets bytes of its own, for
// the whole run (see ExecutionPlan::fetch_copies).
absl::Status AddFetchCopies(const Graph& graph, const Schedule& s, Roots& roots) {
  ExecutionPlan& plan = roots.plan;
  const std::vector<bool> written = FindUpdates(graph, plan);
  for (NodeId id : plan.fetches) {
    const Storage& st = plan.storage[plan.root[id]];
    const bool done = std::any_of(plan.fetch_copies.begin(), plan.fetch_copies.end(),
                                  [&](const auto& c) { return c.node == id; });
    if (st.kind != Storage::Kind::kVariable || !written[st.node] || done) continue;
    const int32_t r = roots.New({Storage::Kind::kArena, 0, id}, 0);
    roots.last[r] = s.end;
    DAGRAD_RETURN_IF_ERROR(AddBytes(plan.intermediate_bytes, ArenaBytes(graph.node(id)),
                                    graph.node(id), "the plan's intermediates"));
    plan.fetch_copies.push_back({id, r});
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Place(const Graph& graph, const std::vector<NodeId>& order,
                   const std::vector<bool>& is_const, const PlanOptions& options,
                   ExecutionPlan& plan) {
  const Schedule s = MakeSchedule(graph, order, is_const, plan.fetches);
  plan.root.assign(graph.num_nodes(), -1);
  plan.offset.assign(graph.num_nodes(), 0);
  Roots roots{plan, {}, {}};
  AssignExternalRoots(graph, order, is_const, s, roots);
  DAGRAD_RETURN_IF_ERROR(AssignOpRoots(graph, s, options, roots));
  DAGRAD_RETURN_IF_ERROR(AddFetchCopies(graph, s, roots));
  std::vector<Interval> intervals;
  for (int32_t r = 0; r < static_cast<int32_t>(plan.storage.size()); ++r) {
    const Storage& st = plan.storage[r];
    if (st.kind != Storage::Kind::kArena) continue;
    // A buffer nobody reads (a dead output) still lives for its own step.
    const int last = std::max(roots.last[r], roots.begin[r]);
    intervals.push_back({r, ArenaBytes(graph.node(st.node)),
                         options.reuse_memory ? roots.begin[r] : 0,
                         options.reuse_memory ? last : s.end});
  }
  plan.arena_bytes = PlaceBuffers(intervals, plan.storage);
  return absl::OkStatus();
}

}  // namespace dagrad::planner_internal
