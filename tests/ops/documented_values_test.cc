// The values the examples of the graph's, the executor's, the planner's and
// checkpoint's headers promise in their comments: the examples themselves
// run as HeaderExample.engine_*, extracted from the headers; these check
// what they give.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/plan/internal/plan_memory.h"
#include "engine/plan/planner.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad {
namespace {

TEST(DocumentedValues, GraphPathsAndAncestors) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value y = Exp(x), z = Neg(x);
  EXPECT_EQ(AncestorsOf(g, {y}), (std::vector<NodeId>{x.id(), y.id()}));
  EXPECT_EQ(DependedOn(g, {z, Value()}), (std::vector<bool>{true, false, true}));
  { Graph::Scope s(g, "encoder"); g.Input("x", DType::kFloat32, {2}); }
  EXPECT_TRUE(g.Find("encoder/x").ok());
  { Graph::ScopePathGuard in_grad(g, "grad"); }
  EXPECT_EQ(g.scope(), "");
  {
    Graph::Scope scope(g, "tok_emb");
    Value table = g.Parameter("weight", {5, 4}, Initializer::Normal(0, 1));
    EXPECT_EQ(table.path(), "tok_emb/weight");
    EXPECT_EQ(CheckpointName(table.node()), "tok_emb.weight");
  }
  Graph::Scope scope(g, "encoder/layers/0/linear1");
  EXPECT_EQ(CheckpointName(g.Parameter("weight", {2}, Initializer::Zeros()).node()),
            "encoder.layers.0.linear1.weight");
}

TEST(DocumentedValues, GraphRefusesPathsTwiceAndSlashes) {
  Graph g;
  g.Input("x", DType::kFloat32, {4});
  EXPECT_FALSE(g.Input("x", DType::kFloat32, {4}).ok());   // a path twice
  Graph h;
  EXPECT_FALSE(h.Parameter("tok_emb/weight", {5, 4}, Initializer::Zeros()).ok());
}

TEST(DocumentedValues, ExecutorFeedsAndVariables) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value y = g.Input("y", DType::kFloat32, {2});
  Value w = g.Parameter("w", {2}, Initializer::Ones());
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({Mul(Mul(x, y), w)}));
  ASSERT_OK_AND_ASSIGN(Tensor x_values, Tensor::FromVector<float>({2}, {2, 3}));
  ASSERT_OK_AND_ASSIGN(Tensor y_values, Tensor::FromVector<float>({2}, {5, 7}));
  ASSERT_OK_AND_ASSIGN(DeviceTensor xs, exec.Upload(x_values));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{y, y_values}}, {{x, xs}}, {}));
  EXPECT_EQ(out[0].data<float>()[1], 21);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> values, exec.ReadAll(g.Variables()));
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].data<float>()[1], 1);
}

TEST(DocumentedValues, CheckpointsRoundTrip) {
  const std::string path = testing::NewTempDir("documented_values") + "/ckpt.safetensors";
  Graph g;
  g.Parameter("a", {2}, Initializer::Ones());
  g.Parameter("b", {3}, Initializer::Zeros());
  Executor exec(g);
  ASSERT_OK(SaveVariables(exec, g.Parameters(), {{"dim", "64"}}, path));
  ASSERT_OK_AND_ASSIGN(auto metadata, LoadVariables(exec, g.Parameters(), path));
  EXPECT_EQ(std::stoi(metadata.at("dim")), 64);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ReadCheckpoint(path, {.require_checksums = true}));
  EXPECT_EQ(f.tensors.size(), 2u);
  ASSERT_OK_AND_ASSIGN(std::string bytes, ReadFile(path));
  ASSERT_OK_AND_ASSIGN(f, ParseCheckpoint(bytes));
  EXPECT_EQ(f.tensors.size(), 2u);
}

TEST(DocumentedValues, PlansAndTheirMemory) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {64, 64});
  Value w = g.Parameter("w", {64, 64}, Initializer::XavierUniform());
  Value loss = Sum(MatMul(x, w));
  ASSERT_OK_AND_ASSIGN(ExecutionPlan plan, PlanLayout(g, {loss}, {}));
  EXPECT_GT(plan.arena_bytes, 0);
  MemoryBudget need = PlanMemory(g, plan, /*host_device=*/true, [](NodeId) { return false; });
  EXPECT_GE(need.total().value_or(0), 64 * 64 * 4);   // w at least
}

}  // namespace
}  // namespace dagrad
