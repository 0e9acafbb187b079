#include "engine/plan/internal/plan_memory.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/checked_math.h"
#include "engine/op.h"
#include "engine/plan/internal/planner_internal.h"

namespace dagrad {

std::string DescribeNode(const Node& node) {
  absl::string_view kind;
  switch (node.kind) {
    case NodeKind::kInput: kind = "input"; break;
    case NodeKind::kVariable: kind = node.trainable ? "parameter" : "variable"; break;
    case NodeKind::kConstant: kind = "constant"; break;
    case NodeKind::kOp: kind = node.op->name; break;
  }
  return absl::StrCat(kind, " '", node.path(), "' ", node.TypeString());
}

MemoryBudget PlanMemory(const Graph& graph, const ExecutionPlan& plan, bool host_device,
                        const std::function<bool(NodeId)>& allocated) {
  using planner_internal::NodeBytes;
  MemoryBudget need;
  need.Add("arena", plan.arena_bytes);
  for (const Storage& s : plan.storage) {
    if (s.kind != Storage::Kind::kArena) continue;
    const Node& node = graph.node(s.node);
    need.AddPart(DescribeNode(node), NodeBytes(node));
  }
  for (NodeId id : plan.variables) {
    if (allocated(id)) continue;
    const Node& node = graph.node(id);
    need.Add(node.trainable ? "parameters" : "optimizer state", DescribeNode(node),
             NodeBytes(node));
  }
  for (NodeId id : plan.folded) need.AddPart(DescribeNode(graph.node(id)), NodeBytes(graph.node(id)));
  need.Add("folded constants", plan.folded_bytes);
  if (host_device) return need;
  for (const auto& [id, tensor] : plan.constants) {
    need.Add("constants", DescribeNode(graph.node(id)), NodeBytes(graph.node(id)));
  }
  for (NodeId id : plan.inputs) {
    need.Add("input staging", DescribeNode(graph.node(id)), NodeBytes(graph.node(id)));
  }
  return need;
}

std::optional<MemoryLimit> MemoryLimitFor(int64_t option_limit, int64_t in_use, int64_t unmade,
                                          bool host, int shares, const HostMemoryFiles& files) {
  const int64_t n = std::max(shares, 1);
  const std::string shared = n > 1 ? absl::StrCat(", shared by ", n, " executors") : "";
  std::optional<MemoryLimit> limit;
  if (option_limit > 0) {
    const int64_t share = option_limit / n;
    limit = MemoryLimit{
        share > in_use ? share - in_use : 0,
        absl::StrCat("ExecutorOptions::memory_limit_bytes ", HumanBytes(option_limit), shared,
                     in_use > 0 ? absl::StrCat(" less ", HumanBytes(in_use), " in use") : "")};
  }
  if (!host) return limit;
  std::optional<MemoryLimit> room = HostMemoryAvailable(files);
  if (room) {
    room->bytes = std::max<int64_t>(room->bytes / n - unmade, 0);
    room->source += shared;
    if (unmade > 0) {
      absl::StrAppend(&room->source, " less ", HumanBytes(unmade),
                      " of variables compiled plans will make");
    }
  }
  if (room && (!limit || room->bytes < limit->bytes)) limit = room;
  return limit;
}

}  // namespace dagrad
