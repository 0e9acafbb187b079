// engine/plan/planner.h
//
// The planner turns a set of fetches (values to return) and targets (ops run
// for their side effects, such as optimizer updates) into an ExecutionPlan:
//
//   1. prune: keep only the nodes the fetches and targets depend on;
//   2. order: a topological order, deterministic (lowest id first among the
//      ready nodes), in which every op that writes a variable runs after all
//      other readers of that variable, and after every other node: updates
//      come last, whatever their ids (nothing but a target or a fetch may
//      take an update's output);
//   3. fold: op nodes whose inputs are all constants (the sinusoidal table)
//      are marked, their bytes added up (checked against max_folded_bytes
//      before any is evaluated), and, last, evaluated once (EvaluateFolded)
//      to become constants of the plan;
//   4. place: each remaining intermediate gets an offset in one arena.
//      Buffers whose lifetimes do not overlap share bytes (greedy by size);
//      a view (a reshape, a contiguous slice) aliases its input's bytes and
//      is never run; an in-place op (elementwise)
//      writes over its first input when that input dies there.
//
// The plan knows its peak arena bytes and the bytes all intermediates would
// need without reuse, so memory savings are measured, not claimed.

#ifndef DAGRAD_ENGINE_PLAN_PLANNER_H_
#define DAGRAD_ENGINE_PLAN_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/graph.h"
#include "engine/tensor.h"

namespace dagrad {

// Where a node's bytes live during a run.
struct Storage {
  enum class Kind { kArena, kInput, kVariable, kConstant, kNone };
  Kind kind = Kind::kNone;
  int64_t offset = 0;   // kArena: byte offset in the arena
  NodeId node = kNoNode;  // kInput / kVariable / kConstant: the owning node
};

struct PlanOptions {
  bool fold_constants = true;
  bool reuse_memory = true;  // false: every intermediate gets its own bytes
  bool in_place = true;
  // Upper bound on the bytes of constants folded at compile time; 0: none.
  int64_t max_folded_bytes = 0;
};

struct ExecutionPlan {
  std::vector<NodeId> fetches;
  std::vector<NodeId> steps;         // op nodes to run, in order (views are not run)
  // steps[first_update..] are the ops that write variables (steps.size()
  // when none does); no other op depends on them.
  int first_update = 0;
  std::vector<NodeId> inputs;        // input nodes the plan reads
  std::vector<NodeId> variables;     // variable nodes the plan touches
  // root[id] indexes `storage` for every node the plan touches (-1 else);
  // views and in-place outputs share their input's root.
  std::vector<int32_t> root;
  // offset[id] is the node's byte offset within its root's bytes (a slice
  // viewing part of its input).
  std::vector<int64_t> offset;
  std::vector<Storage> storage;
  // A run's fetches show the values before its updates, views of a written
  // variable (and the variable itself) as much as computed values. Such a
  // fetch aliases the variable, which the updates overwrite, so it gets an
  // arena buffer of its own (`root`), which the executor fills before any
  // step runs. Copying is simpler than the alternatives: running the view's
  // kernel instead would not cover a fetched variable, which has none, and
  // copying just before the first update would tie correctness to where the
  // updates are placed; before any step, nothing has written the variable.
  struct FetchCopy {
    NodeId node;
    int32_t root;
  };
  std::vector<FetchCopy> fetch_copies;
  // Folded (and graph) constants the plan reads, by node id; a folded one
  // is an empty tensor until EvaluateFolded.
  absl::flat_hash_map<NodeId, Tensor> constants;
  // The op nodes folded into constants, in order, and their bytes, all
  // held on the host while folding.
  std::vector<NodeId> folded;
  int64_t folded_bytes = 0;
  int64_t arena_bytes = 0;          // peak: the size of the one arena
  int64_t intermediate_bytes = 0;   // what the intermediates need without reuse
  int num_in_place = 0;
  int num_views = 0;
  int num_folded = 0;

  // Summary is a one-line description for logs and `dagrad info`.
  std::string Summary() const;
};

// PlanGraph builds the plan. Errors: a fetch or target that is not a node of
// `graph` (the Value's own error for an error Value); FailedPrecondition
// when an op that writes no variable depends on the output of one that
// does (it could not run before the updates); an op without a CPU kernel
// in a folded subgraph; a kernel error while folding.
absl::StatusOr<ExecutionPlan> PlanGraph(const Graph& graph,
                                        absl::Span<const Value> fetches,
                                        absl::Span<const Value> targets,
                                        const PlanOptions& options = {});

// PlanLayout is PlanGraph up to folding, which it leaves to EvaluateFolded:
// it allocates nothing, so that the plan's memory can be checked first
// (Executor::Compile does).
//
//   // setup: Planner
//   DAGRAD_ASSIGN_OR_RETURN(ExecutionPlan plan, PlanLayout(g, {loss}, {}));
//   if (plan.arena_bytes + plan.folded_bytes > limit) return TooBig(plan);
//   DAGRAD_RETURN_IF_ERROR(EvaluateFolded(g, plan));
absl::StatusOr<ExecutionPlan> PlanLayout(const Graph& graph, absl::Span<const Value> fetches,
                                         absl::Span<const Value> targets,
                                         const PlanOptions& options = {});
absl::Status EvaluateFolded(const Graph& graph, ExecutionPlan& plan);

// EvaluateOnHost runs `node` (an op) with its CPU kernel on host tensors
// (null for absent optional inputs), in eval mode;
// the planner folds constants with it.
absl::StatusOr<Tensor> EvaluateOnHost(const Node& node,
                                      absl::Span<const Tensor* const> inputs);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_PLAN_PLANNER_H_
