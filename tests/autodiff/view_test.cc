// The viewer's data: autodiff's record of which forward node each gradient
// node came from (Node::gradient_of), the view model's nodes, roles and
// arena buffers (engine/view/view_model.h), the Chrome trace of a profiled
// run against the Trace Event Format's documented fields
// (engine/view/trace.h), and the page (engine/view/viewer_html.h).

#include <set>

#include "absl/strings/match.h"
#include "engine/executor.h"
#include "engine/view/trace.h"
#include "engine/view/view_model.h"
#include "engine/view/viewer_html.h"
#include "nlohmann/json.hpp"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/optimizer.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using Json = nlohmann::json;

// y = x · w under "layer", loss = sum(exp(y)), and an SGD step on w.
struct ViewedStep {
  Graph g;
  Value x, w, y, e, loss;
  TrainingStep ts;

  ViewedStep() {
    x = g.Input("x", DType::kFloat32, {2, 3});
    {
      Graph::Scope s(g, "layer");
      w = g.Parameter("w", {3, 4}, Initializer::XavierUniform());
      y = MatMul(x, w);
      e = Exp(y);
    }
    loss = Sum(e);
    ts = *BuildTrainingStep(loss, {w}, {.kind = OptimizerKind::kSgd, .momentum = 0.0});
  }
  std::vector<Value> Roots() const {
    std::vector<Value> roots = ts.updates;
    roots.push_back(ts.loss);
    return roots;
  }
};

TEST(GradientOf, EachGradientNodeNamesTheForwardNodeWhoseRuleBuiltIt) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 3});
  Value w = g.Parameter("w", {3, 4}, Initializer::XavierUniform());
  Value y = MatMul(x, w);
  Value loss = Sum(Exp(y));
  const NodeId before = g.num_nodes();
  std::vector<Value> grads = *Gradients(loss, {w});
  // dw = xᵀ · dy is built by matmul's rule.
  EXPECT_EQ(grads[0].node().gradient_of, y.id());
  std::set<NodeId> origins;
  for (NodeId id = before; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    ASSERT_EQ(n.role, NodeRole::kGradient) << n.path();
    ASSERT_NE(n.gradient_of, kNoNode) << n.path();
    EXPECT_EQ(g.node(n.gradient_of).role, NodeRole::kForward) << n.path();
    origins.insert(n.gradient_of);
  }
  // Exp's rule (dy = de · exp(y)) and matmul's made nodes; x, an input, got none.
  EXPECT_TRUE(origins.contains(y.id() + 1));
  EXPECT_TRUE(origins.contains(y.id()));
  EXPECT_FALSE(origins.contains(x.id()));
  for (NodeId id = 0; id < before; ++id) EXPECT_EQ(g.node(id).gradient_of, kNoNode);
}

TEST(ViewModel, NodesCarryTypeScopeRoleAndPairing) {
  ViewedStep s;
  auto json = ViewModelJson(s.g, s.Roots(), {.title = "t", .losses = {s.loss}});
  ASSERT_TRUE(json.ok()) << json.status();
  const Json doc = Json::parse(*json);
  EXPECT_EQ(doc["title"], "t");
  std::map<int, Json> by_id;
  for (const Json& n : doc["nodes"]) by_id[n["id"].get<int>()] = n;
  const Json& y = by_id.at(s.y.id());
  EXPECT_EQ(y["op"], "matmul");
  EXPECT_EQ(y["scope"], "layer");
  EXPECT_EQ(y["role"], "forward");
  EXPECT_EQ(y["dtype"], "float32");
  EXPECT_EQ(y["shape"], Json({2, 4}));
  EXPECT_EQ(y["bytes"], 2 * 4 * 4);
  EXPECT_EQ(y["inputs"], Json({s.x.id(), s.w.id()}));
  EXPECT_EQ(by_id.at(s.w.id())["kind"], "parameter");
  EXPECT_EQ(by_id.at(s.x.id())["kind"], "input");
  EXPECT_EQ(by_id.at(s.loss.id())["loss"], true);
  EXPECT_EQ(by_id.at(s.ts.grads[0].id())["gradient_of"], s.y.id());
  EXPECT_EQ(by_id.at(s.ts.grads[0].id())["role"], "gradient");
  EXPECT_EQ(by_id.at(s.ts.updates[0].id())["role"], "optimizer");
  EXPECT_FALSE(doc.contains("buffers"));
}

TEST(ViewModel, BuffersAreThePlansArenaRootsWithTheirLifetimes) {
  ViewedStep s;
  Executor exec(s.g);
  auto plan = exec.Compile({s.ts.loss}, s.ts.updates);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const ExecutionPlan& info = (*plan)->info();
  auto json = ViewModelJson(s.g, s.Roots(), {.plan = &info});
  ASSERT_TRUE(json.ok()) << json.status();
  const Json doc = Json::parse(*json);
  EXPECT_EQ(doc["steps"], info.steps.size());
  std::map<int, Json> by_id;
  for (const Json& n : doc["nodes"]) by_id[n["id"].get<int>()] = n;
  // y, (2, 4) float32, lives in the arena from its step to exp's, which reads it.
  const Json& y = by_id.at(s.y.id());
  const Json& buffer = doc["buffers"][y["buffer"].get<int>()];
  EXPECT_GE(buffer["bytes"].get<int64_t>(), 32);
  EXPECT_LE(buffer["first"].get<int>(), y["step"].get<int>());
  EXPECT_GE(buffer["last"].get<int>(), by_id.at(s.e.id())["step"].get<int>());
  for (const Json& b : doc["buffers"]) {
    EXPECT_LE(b["offset"].get<int64_t>() + b["bytes"].get<int64_t>(), doc["arena_bytes"]);
    for (const Json& id : b["nodes"]) {
      const Json& n = by_id.at(id.get<int>());
      if (n.contains("step")) {
        EXPECT_GE(n["step"].get<int>(), b["first"].get<int>());
        EXPECT_LE(n["step"].get<int>(), b["last"].get<int>());
      }
    }
  }
  EXPECT_FALSE(by_id.at(s.y.id()).contains("seconds"));
}

TEST(ViewModel, RefusesForeignValuesAndAPlanOfAnotherGraph) {
  ViewedStep s, other;
  EXPECT_EQ(ViewModelJson(s.g, {other.loss}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ViewModelJson(s.g, {Value()}).status().code(), absl::StatusCode::kInvalidArgument);
  Graph small;
  small.Input("x", DType::kFloat32, {1});
  Executor exec(s.g);
  auto plan = exec.Compile({s.ts.loss}, s.ts.updates);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(ViewModelJson(small, {}, {.plan = &(*plan)->info()}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Trace, OneCompleteEventPerOpWithTheDocumentedFields) {
  ViewedStep s;
  Executor exec(s.g, {.profile = true});
  auto plan = exec.Compile({s.ts.loss}, s.ts.updates);
  ASSERT_TRUE(plan.ok()) << plan.status();
  Tensor x = *Tensor::Zeros(DType::kFloat32, {2, 3});
  EXPECT_EQ(ChromeTraceJson(s.g, (*plan)->info(), (*plan)->profile()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  for (double step : {1.0, 2.0}) {
    ASSERT_TRUE(exec.Run(**plan, {{s.x, x}, {s.ts.lr, Tensor::Scalar<double>(0.1)},
                                  {s.ts.step, Tensor::Scalar<double>(step)}})
                    .ok());
  }
  auto trace = ChromeTraceJson(s.g, (*plan)->info(), (*plan)->profile());
  ASSERT_TRUE(trace.ok()) << trace.status();
  const Json doc = Json::parse(*trace);
  ASSERT_TRUE(doc["traceEvents"].is_array());
  size_t ops = 0;
  double previous = 0;
  std::vector<std::string> phases;
  for (const Json& e : doc["traceEvents"]) {
    ASSERT_TRUE(e["ph"].is_string() && e["pid"].is_number_integer() && e["tid"].is_number_integer());
    ASSERT_TRUE(e["name"].is_string());
    if (e["ph"] == "M") continue;
    ASSERT_EQ(e["ph"], "X");
    ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e["cat"].is_string());
    EXPECT_GE(e["dur"].get<double>(), 0);
    if (e["cat"] == "phase") phases.push_back(e["name"]);
    if (e["tid"] != 1) continue;
    EXPECT_GE(e["ts"].get<double>(), previous);
    previous = e["ts"].get<double>();
    EXPECT_TRUE(e["args"]["scope"].is_string());
    EXPECT_EQ(e["args"]["step"], ops);
    ++ops;
  }
  EXPECT_EQ(ops, (*plan)->info().steps.size());
  // A chain's forward ops have the lowest ids, so run first; updates run last.
  EXPECT_EQ(phases, (std::vector<std::string>{"forward", "backward", "update"}));
}

// A run that failed half way added its ops' times to the plan's, and its
// steps' starts to the last run's: the trace had negative durations.
TEST(Trace, AFailedRunAddsNothingToTheProfile) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value n = g.Input("n", DType::kInt64, {2});
  Value sum = Sum(Exp(x));  // runs before the division fails
  Value quotient = Div(g.Constant(T<int64_t>({2}, {6, 8})), n);
  Executor exec(g, {.profile = true});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({sum, quotient}));
  const Tensor ones = T<float>({2}, {1, 1});
  ASSERT_OK(exec.Run(*plan, {{x, ones}, {n, T<int64_t>({2}, {3, 4})}}).status());
  const OpProfile before = plan->profile();
  EXPECT_STATUS(exec.Run(*plan, {{x, ones}, {n, T<int64_t>({2}, {3, 0})}}).status(),
                absl::StatusCode::kInvalidArgument, "integer division by zero");
  const OpProfile& after = plan->profile();
  EXPECT_EQ(after.runs, 1);
  ASSERT_EQ(after.by_step.size(), before.by_step.size());
  for (size_t i = 0; i < after.by_step.size(); ++i) {
    EXPECT_EQ(after.by_step[i].seconds, before.by_step[i].seconds) << i;
    EXPECT_EQ(after.by_step[i].last_start, before.by_step[i].last_start) << i;
  }
  EXPECT_EQ(after.by_op.at("exp").calls, 1);
  ASSERT_TRUE(ChromeTraceJson(g, plan->info(), after).ok());
}

TEST(ViewerHtml, IsOnePageWithEverythingInsideOrSaysHowToInstall) {
  if (!ViewerAvailable().ok()) {
    EXPECT_THAT(std::string(ViewerAvailable().message()), ::testing::HasSubstr("tools/setup.sh"));
    GTEST_SKIP() << ViewerAvailable().message();
  }
  const std::string title = "</script><b> <!-- a comment's start";
  auto html = ViewerHtml(nlohmann::json({{"title", title}, {"nodes", nlohmann::json::array()}}).dump());
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_FALSE(absl::StrContains(*html, "</script><b>"));
  // The page's JSON.parse reads the model back as it was ("<\!--" it refused).
  const std::string open = "id=\"dagrad-model\">";
  const size_t begin = html->find(open) + open.size();
  const std::string json = html->substr(begin, html->find("</script>", begin) - begin);
  EXPECT_FALSE(absl::StrContains(json, "<"));
  ASSERT_TRUE(nlohmann::json::accept(json)) << json;
  EXPECT_EQ(nlohmann::json::parse(json)["title"], title);
  EXPECT_FALSE(absl::StrContains(*html, "src=\"http"));
  EXPECT_EQ(ViewerHtml("not json").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dagrad::testing
