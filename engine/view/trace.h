// engine/view/trace.h
//
// ChromeTraceJson: a profiled plan's last run as a Chrome trace (the JSON
// "Trace Event Format" that Perfetto, ui.perfetto.dev, and chrome://tracing
// open): one complete event per op the plan ran, in schedule order,
//
//  {"name": "matmul", "cat": "forward", "ph": "X", "ts": 12.5, "dur": 3.25,
//  "pid": 1, "tid": 1, "args": {"node": "layers/0/attn/matmul",
//  "scope": "layers/0/attn", "op": "matmul", "step": 17,
//  "shape": "(2, 8, 16)", "dtype": "float32"}}
//
// ts and dur in microseconds, ts from the start of the run's first op; cat
// is forward, backward (gradient nodes, and the gradient all-reduce, whose
// args add "role": "communication") or update (optimizer nodes). Two more
// threads group them: "forward, backward, update" holds one span (cat
// "phase") per run of ops of one category, "scopes" one (cat "scope") per
// run of ops in one block, the scope to two levels ("layers/0"), with the
// number of ops in args. Metadata events name the process and threads. The times are those the executor
// measured with ExecutorOptions::profile (waiting for the device after
// every kernel, on the CPU and on CUDA alike).
//
//   Executor profiled(g, {.profile = true});
//   DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, profiled.Compile({loss}, {}));
//   DAGRAD_RETURN_IF_ERROR(profiled.Run(*plan, {{tokens, batch}}).status());
//   DAGRAD_ASSIGN_OR_RETURN(std::string trace,
//                           ChromeTraceJson(g, plan->info(), plan->profile()));

#ifndef DAGRAD_ENGINE_VIEW_TRACE_H_
#define DAGRAD_ENGINE_VIEW_TRACE_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/plan/planner.h"

namespace dagrad {

// ChromeTraceJson returns the trace above. Errors: FailedPrecondition when
// `profile` timed no run of `plan` (an executor without
// ExecutorOptions::profile, or no run yet), naming the fix;
// InvalidArgument when the profile's steps are not the plan's or the plan
// names a node `g` does not have.
absl::StatusOr<std::string> ChromeTraceJson(const Graph& g, const ExecutionPlan& plan,
                                            const OpProfile& profile);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_VIEW_TRACE_H_
