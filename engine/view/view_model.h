// engine/view/view_model.h
//
// The graph as the interactive viewer (engine/view/viewer_html.h) and other
// tools read it: one JSON document describing the nodes a set of roots
// depends on, how autodiff's gradient nodes pair with the forward nodes they
// came from, which nodes an optimizer built, the arena buffers the planner
// laid out for a compiled plan and, with a profile, each node's time.
//
//   DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, exec.Compile({loss}, {}));
//   DAGRAD_ASSIGN_OR_RETURN(std::string json,
//                           ViewModelJson(g, {loss}, {.title = "mlp", .plan = &plan->info()}));
//
// The document (keys absent when they do not apply):
//  {"title": "...", "arena_bytes": 1024, "intermediate_bytes": 4096,
//  "steps": 57, "profile_runs": 3,
//  "nodes": [{"id": 7, "name": "matmul", "scope": "layers/0/attn",
//  "kind": "op", "op": "matmul", "role": "forward",
//  "dtype": "float32", "shape": [2, 8], "bytes": 64,
//  "inputs": [3, 5], "gradient_of": 4, "loss": true,
//  "step": 12, "buffer": 2, "seconds": 1.5e-05}, ...],
//  "buffers": [{"offset": 0, "bytes": 256, "first": 3, "last": 9,
//  "nodes": [7, 8]}, ...]}
//  - nodes are in id order (a topological order); "inputs" lists input
//  node ids (-1 for an absent optional input): a node's outputs are the
//  nodes listing it, which the viewer derives;
//  - "kind" is input, parameter, variable (optimizer state), constant or
//  op; "role" is forward, gradient, optimizer or communication;
//  - "gradient_of" is Node::gradient_of: the forward node whose gradient
//  autodiff was computing when it built this gradient node;
//  - "bytes" is absent for a shape with a symbolic dimension (-1);
//  - with a plan: "step" is the node's index in ExecutionPlan::steps (the
//  schedule), "buffer" its arena buffer; each buffer is one storage root
//  of the arena (views and in-place outputs share their input's), its
//  bytes the most its nodes use, live from the first step that writes or
//  reads it to the last ("last" is the final step for a fetched one); a
//  buffer of fetch copies is filled before step 0, so "first" is -1;
//  - with a profile of that plan: "seconds" is the node's mean time per
//  run (OpProfile::by_step).

#ifndef DAGRAD_ENGINE_VIEW_VIEW_MODEL_H_
#define DAGRAD_ENGINE_VIEW_VIEW_MODEL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/plan/planner.h"

namespace dagrad {

struct ViewOptions {
  std::string title;
  // losses are marked "loss": true.
  std::vector<Value> losses;
  // plan, when given, is a plan of this graph (Plan::info()): its schedule
  // and arena buffers are described.
  const ExecutionPlan* plan = nullptr;
  // profile, when given with `plan`, is that plan's (Plan::profile()).
  const OpProfile* profile = nullptr;
};

// ViewModelJson returns the document above for `roots` and every node they
// depend on (the whole graph when `roots` is empty), plus the plan's steps.
//
// Errors: InvalidArgument for a root or loss that is null, an error Value
// or of another graph; InvalidArgument for a plan that names a node the
// graph does not have, or a profile whose steps are not the plan's.
absl::StatusOr<std::string> ViewModelJson(const Graph& g, absl::Span<const Value> roots,
                                          const ViewOptions& options = {});

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_VIEW_VIEW_MODEL_H_
