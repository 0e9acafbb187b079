// Autodiff structure: fan-out sums, absent gradients, broadcasting undone,
// gradient scopes and roles, and its errors.

#include "engine/autodiff.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(Autodiff, FanOutGradientsAreSummed) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {3});
  Value y = Sum(x * x + Exp(x) + x);  // dy/dx = 2x + e^x + 1
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(y, {x}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0]}, {{x, T<double>({3}, {0, 1, 2})}}));
  ExpectAllClose(out[0], {2, 3 + std::exp(1.0), 5 + std::exp(2.0)}, 1e-12, 0, "fan-out");
}

TEST(Autodiff, UnusedInputsHaveNoGradient) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value unused = g.Input("unused", DType::kFloat32, {2});
  Value y = Sum(x);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(y, {x, unused}));
  EXPECT_TRUE(grads[0].ok());
  EXPECT_TRUE(grads[1].is_null());
}

TEST(Autodiff, GradientsStopAtNonDifferentiableOps) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value mask = Cast(Greater(x, ScalarLike(x, 0.0)), DType::kFloat32);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(mask), {x}));
  EXPECT_TRUE(grads[0].is_null());
}

TEST(Autodiff, BroadcastGradientIsReducedToTheInputShape) {
  Graph g;
  Value a = g.Input("a", DType::kFloat32, {2, 3});
  Value b = g.Input("b", DType::kFloat32, {3});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(a * b), {a, b}));
  EXPECT_EQ(grads[1].shape(), Shape({3}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0], grads[1]},
                                         {{a, T<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                                          {b, T<float>({3}, {7, 8, 9})}}));
  ExpectAllClose(out[0], {7, 8, 9, 7, 8, 9}, 0, 0, "da");
  ExpectAllClose(out[1], {5, 7, 9}, 0, 0, "db = column sums of a");
}

TEST(Autodiff, GradientNodesLiveUnderGradScope) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 2});
  Value w;
  Value y;
  {
    Graph::Scope s(g, "layer");
    w = g.Parameter("w", {2, 2}, Initializer::Ones());
    y = Sum(Tanh(MatMul(x, w)));
  }
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(y, {w}));
  const Node& n = grads[0].node();
  EXPECT_EQ(n.role, NodeRole::kGradient);
  EXPECT_EQ(n.scope, "grad/layer");
  EXPECT_EQ(g.scope(), "");
  EXPECT_EQ(y.node().role, NodeRole::kForward);
}

TEST(Autodiff, Errors) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value i = g.Input("i", DType::kInt64, {2});
  EXPECT_STATUS(Gradients(x * 2.0, {x}).status(), absl::StatusCode::kInvalidArgument,
                "has shape (2,); reduce it to one element or pass a seed");
  EXPECT_STATUS(Gradients(Sum(x), {i}).status(), absl::StatusCode::kInvalidArgument,
                "cannot differentiate with respect to int64 'i'");
  EXPECT_STATUS(Gradients(Sum(i), {x}).status(), absl::StatusCode::kInvalidArgument,
                "is int64, not float");
  // A second derivative through GELU reaches gelu_grad, which has no rule.
  ASSERT_OK_AND_ASSIGN(auto first, Gradients(Sum(Gelu(x)), {x}));
  EXPECT_STATUS(Gradients(Sum(first[0]), {x}).status(), absl::StatusCode::kUnimplemented,
                "op 'gelu_grad' has no gradient rule");
}

TEST(Autodiff, MissingRuleNamesNodeAndPathToLoss) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value dx;
  {
    Graph::Scope s(g, "act");
    dx = GeluGrad(x, x);
  }
  Value loss = Sum(Exp(dx));
  EXPECT_STATUS(Gradients(loss, {x}).status(), absl::StatusCode::kUnimplemented,
                "op 'gelu_grad' has no gradient rule; node 'act/gelu_grad' lies on the path to "
                "the loss: act/gelu_grad -> exp -> sum");
}

TEST(Autodiff, SeedGradientForNonScalarOutput) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3});
  Value seed = g.Input("seed", DType::kFloat32, {3});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(x * 3.0, {x}, seed));
  // The gradient of a linear map does not read x, so only the seed is fed.
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0]}, {{seed, T<float>({3}, {1, 0, -1})}}));
  ExpectAllClose(out[0], {3, 0, -3}, 0, 0, "vjp");
}

}  // namespace
}  // namespace dagrad::testing
