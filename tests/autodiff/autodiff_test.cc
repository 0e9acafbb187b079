// Autodiff structure: fan-out sums, absent gradients, broadcasting undone,
// gradient scopes and roles, and its errors.

#include "ops/autodiff/autodiff.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "ops/elementwise.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/matmul.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
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

// Detach (PyTorch's x.detach()): the value passes, its gradient does not.
TEST(Autodiff, DetachPassesTheValueNotTheGradient) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {3});
  Value y = Sum(x * Detach(x));  // dy/dx = x, not 2x
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(y, {x}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {y, grads[0]}, {{x, T<double>({3}, {1, -2, 3})}}));
  ExpectAllClose(out[0], {1 + 4 + 9}, 0, 0, "y");
  ExpectAllClose(out[1], {1, -2, 3}, 0, 0, "dy/dx");
  ASSERT_OK_AND_ASSIGN(grads, Gradients(Sum(Detach(x)), {x}));
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
  EXPECT_STATUS(Gradients(Value(), {x}).status(), absl::StatusCode::kInvalidArgument,
                "Gradients: the loss is a null Value");
  EXPECT_STATUS(Gradients(Sum(x), {x, Value()}).status(), absl::StatusCode::kInvalidArgument,
                "Gradients: wrt[1] is a null Value");
  // A second derivative through LayerNorm reaches layer_norm_grad, which
  // has no rule.
  ASSERT_OK_AND_ASSIGN(auto first, Gradients(Sum(Exp(LayerNorm(x, Value(), Value()))), {x}));
  EXPECT_STATUS(Gradients(Sum(first[0] * first[0]), {x}).status(),
                absl::StatusCode::kUnimplemented, "op 'layer_norm_grad' has no gradient rule");
}

// GELU's second derivative, both forms, against torch.autograd.grad with
// create_graph=True (float64, PyTorch 1.13).
TEST(Autodiff, SecondDerivativeOfGeluIsTorchs) {
  const std::vector<double> xs = {0.5, -1, 2, -3.5};
  const std::pair<GeluApproximate, std::vector<double>> forms[] = {
      {GeluApproximate::kNone,
       {0.61611432183752413, 0.24197072451914337, -0.10798193302637613, -0.0089449976242190407}},
      {GeluApproximate::kTanh,
       {0.615506895115985, 0.24214819798377296, -0.10787507995107845, -0.0085494591608650753}}};
  for (const auto& [form, want] : forms) {
    Graph g;
    Value x = g.Input("x", DType::kFloat64, {4});
    ASSERT_OK_AND_ASSIGN(auto first, Gradients(Sum(Gelu(x, form)), {x}));
    ASSERT_OK_AND_ASSIGN(auto second, Gradients(Sum(first[0]), {x}));
    ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {second[0]}, {{x, T<double>({4}, xs)}}));
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(out[0].data<double>()[i], want[i], 1e-14) << GeluApproximateName(form) << i;
    }
  }
}

TEST(Autodiff, MissingRuleNamesNodeAndPathToLoss) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value dx;
  {
    Graph::Scope s(g, "norm");
    dx = LayerNormGrad(x, Value(), x);
  }
  Value loss = Sum(Exp(dx));
  EXPECT_STATUS(Gradients(loss, {x}).status(), absl::StatusCode::kUnimplemented,
                "op 'layer_norm_grad' has no gradient rule; node 'norm/layer_norm_grad' lies on "
                "the path to the loss: norm/layer_norm_grad -> exp -> sum");
  // The failed walk leaves the graph's scope as it found it.
  EXPECT_EQ(g.scope(), "");
}

// Gradients of slices that tile a value along one axis (q, k and v of a
// packed projection) are concatenated, not added; the axis may be negative.
TEST(Autodiff, GradientsOfTilingSlicesAreConcatenated) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {2, 5});
  Value middle = Slice(x, 1, 1, 3);
  Value loss = Sum(Slice(x, 1, 3, 5) * 3.0) + Sum(Slice(x, -1, 0, 1) * 2.0) +
               Sum(middle * middle);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(loss, {x}));
  EXPECT_EQ(grads[0].node().op->name, "concat");
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0]}, {{x, T<double>({2, 5}, {0, 1, 2, 3, 4,
                                                                               5, 6, 7, 8, 9})}}));
  ExpectAllClose(out[0], {2, 2, 4, 3, 3, 2, 12, 14, 3, 3}, 0, 0, "d loss / dx");
}

// Slices that leave a gap, or are strided, are summed as usual.
TEST(Autodiff, GradientsOfNonTilingSlicesAreAdded) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {4});
  Value gap = Sum(Slice(x, 0, 0, 1)) + Sum(Slice(x, 0, 2, 4));
  Value strided = Sum(Slice(x, 0, 0, 4, 2)) + Sum(Slice(x, 0, 1, 4, 2));
  for (const auto& [loss, want] : {std::pair{gap, std::vector<double>{1, 0, 1, 1}},
                                   std::pair{strided, std::vector<double>{1, 1, 1, 1}}}) {
    ASSERT_OK_AND_ASSIGN(auto grads, Gradients(loss, {x}));
    EXPECT_EQ(grads[0].node().op->name, "add");
    ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0]}, {{x, T<double>({4}, {1, 2, 3, 4})}}));
    ExpectAllClose(out[0], want, 0, 0, "d loss / dx");
  }
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

// Random wrt sets over parameters the loss uses, parameters it does not,
// and parameters (and ops) added after it: each gradient is null exactly
// when the loss does not depend on the value, and the others are the hand-
// worked d/dp Sum(c_p * p * p) = 2 c_p p. Under ASan this also checks that
// no wrt id past the loss is read (issue 23, bug 1).
TEST(Autodiff, RandomWrtSetsIncludingValuesMadeAfterTheLoss) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 40; ++trial) {
    Graph g;
    const int before = 1 + static_cast<int>(rng() % 4), after = 1 + static_cast<int>(rng() % 4);
    std::vector<Value> params;
    std::vector<double> coef;  // 0: the loss does not use the parameter
    for (int i = 0; i < before; ++i) {
      params.push_back(g.Parameter(absl::StrCat("p", i), {2}, Initializer::Constant(i + 1),
                                   DType::kFloat64));
      coef.push_back(static_cast<double>(rng() % 3));
    }
    Value loss;
    for (int i = 0; i < before; ++i) {
      if (coef[i] == 0) continue;
      Value term = Sum(params[i] * params[i] * coef[i]);
      loss = loss.is_null() ? term : loss + term;
    }
    const bool fallback = loss.is_null();
    if (fallback) loss = Sum(params[0] * 0.0);  // depends on p0, with gradient 0
    for (int i = 0; i < after; ++i) {
      params.push_back(g.Parameter(absl::StrCat("q", i), {3}, Initializer::Ones(),
                                   DType::kFloat64));
      coef.push_back(0);
      Sum(params.back() * loss);  // a consumer of the loss, made after it
    }
    std::vector<Value> wrt;
    std::vector<int> which;
    const int k = 1 + static_cast<int>(rng() % 6);
    for (int j = 0; j < k; ++j) {
      which.push_back(static_cast<int>(rng() % params.size()));
      wrt.push_back(params[which.back()]);
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(loss, wrt));
    ASSERT_EQ(grads.size(), wrt.size());
    for (int j = 0; j < k; ++j) {
      const int p = which[j];
      const bool used = coef[p] != 0 || (p == 0 && fallback);
      SCOPED_TRACE(absl::StrCat("trial ", trial, ", wrt ", j, " = ", params[p].path()));
      ASSERT_EQ(grads[j].is_null(), !used);
      if (!used) continue;
      ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[j]}));
      const double want = 2 * coef[p] * (p + 1);
      ExpectAllClose(out[0], {want, want}, 0, 0, "2 c p");
    }
  }
}

}  // namespace
}  // namespace dagrad::testing
