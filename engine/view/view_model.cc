#include "engine/view/view_model.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "engine/op.h"
#include "engine/status_macros.h"
#include "nlohmann/json.hpp"

namespace dagrad {
namespace {

using Json = nlohmann::ordered_json;

const char* KindName(const Node& n) {
  switch (n.kind) {
    case NodeKind::kInput: return "input";
    case NodeKind::kVariable: return n.trainable ? "parameter" : "variable";
    case NodeKind::kConstant: return "constant";
    case NodeKind::kOp: break;
  }
  return "op";
}

const char* RoleLabel(NodeRole role) {
  switch (role) {
    case NodeRole::kGradient: return "gradient";
    case NodeRole::kOptimizer: return "optimizer";
    case NodeRole::kCommunication: return "communication";
    case NodeRole::kForward: break;
  }
  return "forward";
}

// NodeBytesOrUnknown is the node's size, or -1 for a symbolic shape.
int64_t NodeBytesOrUnknown(const Node& n) {
  const int64_t elements = n.shape.num_elements();
  return elements < 0 ? -1 : elements * static_cast<int64_t>(SizeOf(n.dtype));
}

absl::Status CheckRoot(const Graph& g, const Value& v, absl::string_view what, size_t i) {
  if (v.is_null() || v.graph() != &g || !v.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ViewModelJson: ", what, "[", i, "] is not a node of the graph",
        v.is_null() || v.ok() ? "" : absl::StrCat(": ", v.status().message())));
  }
  return absl::OkStatus();
}

absl::Status CheckPlan(const Graph& g, const ExecutionPlan& plan, const OpProfile* profile) {
  for (NodeId id : plan.steps) {
    if (id < 0 || id >= g.num_nodes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ViewModelJson: the plan runs node ", id, ", which the graph does not have"));
    }
  }
  if (plan.root.size() > static_cast<size_t>(g.num_nodes())) {
    return absl::InvalidArgumentError("ViewModelJson: the plan is of a bigger graph");
  }
  if (profile != nullptr && !profile->by_step.empty() &&
      profile->by_step.size() != plan.steps.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ViewModelJson: the profile times ", profile->by_step.size(), " steps, the plan has ",
        plan.steps.size()));
  }
  return absl::OkStatus();
}

// DrawnNodes marks `roots` (or every node when there are none) and the plan's
// steps and fetches, and everything they depend on.
std::vector<bool> DrawnNodes(const Graph& g, absl::Span<const Value> roots,
                             const ExecutionPlan* plan) {
  if (roots.empty() && plan == nullptr) return std::vector<bool>(g.num_nodes(), true);
  std::vector<NodeId> ids;
  for (const Value& r : roots) ids.push_back(r.id());
  if (plan != nullptr) {
    ids.insert(ids.end(), plan->steps.begin(), plan->steps.end());
    ids.insert(ids.end(), plan->fetches.begin(), plan->fetches.end());
  }
  return DependedOn(g, std::move(ids));
}

// Buffers describes the plan's arena storage roots; buffer_of[root] is the
// index of a root's buffer in the result, -1 for roots outside the arena.
struct Buffers {
  Json list = Json::array();
  std::vector<int> buffer_of;
};

Buffers ArenaBuffers(const Graph& g, const ExecutionPlan& plan) {
  Buffers b;
  b.buffer_of.assign(plan.storage.size(), -1);
  for (size_t r = 0; r < plan.storage.size(); ++r) {
    if (plan.storage[r].kind != Storage::Kind::kArena) continue;
    b.buffer_of[r] = static_cast<int>(b.list.size());
    b.list.push_back({{"offset", plan.storage[r].offset}, {"bytes", 0}, {"first", INT32_MAX},
                      {"last", -1}, {"nodes", Json::array()}});
  }
  const auto buffer = [&](NodeId id) -> Json* {
    if (id == kNoNode || static_cast<size_t>(id) >= plan.root.size() || plan.root[id] < 0) {
      return nullptr;
    }
    const int index = b.buffer_of[plan.root[id]];
    return index < 0 ? nullptr : &b.list[index];
  };
  const auto live_at = [&](NodeId id, int step) {
    if (Json* buf = buffer(id)) {
      (*buf)["first"] = std::min((*buf)["first"].get<int>(), step);
      (*buf)["last"] = std::max((*buf)["last"].get<int>(), step);
    }
  };
  const int last_step = static_cast<int>(plan.steps.size()) - 1;
  for (int s = 0; s <= last_step; ++s) {
    live_at(plan.steps[s], s);
    for (NodeId in : g.node(plan.steps[s]).inputs) live_at(in, s);
  }
  for (NodeId id : plan.fetches) live_at(id, last_step);
  for (const ExecutionPlan::FetchCopy& c : plan.fetch_copies) live_at(c.node, -1);
  for (NodeId id = 0; id < static_cast<NodeId>(plan.root.size()); ++id) {
    Json* buf = buffer(id);
    if (buf == nullptr) continue;
    (*buf)["nodes"].push_back(id);
    const int64_t end = plan.offset[id] + std::max<int64_t>(NodeBytesOrUnknown(g.node(id)), 0);
    (*buf)["bytes"] = std::max((*buf)["bytes"].get<int64_t>(), end);
  }
  return b;
}

Json NodeJson(const Node& n, bool is_loss) {
  Json j = {{"id", n.id}, {"name", n.name}, {"scope", n.scope}, {"kind", KindName(n)}};
  if (n.op != nullptr) j["op"] = n.op->name;
  j["role"] = RoleLabel(n.role);
  j["dtype"] = DTypeName(n.dtype);
  j["shape"] = n.shape.dims();
  if (const int64_t bytes = NodeBytesOrUnknown(n); bytes >= 0) j["bytes"] = bytes;
  j["inputs"] = n.inputs;
  if (n.gradient_of != kNoNode) j["gradient_of"] = n.gradient_of;
  if (is_loss) j["loss"] = true;
  return j;
}

// AddPlan adds the plan's steps, buffers and times to `doc`, whose
// "nodes" holds the drawn nodes, `index[id]` being node id's place there.
void AddPlan(const Graph& g, const ExecutionPlan& plan, const OpProfile* profile,
             const std::vector<int>& index, Json& doc) {
  Buffers buffers = ArenaBuffers(g, plan);
  Json& nodes = doc["nodes"];
  for (NodeId id = 0; id < static_cast<NodeId>(plan.root.size()); ++id) {
    if (index[id] >= 0 && plan.root[id] >= 0 && buffers.buffer_of[plan.root[id]] >= 0) {
      nodes[index[id]]["buffer"] = buffers.buffer_of[plan.root[id]];
    }
  }
  const bool timed = profile != nullptr && profile->runs > 0 && !profile->by_step.empty();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    Json& node = nodes[index[plan.steps[s]]];
    node["step"] = s;
    if (timed) node["seconds"] = profile->by_step[s].seconds / static_cast<double>(profile->runs);
  }
  doc["arena_bytes"] = plan.arena_bytes;
  doc["intermediate_bytes"] = plan.intermediate_bytes;
  doc["steps"] = plan.steps.size();
  if (timed) doc["profile_runs"] = profile->runs;
  doc["buffers"] = std::move(buffers.list);
}

}  // namespace

absl::StatusOr<std::string> ViewModelJson(const Graph& g, absl::Span<const Value> roots,
                                          const ViewOptions& options) {
  for (size_t i = 0; i < roots.size(); ++i) {
    DAGRAD_RETURN_IF_ERROR(CheckRoot(g, roots[i], "roots", i));
  }
  std::vector<bool> is_loss(g.num_nodes(), false);
  for (size_t i = 0; i < options.losses.size(); ++i) {
    DAGRAD_RETURN_IF_ERROR(CheckRoot(g, options.losses[i], "losses", i));
    is_loss[options.losses[i].id()] = true;
  }
  if (options.plan != nullptr) DAGRAD_RETURN_IF_ERROR(CheckPlan(g, *options.plan, options.profile));
  const std::vector<bool> drawn = DrawnNodes(g, roots, options.plan);
  Json doc = {{"title", options.title}, {"nodes", Json::array()}};
  std::vector<int> index(g.num_nodes(), -1);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    if (!drawn[id]) continue;
    index[id] = static_cast<int>(doc["nodes"].size());
    doc["nodes"].push_back(NodeJson(g.node(id), is_loss[id]));
  }
  if (options.plan != nullptr) AddPlan(g, *options.plan, options.profile, index, doc);
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace dagrad
