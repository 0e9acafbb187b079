#include "engine/view/trace.h"

#include <algorithm>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/op.h"
#include "nlohmann/json.hpp"

namespace dagrad {
namespace {

using Json = nlohmann::ordered_json;

const char* Category(NodeRole role) {
  switch (role) {
    case NodeRole::kGradient:
    case NodeRole::kCommunication: return "backward";
    case NodeRole::kOptimizer: return "update";
    case NodeRole::kForward: break;
  }
  return "forward";
}

// The trace's threads: the ops, and two rows of spans over them.
enum Track { kOps = 1, kPhases = 2, kScopes = 3 };

Json Metadata(const char* what, int tid, const char* name) {
  return {{"name", what}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", {{"name", name}}}};
}

// Block is a node's scope to two levels ("layers/0" of "layers/0/attn").
std::string Block(const std::string& scope) {
  const size_t first = scope.find('/');
  if (first == std::string::npos) return scope;
  const size_t second = scope.find('/', first + 1);
  return second == std::string::npos ? scope : scope.substr(0, second);
}

// Spans adds to `events`, on `tid`, one complete event for each run of
// consecutive events of `ops` whose `key` is the same.
void Spans(const Json& ops, int tid, const char* category,
           const std::function<std::string(const Json&)>& key, Json& events) {
  for (size_t i = 0; i < ops.size();) {
    const std::string name = key(ops[i]);
    size_t j = i + 1;
    while (j < ops.size() && key(ops[j]) == name) ++j;
    const double ts = ops[i]["ts"].get<double>();
    const double stop = ops[j - 1]["ts"].get<double>() + ops[j - 1]["dur"].get<double>();
    events.push_back({{"name", name.empty() ? "(top level)" : name}, {"cat", category},
                      {"ph", "X"}, {"ts", ts}, {"dur", stop - ts}, {"pid", 1}, {"tid", tid},
                      {"args", {{"ops", j - i}}}});
    i = j;
  }
}

Json OpEvent(const Node& n, size_t step, double ts_us, double dur_us) {
  Json args = {{"node", n.path()}, {"scope", n.scope}, {"op", n.op->name}, {"step", step},
               {"shape", n.shape.ToString()}, {"dtype", DTypeName(n.dtype)}};
  if (n.role == NodeRole::kCommunication) args["role"] = "communication";
  return {{"name", n.op->name}, {"cat", Category(n.role)}, {"ph", "X"}, {"ts", ts_us},
          {"dur", dur_us}, {"pid", 1}, {"tid", kOps}, {"args", std::move(args)}};
}

}  // namespace

absl::StatusOr<std::string> ChromeTraceJson(const Graph& g, const ExecutionPlan& plan,
                                            const OpProfile& profile) {
  if (profile.runs == 0 || profile.by_step.empty()) {
    return absl::FailedPreconditionError(
        "ChromeTraceJson: the plan has no profiled run; run it on an executor with "
        "ExecutorOptions::profile (dagrad's --profile)");
  }
  if (profile.by_step.size() != plan.steps.size()) {
    return absl::InvalidArgumentError(absl::StrCat("ChromeTraceJson: the profile times ",
                                                   profile.by_step.size(),
                                                   " steps, the plan has ", plan.steps.size()));
  }
  double origin = profile.by_step[0].last_start;
  for (const OpProfile::StepTime& t : profile.by_step) origin = std::min(origin, t.last_start);
  Json events = Json::array({Metadata("process_name", kOps, "dagrad"),
                             Metadata("thread_name", kOps, "ops (one at a time)"),
                             Metadata("thread_name", kPhases, "forward, backward, update"),
                             Metadata("thread_name", kScopes, "scopes")});
  Json ops = Json::array();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const NodeId id = plan.steps[s];
    if (id < 0 || id >= g.num_nodes() || g.node(id).op == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("ChromeTraceJson: step ", s, " runs node ", id, ", not an op of the graph"));
    }
    const OpProfile::StepTime& t = profile.by_step[s];
    ops.push_back(OpEvent(g.node(id), s, (t.last_start - origin) * 1e6, t.last_seconds * 1e6));
  }
  Spans(ops, kPhases, "phase", [](const Json& e) { return e["cat"].get<std::string>(); }, events);
  Spans(ops, kScopes, "scope",
        [](const Json& e) { return Block(e["args"]["scope"].get<std::string>()); }, events);
  events.insert(events.end(), ops.begin(), ops.end());
  Json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace dagrad
