// The examples of the engine's size and memory headers (checked_math.h,
// host_memory.h, memory_budget.h, plan_memory.h, planner.h), line for line,
// run (tests/support/header_examples.h says how they are kept in step with the
// headers).
#include <cstdint>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/checked_math.h"
#include "engine/graph.h"
#include "engine/plan/host_memory.h"
#include "engine/plan/internal/plan_memory.h"
#include "engine/plan/memory_budget.h"
#include "engine/plan/planner.h"
#include "engine/status_macros.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/support/header_examples.h"

namespace dagrad {
namespace {

HEADER_EXAMPLE(CheckedMath) {
  std::optional<int64_t> n = CheckedMul(int64_t{1} << 31, int64_t{1} << 31);  // 2^62
  std::optional<int64_t> bytes = CheckedBytes(*n, 4);   // nullopt: 2^64 overflows
  int64_t kept = SliceLength(10, 0, INT64_MAX, INT64_MAX);  // 1, as Python's len(range(10)[0::big])
  EXPECT_EQ(n, int64_t{1} << 62);
  EXPECT_EQ(bytes, std::nullopt);
  EXPECT_EQ(kept, 1);
  return absl::OkStatus();
}

HEADER_EXAMPLE(HostMemory) {
  std::optional<MemoryLimit> room = HostMemoryAvailable();
  if (room) std::cout << HumanBytes(room->bytes) << " from " << room->source;
  EXPECT_TRUE(room.has_value());   // Linux has /proc/meminfo
  return absl::OkStatus();
}

HEADER_EXAMPLE(MemoryBudget) {
  const int64_t arena_bytes = 1 << 20, scores_bytes = 1 << 19;
  {
    const MemoryLimit limit{.bytes = int64_t{1} << 30, .source = "the test's limit"};
    MemoryBudget need;
    need.Add("parameters", "variable 'w' float32 (8192, 8192)", 268435456);
    need.Add("arena", arena_bytes);                       // an aggregate, not listed
    need.AddPart("matmul 'scores' float32 (64, 4, 512, 512)", scores_bytes);  // in the arena
    DAGRAD_RETURN_IF_ERROR(need.CheckFits(limit, "compiling the plan"));
    EXPECT_EQ(need.total(), 268435456 + arena_bytes);
  }
  const MemoryLimit limit{.bytes = 1000, .source = "a small limit"};
  MemoryBudget need;
  need.Add("arena", arena_bytes);
  need.AddPart("matmul 'scores' float32 (64, 4, 512, 512)", scores_bytes);
  const absl::Status status = need.CheckFits(limit, "compiling the plan");
  EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
  EXPECT_NE(status.message().find("matmul 'scores'"), absl::string_view::npos) << status;
  return absl::OkStatus();
}

// A graph with a product to plan, for the planner's examples.
struct Product {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {64, 64});
  Value w = g.Parameter("w", {64, 64}, Initializer::XavierUniform());
  Value loss = Sum(MatMul(x, w));
};

HEADER_EXAMPLE(PlanMemory) {
  Product p;
  const Graph& graph = p.g;
  DAGRAD_ASSIGN_OR_RETURN(ExecutionPlan plan, PlanLayout(graph, {p.loss}, {}));
  auto allocated = [](NodeId) { return false; };   // no variable yet
  const MemoryLimit limit{.bytes = int64_t{1} << 30, .source = "the test's limit"};
  MemoryBudget need = PlanMemory(graph, plan, /*host_device=*/true,
                                 [&](NodeId v) { return allocated(v); });
  DAGRAD_RETURN_IF_ERROR(need.CheckFits(limit, "compiling the plan"));
  EXPECT_GE(need.total().value_or(0), 64 * 64 * 4);   // w at least
  return absl::OkStatus();
}

absl::Status TooBig(const ExecutionPlan& plan) {
  return absl::ResourceExhaustedError(absl::StrCat("the plan needs ", plan.arena_bytes, " bytes"));
}

HEADER_EXAMPLE(PlanLayout) {
  Product p;
  const Graph& g = p.g;
  Value loss = p.loss;
  const int64_t limit = int64_t{1} << 30;
  DAGRAD_ASSIGN_OR_RETURN(ExecutionPlan plan, PlanLayout(g, {loss}, {}));
  if (plan.arena_bytes + plan.folded_bytes > limit) return TooBig(plan);
  DAGRAD_RETURN_IF_ERROR(EvaluateFolded(g, plan));
  EXPECT_GT(plan.arena_bytes, 0);
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad
