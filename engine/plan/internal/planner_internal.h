// engine/plan/internal/planner_internal.h
//
// What engine/plan/planner.cc and engine/plan/planner_place.cc share; not an API.

#ifndef DAGRAD_ENGINE_PLAN_INTERNAL_PLANNER_INTERNAL_H_
#define DAGRAD_ENGINE_PLAN_INTERNAL_PLANNER_INTERNAL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph.h"
#include "engine/plan/planner.h"

namespace dagrad::planner_internal {

// NodeBytes is a node's bytes; ArenaBytes the same aligned up. Graph nodes
// passed ValidateBytes (at most kMaxTensorBytes, 2^62), so neither can
// overflow; sums of them are checked (AddBytes).
int64_t NodeBytes(const Node& n);
int64_t ArenaBytes(const Node& n);

// AddBytes adds `bytes` for `node` to `sum`; ResourceExhausted when the sum
// overflows int64. Every arena buffer's bytes are in intermediate_bytes, so
// once that sum fits, every arena offset (at most the sum of the buffers
// below it) fits too.
absl::Status AddBytes(int64_t& sum, int64_t bytes, const Node& node, const char* what);

bool WritesVariable(const Node& node);

// Place is planning's phase 4: roots, offsets and the arena for every node
// of `order` (is_const: constants and folded nodes).
absl::Status Place(const Graph& graph, const std::vector<NodeId>& order,
                   const std::vector<bool>& is_const, const PlanOptions& options,
                   ExecutionPlan& plan);

}  // namespace dagrad::planner_internal

#endif  // DAGRAD_ENGINE_PLAN_INTERNAL_PLANNER_INTERNAL_H_
