// engine/plan/internal/plan_memory.h
//
// What compiling and running a plan will allocate, known before it is
// allocated: the executor checks it at Compile against the memory limit
// (ExecutorOptions::memory_limit_bytes) and what the host may still give
// (engine/plan/host_memory.h), and fails with RESOURCE_EXHAUSTED naming the
// biggest buffers instead of running out of memory half way.
//
//   // setup: PlanParts
//   MemoryBudget need = PlanMemory(graph, plan, /*host_device=*/true,
//                                  [&](NodeId v) { return allocated(v); });
//   DAGRAD_RETURN_IF_ERROR(need.CheckFits(limit, "compiling the plan"));

#ifndef DAGRAD_ENGINE_PLAN_INTERNAL_PLAN_MEMORY_H_
#define DAGRAD_ENGINE_PLAN_INTERNAL_PLAN_MEMORY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "engine/graph.h"
#include "engine/plan/host_memory.h"
#include "engine/plan/memory_budget.h"
#include "engine/plan/planner.h"

namespace dagrad {

// PlanMemory counts the plan's arena ("arena", listing its biggest
// buffers), its folded constants ("folded constants", listing them), the variables it touches that are not allocated yet
// ("parameters" for trainable ones, "optimizer state" for the others), and,
// on a device that is not the host, device copies of its constants and
// staging buffers for its inputs.
MemoryBudget PlanMemory(const Graph& graph, const ExecutionPlan& plan, bool host_device,
                        const std::function<bool(NodeId)>& allocated);

// DescribeNode names a node for memory messages: "matmul
// 'encoder/self_attn/scores' float32 (64, 4, 1000, 1000)".
std::string DescribeNode(const Node& node);

// MemoryLimitFor returns the room an executor has left: `option_limit`
// (when > 0) less `in_use`, and, when `host` (a host device, host memory
// checks on), what the host may still give less `unmade` (bytes counted in
// `in_use` but not yet allocated: reserved variables); the smaller, with
// its source. Each of `shares` executors sharing both has 1/shares of
// each. nullopt when neither applies.
std::optional<MemoryLimit> MemoryLimitFor(int64_t option_limit, int64_t in_use, int64_t unmade,
                                          bool host, int shares = 1,
                                          const HostMemoryFiles& files = {});

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_PLAN_INTERNAL_PLAN_MEMORY_H_
