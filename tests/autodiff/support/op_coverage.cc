#include "tests/autodiff/support/op_coverage.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/executor.h"
#include "engine/status_macros.h"
#include "gtest/gtest.h"
#include "ops/registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tools/bench/op_timing.h"

namespace dagrad::testing {
namespace {

// What a case's configs of one mode reach: the ops whose kernels run
// (forward and gradients, after constant folding), the ops in the graph,
// and those with a node that takes or gives a 16-bit float.
struct Reached {
  std::set<std::string> run, in_graph, reduced;
};

bool TouchesReducedFloat(const Graph& g, const Node& n) {
  if (IsReducedFloat(n.dtype)) return true;
  for (NodeId in : n.inputs) {
    if (in != kNoNode && IsReducedFloat(g.node(in).dtype)) return true;
  }
  return false;
}

absl::Status Reach(const CrossCase& cc, Reached& r) {
  DAGRAD_ASSIGN_OR_RETURN(BuiltCase b, BuildCase(cc));
  ExecutorOptions options;
  options.plan.fold_constants = cc.fold_constants;
  Executor cpu(*b.graph, options);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, cpu.Compile(b.fetches));
  for (NodeId id : plan->info().steps) r.run.insert(std::string(b.graph->node(id).op->name));
  for (NodeId id = 0; id < b.graph->num_nodes(); ++id) {
    const Node& n = b.graph->node(id);
    if (n.kind != NodeKind::kOp) continue;
    r.in_graph.insert(std::string(n.op->name));
    if (TouchesReducedFloat(*b.graph, n)) r.reduced.insert(std::string(n.op->name));
  }
  return absl::OkStatus();
}

// ReachedIn is what the configs of `mode` reach, in dtype `only` when given.
absl::StatusOr<Reached> ReachedIn(const OpCase& c, OpMode mode,
                                  std::optional<DType> only = std::nullopt) {
  Reached r;
  for (const OpConfig& config : c.configs) {
    if (!(config.modes & mode)) continue;
    if (mode == kGradcheckMode) {
      if (std::find(config.dtypes.begin(), config.dtypes.end(), DType::kFloat64) ==
          config.dtypes.end()) {
        continue;
      }
      DAGRAD_ASSIGN_OR_RETURN(std::vector<std::string> ops, OpsGradchecked(config));
      r.run.insert(ops.begin(), ops.end());
      continue;
    }
    for (DType d : config.dtypes) {
      if (!only || d == *only) DAGRAD_RETURN_IF_ERROR(Reach(ToCrossCase(c, config, d), r));
    }
  }
  return r;
}

// Reduced is the 16-bit cell: the 16-bit floats the op takes
// (OpDef::reduced_floats), each one that a reduced config runs it on
// ("bf16 f16": a node of the op takes or gives that dtype, and the op's
// kernel runs, or it is a view); "-" for an op that takes none.
absl::StatusOr<std::string> Reduced(const OpCase& c, const OpDef* op, std::string& problem) {
  if (op == nullptr || op->reduced_floats == 0) return std::string("-");
  std::vector<std::string> cells;
  for (DType d : {DType::kBFloat16, DType::kFloat16}) {
    if (!(op->reduced_floats & DTypeBit(d))) continue;
    DAGRAD_ASSIGN_OR_RETURN(Reached r, ReachedIn(c, kReducedMode, d));
    if (r.reduced.count(c.op) && ((c.flags & kAlwaysView) || r.run.count(c.op))) {
      cells.push_back(DTypeSuffix(d));
    } else {
      problem = absl::StrCat("takes ", DTypeName(d), " but no reduced config runs it in ",
                             DTypeName(d));
    }
  }
  return cells.empty() ? std::string("NO") : absl::StrJoin(cells, " ");
}

// Backend is a cuda or isa cell.
std::string Backend(const OpCase& c, const Reached& r, std::string& problem, const char* mode) {
  if (c.flags & kComposite) return r.run.empty() ? "NO" : "yes";
  if (c.flags & kAlwaysView) {
    if (r.in_graph.count(c.op)) return "view";
  } else if (r.run.count(c.op)) {
    return "yes";
  }
  problem = absl::StrCat("no ", mode, " config of its case runs it");
  return "NO";
}

std::string Gradcheck(const OpCase& c, const OpDef* op, const Reached& r, std::string& problem) {
  if (c.flags & kComposite) return r.run.empty() ? "NO" : "yes";
  if (!op->differentiable) return "not differentiable";
  if (op->grad == nullptr) {
    if (!(c.flags & kBackwardOnly)) problem = "differentiable without a rule: flag kBackwardOnly";
    return "backward-only";
  }
  if (c.flags & kBackwardOnly) problem = "flagged kBackwardOnly but has a gradient rule";
  if (c.flags & kIntegerOutput) problem = "flagged kIntegerOutput but has a gradient rule";
  if (r.run.count(c.op)) return "yes";
  problem = "no gradcheck config differentiates through it";
  return "NO";
}

absl::StatusOr<OpCoverage> RowOf(const std::string& name, const OpDef* op) {
  OpCoverage row{.op = name};
  const OpCase* c = nullptr;
  for (const OpCase& each : AllOpCases()) {
    if (each.op == name) {
      ++row.cases;
      c = &each;
    }
  }
  if (row.cases != 1) {
    row.gradcheck = row.cuda = row.isa = row.reduced = row.timing = "NO";
    row.problem = absl::StrCat(row.cases, " cases (DAGRAD_OP_CASE), not 1");
    return row;
  }
  row.configs = static_cast<int>(c->configs.size());
  if (op == nullptr && !(c->flags & kComposite)) {
    row.problem = "names no op of AllOps(); a layer's case is flagged kComposite";
  }
  if (op != nullptr && (c->flags & kAlwaysView) && op->view == nullptr) {
    row.problem = "flagged kAlwaysView but its OpDef has no view";
  }
  DAGRAD_ASSIGN_OR_RETURN(Reached grad, ReachedIn(*c, kGradcheckMode));
  DAGRAD_ASSIGN_OR_RETURN(Reached cuda, ReachedIn(*c, kCudaMode));
  DAGRAD_ASSIGN_OR_RETURN(Reached isa, ReachedIn(*c, kIsaMode));
  std::string problem;
  row.gradcheck = op ? Gradcheck(*c, op, grad, problem) : (grad.run.empty() ? "NO" : "composite");
  row.cuda = Backend(*c, cuda, problem, "cuda");
  row.isa = Backend(*c, isa, problem, "isa");
  DAGRAD_ASSIGN_OR_RETURN(row.reduced, Reduced(*c, op, problem));
  row.timing = c->bench ? "bench" : (c->configs.empty() ? "NO" : "config");
  if (row.problem.empty()) row.problem = problem;
  return row;
}

}  // namespace

absl::StatusOr<OpCoverage> CoverageOf(const OpDef& op) { return RowOf(std::string(op.name), &op); }

absl::StatusOr<std::vector<OpCoverage>> CompositeCoverageRows() {
  std::vector<OpCoverage> rows;
  for (const OpCase& c : AllOpCases()) {
    if (FindOp(c.op) != nullptr) continue;
    DAGRAD_ASSIGN_OR_RETURN(OpCoverage row, RowOf(c.op, nullptr));
    rows.push_back(std::move(row));
  }
  return rows;
}

absl::StatusOr<std::vector<OpCoverage>> CoverageRows() {
  std::vector<OpCoverage> rows;
  for (const OpDef* op : AllOps()) {
    DAGRAD_ASSIGN_OR_RETURN(OpCoverage row, RowOf(std::string(op->name), op));
    rows.push_back(std::move(row));
  }
  DAGRAD_ASSIGN_OR_RETURN(std::vector<OpCoverage> composites, CompositeCoverageRows());
  rows.insert(rows.end(), composites.begin(), composites.end());
  return rows;
}

void ExpectComplete(const std::vector<OpCoverage>& rows) {
  bool complete = true;
  for (const OpCoverage& row : rows) {
    EXPECT_TRUE(row.problem.empty()) << "op '" << row.op << "': " << row.problem;
    complete = complete && row.problem.empty();
  }
  if (!complete) ADD_FAILURE() << "\n" << FormatCoverage(rows);
}

std::string FormatCoverage(const std::vector<OpCoverage>& rows) {
  std::string out =
      absl::StrFormat("%-24s %5s %7s  %-18s %-5s %-5s %-8s %-6s %s\n", "op", "cases", "configs",
                      "gradcheck", "cuda", "isa", "16-bit", "timing", "problem");
  for (const OpCoverage& r : rows) {
    absl::StrAppendFormat(&out, "%-24s %5d %7d  %-18s %-5s %-5s %-8s %-6s %s\n", r.op, r.cases,
                          r.configs, r.gradcheck, r.cuda, r.isa, r.reduced, r.timing, r.problem);
  }
  return out;
}

namespace {

absl::StatusOr<OpTimingGraph> TimingGraph(absl::string_view name) {
  const OpCase* c = FindOpCase(std::string(name));
  if (c == nullptr || (!c->bench && c->configs.empty())) {
    return absl::NotFoundError(
        absl::StrCat("no op case named '", name, "' (--op_coverage lists them)"));
  }
  OpTimingGraph t{.training = !c->configs.empty() && c->configs[0].training, .size = "bench"};
  CaseBuild build = c->bench;
  DType d = DType::kFloat32;
  if (!build) {
    const OpConfig& first = c->configs[0];
    build = first.build;
    if (std::find(first.dtypes.begin(), first.dtypes.end(), d) == first.dtypes.end()) {
      d = first.dtypes[0];
    }
    t.size = absl::StrCat("config ", first.name, " (", DTypeSuffix(d), ")");
  }
  const bool gradients =
      !(c->flags & (kIntegerOutput | kBackwardOnly)) && (c->bench || c->configs[0].gradients);
  const CrossCase cc{.name = std::string(name),
                     .build = [build, d](CaseBuilder& b) { build(b, d); },
                     .gradients = gradients};
  DAGRAD_ASSIGN_OR_RETURN(BuiltCase b, BuildCase(cc));
  t.feeds = b.builder->MakeFeeds(1);
  const size_t outputs = b.builder->outputs().size();
  t.forward.assign(b.fetches.begin(), b.fetches.begin() + outputs);
  if (b.fetches.size() > outputs) t.backward = b.fetches;
  t.graph = std::move(b.graph);
  return t;
}

[[maybe_unused]] const bool kTimingInstalled = SetOpTimingSource({
    .names =
        [] {
          std::vector<std::string> names;
          for (const OpCase& c : AllOpCases()) names.push_back(c.op);
          return names;
        },
    .build = TimingGraph,
    .coverage = []() -> absl::StatusOr<OpCoverageReport> {
      DAGRAD_ASSIGN_OR_RETURN(std::vector<OpCoverage> rows, CoverageRows());
      OpCoverageReport report{.table = FormatCoverage(rows), .complete = true};
      for (const OpCoverage& row : rows) report.complete &= row.problem.empty();
      return report;
    },
});

}  // namespace
}  // namespace dagrad::testing
