// layer_norm: hand-worked values, errors. Its op cases are in
// layer_norm_cases.cc; PyTorch goldens for the forward and backward are in golden_ops_test.cc.

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "ops/autodiff/autodiff.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Row [1, 2, 3, 4]: mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4
// = 1.25. Row [-3, -3, 5, 5]: mean 1, variance 16.
TEST(LayerNorm, HandWorkedValues) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {2, 4});
  Value gamma = g.Input("gamma", DType::kFloat64, {4});
  Value beta = g.Input("beta", DType::kFloat64, {4});
  const double eps = 1e-5;
  Feeds feeds = {{x, T<double>({2, 4}, {1, 2, 3, 4, -3, -3, 5, 5})},
                 {gamma, T<double>({4}, {1, 2, -1, 0.5})},
                 {beta, T<double>({4}, {0, 1, 0, -1})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {LayerNorm(x, Value(), Value(), eps),
                                             LayerNorm(x, gamma, beta, eps)},
                                         feeds));
  const double r1 = 1 / std::sqrt(1.25 + eps), r2 = 1 / std::sqrt(16 + eps);
  ExpectAllClose(out[0], {-1.5 * r1, -0.5 * r1, 0.5 * r1, 1.5 * r1, -4 * r2, -4 * r2, 4 * r2,
                          4 * r2},
                 1e-14, 1e-15, "plain");
  ExpectAllClose(out[1], {-1.5 * r1, -1 * r1 + 1, -0.5 * r1, 0.75 * r1 - 1, -4 * r2,
                          -8 * r2 + 1, -4 * r2, 2 * r2 - 1},
                 1e-14, 1e-15, "affine");
}

// Row r of x is [r, r + 1, r + 2, r + 3]: every row normalises to
// [-1.5, -0.5, 0.5, 1.5] / sqrt(1.25 + eps), and a row's dx for
// w = [1, 0, 0, 0] is rstd * (e0 - 1/4 - xhat * xhat[0] / 4), whichever
// thread of 4 computes it.
void CheckManyRows() {
  const int64_t rows = 20000;  // 4 chunks of at least 16384 elements
  std::vector<float> xv, wv;
  for (int64_t r = 0; r < rows; ++r) {
    for (int i = 0; i < 4; ++i) {
      xv.push_back(static_cast<float>(r + i));
      wv.push_back(i == 0 ? 1.0f : 0.0f);
    }
  }
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {rows, 4});
  Value w = g.Input("w", DType::kFloat32, {rows, 4});
  Value y = LayerNorm(x, Value(), Value());
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Mul(y, w)), {x}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {y, grads[0]}, {{x, T<float>({rows, 4}, xv)},
                                                            {w, T<float>({rows, 4}, wv)}}));
  const double rstd = 1 / std::sqrt(1.25 + 1e-5);
  const double xhat[4] = {-1.5 * rstd, -0.5 * rstd, 0.5 * rstd, 1.5 * rstd};
  std::vector<double> want_y, want_dx;
  for (int64_t r = 0; r < rows; ++r) {
    for (int i = 0; i < 4; ++i) {
      want_y.push_back(xhat[i]);
      want_dx.push_back(rstd * ((i == 0) - 0.25 - xhat[i] * xhat[0] / 4));
    }
  }
  ExpectAllClose(out[0], want_y, 1e-6, 1e-6, "y");
  ExpectAllClose(out[1], want_dx, 1e-5, 1e-6, "dx");
}

TEST(LayerNorm, ManyRowsAcrossThreads) {
  const int threads = NumThreads();
  ASSERT_TRUE(SetNumThreads(4).ok());
  CheckManyRows();  // returns early on a failed ASSERT; the count is restored
  EXPECT_TRUE(SetNumThreads(threads).ok());
}

// layer_norm_param_grad sums rows in blocks fixed by D (1024 rows at D =
// 16, so 5 here) and adds the blocks in order: the same bits at 1, 2 and 4
// threads, and the sums of g * layer_norm(x) and of g in float64.
TEST(LayerNorm, ParamGradIsTheSameAtEveryThreadCount) {
  const Shape shape({5000, 16});
  const Tensor xv = ToFloat32(Random(DType::kFloat64, shape, 3, -2, 5));
  const Tensor gv = ToFloat32(Random(DType::kFloat64, shape, 4));
  Graph g;
  Value x = g.Input("x", DType::kFloat32, shape), dy = g.Input("dy", DType::kFloat32, shape);
  Value x64 = g.Input("x64", DType::kFloat64, shape);
  Value dy64 = g.Input("dy64", DType::kFloat64, shape);
  Value composed = Concat({Sum(Mul(dy64, LayerNorm(x64, Value(), Value())), {0}, true),
                           Sum(dy64, {0}, true)},
                          0);
  const Feeds feeds = {{x, xv},
                       {dy, gv},
                       {x64, T<double>(shape, AsDoubles(xv))},
                       {dy64, T<double>(shape, AsDoubles(gv))}};
  const int threads = NumThreads();
  std::vector<std::vector<double>> got;
  for (int n : {1, 2, 4}) {
    ASSERT_TRUE(SetNumThreads(n).ok());
    auto out = RunOnce(g, {LayerNormParamGrad(x, dy), composed}, feeds);
    ASSERT_TRUE(SetNumThreads(threads).ok());
    ASSERT_OK(out.status());
    got.push_back(AsDoubles((*out)[0]));
    ExpectAllClose((*out)[0], AsDoubles((*out)[1]), 1e-6, 1e-6, absl::StrCat(n, " threads"));
  }
  EXPECT_EQ(got[1], got[0]);
  EXPECT_EQ(got[2], got[0]);
}

// layer_norm and layer_norm_grad may write over x: each row is read whole
// before any of it is written. Where x is an intermediate that dies there,
// the planner lets them, and the values are those of HandWorkedValues.
TEST(LayerNorm, InPlaceOverADyingInput) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {2, 4});
  Value dy = g.Input("dy", DType::kFloat64, {2, 4});
  const double eps = 1e-5;
  Value y = LayerNorm(x + 0.0, Value(), Value(), eps);
  Value dx = LayerNormGrad(x * 1.0, Value(), dy, eps);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y, dx}));
  EXPECT_EQ(plan->info().num_in_place, 2);
  EXPECT_EQ(plan->info().root[y.id()], plan->info().root[y.node().inputs[0]]);
  ASSERT_OK_AND_ASSIGN(auto out,
                       exec.Run(*plan, {{x, T<double>({2, 4}, {1, 2, 3, 4, -3, -3, 5, 5})},
                                        {dy, T<double>({2, 4}, {1, 0, 0, 0, 1, 0, 0, 0})}}));
  const double r1 = 1 / std::sqrt(1.25 + eps), r2 = 1 / std::sqrt(16 + eps);
  const double h1[4] = {-1.5 * r1, -0.5 * r1, 0.5 * r1, 1.5 * r1};
  const double h2[4] = {-4 * r2, -4 * r2, 4 * r2, 4 * r2};
  std::vector<double> want_y, want_dx;
  for (auto [h, r] : {std::pair{h1, r1}, std::pair{h2, r2}}) {
    for (int i = 0; i < 4; ++i) {
      want_y.push_back(h[i]);
      // dy = e0: dx = rstd * (e0 - 1/4 - xhat * xhat[0] / 4).
      want_dx.push_back(r * ((i == 0) - 0.25 - h[i] * h[0] / 4));
    }
  }
  ExpectAllClose(out[0], want_y, 1e-14, 1e-15, "y");
  ExpectAllClose(out[1], want_dx, 1e-12, 1e-14, "dx");
}

// The row kernels take moments four rows at a time before writing any of
// them: in place over 9 rows (two groups and a rest) they give the bits
// they give into a buffer of their own.
TEST(LayerNorm, InPlaceOverGroupsOfRows) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {9, 6});
  Value dy = g.Input("dy", DType::kFloat32, {9, 6});
  Value gamma = g.Input("gamma", DType::kFloat32, {6});
  const std::vector<Value> fetches = {LayerNorm(x + 0.0, gamma, Value()),
                                      LayerNormGrad(x * 1.0, gamma, dy),
                                      LayerNorm(x, gamma, Value()), LayerNormGrad(x, gamma, dy)};
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(fetches));
  EXPECT_EQ(plan->info().num_in_place, 2);
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, Random(DType::kFloat32, {9, 6}, 8, -3, 9)},
                                                  {dy, Random(DType::kFloat32, {9, 6}, 9)},
                                                  {gamma, Random(DType::kFloat32, {6}, 10)}}));
  EXPECT_EQ(AsDoubles(out[0]), AsDoubles(out[2]));
  EXPECT_EQ(AsDoubles(out[1]), AsDoubles(out[3]));
}

// No rows: dgamma and dbeta are empty sums, zeros.
TEST(LayerNorm, ParamGradOfNoRowsIsZero) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {0, 3});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {LayerNormParamGrad(x, x)},
                                         {{x, T<float>({0, 3}, std::vector<float>{})}}));
  EXPECT_EQ(out[0].shape(), Shape({2, 3}));
  ExpectAllClose(out[0], std::vector<double>(6, 0.0), 0, 0, "dparams");
}

// A constant row has variance 0: its output is beta, and eps keeps 1/std
// finite (1/sqrt(eps)), as in PyTorch.
TEST(LayerNorm, ConstantRowGivesBeta) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {1, 3});
  Value beta = g.Input("beta", DType::kFloat32, {3});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {LayerNorm(x, Value(), beta)},
                                         {{x, T<float>({1, 3}, {7, 7, 7})},
                                          {beta, T<float>({3}, {0.5, -1, 2})}}));
  ExpectAllClose(out[0], {0.5, -1, 2}, 0, 0, "beta");
}

// A float64 row's sum rounds: a constant row of 3.3e22 (and of 1e100, of
// 768 elements) had a mean an ulp off, and xhat +-1 where it is 0, so the
// output was +-gamma + beta and gamma's gradient g * xhat.
TEST(LayerNorm, LargeConstantFloat64RowGivesBeta) {
  for (const auto& [c, d] : {std::pair{3.3e22, int64_t{3}}, std::pair{1e100, int64_t{768}},
                             std::pair{-7e35, int64_t{8}}}) {
    Graph g;
    Value x = g.Input("x", DType::kFloat64, {2, d});
    Value gamma = g.Parameter("gamma", {d}, Initializer::Constant(3), DType::kFloat64);
    Value beta = g.Parameter("beta", {d}, Initializer::Constant(0.5), DType::kFloat64);
    Value y = LayerNorm(x, gamma, beta);
    ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(y), {gamma}));
    ASSERT_OK_AND_ASSIGN(auto out,
                         RunOnce(g, {y, grads[0]}, {{x, T<double>({2, d}, std::vector<double>(2 * d, c))}}));
    ExpectAllClose(out[0], std::vector<double>(2 * d, 0.5), 0, 0, absl::StrCat(c, " y"));
    ExpectAllClose(out[1], std::vector<double>(d, 0.0), 0, 0, absl::StrCat(c, " dgamma"));
  }
}

// dx of sum(layer_norm(x) * w) without gamma: rows of dx sum to 0 (shifting
// a row does not change its normalisation), and for w = 1 dx is 0.
TEST(LayerNorm, GradientOfASumIsZero) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {3, 5});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(LayerNorm(x, Value(), Value())), {x}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0]}, {{x, Random(DType::kFloat64, {3, 5}, 7)}}));
  ExpectAllClose(out[0], std::vector<double>(15, 0.0), 0, 1e-12, "dx");
}

// layer_norm_grad has no rule of its own (kBackwardOnly): a second
// derivative with respect to x says so, naming it.
TEST(LayerNorm, SecondDerivativeInXIsUnimplemented) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {2, 3});
  Value w = g.Input("w", DType::kFloat64, {2, 3});
  ASSERT_OK_AND_ASSIGN(auto dx, Gradients(Sum(Mul(LayerNorm(x, Value(), Value()), w)), {x}));
  EXPECT_EQ(dx[0].node().op->name, "layer_norm_grad");
  EXPECT_STATUS(Gradients(Sum(Mul(dx[0], dx[0])), {x}).status(),
                absl::StatusCode::kUnimplemented, "op 'layer_norm_grad' has no gradient rule");
}

TEST(LayerNorm, Errors) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 3, 4});
  Value gamma = g.Input("gamma", DType::kFloat32, {4});
  Value bad_gamma = g.Input("bad_gamma", DType::kFloat32, {3});
  Value gamma64 = g.Input("gamma64", DType::kFloat64, {4});
  Value ints = g.Input("ints", DType::kInt64, {2, 4});
  Value scalar = g.Input("scalar", DType::kFloat32, {});
  EXPECT_STATUS(LayerNorm(x, gamma, Value(), -1e-5).status(),
                absl::StatusCode::kInvalidArgument,
                "layer_norm 'layer_norm': eps must be a finite number > 0, got -1e-05");
  EXPECT_STATUS(LayerNorm(x, gamma, Value(), 0).status(), absl::StatusCode::kInvalidArgument,
                "eps must be a finite number > 0, got 0");
  EXPECT_STATUS(LayerNorm(x, Value(), Value(), std::nan("")).status(),
                absl::StatusCode::kInvalidArgument, "got nan");
  EXPECT_STATUS(LayerNorm(x, bad_gamma, Value()).status(), absl::StatusCode::kInvalidArgument,
                "gamma must be (D,) = (4,), got (3,) [inputs: float32 (2, 3, 4), float32 (3,), "
                "none]");
  EXPECT_STATUS(LayerNorm(x, Value(), bad_gamma).status(), absl::StatusCode::kInvalidArgument,
                "beta must be (D,) = (4,), got (3,)");
  EXPECT_STATUS(LayerNorm(x, gamma64, Value()).status(), absl::StatusCode::kInvalidArgument,
                "gamma is float64, x is float32");
  EXPECT_STATUS(LayerNorm(ints, Value(), Value()).status(), absl::StatusCode::kInvalidArgument,
                "x must be float32 or float64, got int64");
  EXPECT_STATUS(LayerNorm(scalar, Value(), Value()).status(),
                absl::StatusCode::kInvalidArgument, "x must have rank >= 1");
  EXPECT_STATUS(LayerNorm(Value(), gamma, Value()).status(), absl::StatusCode::kInvalidArgument,
                "layer_norm: required input 0 is a null Value");
  EXPECT_STATUS(LayerNormGrad(x, gamma, Reshape(x, {6, 4})).status(),
                absl::StatusCode::kInvalidArgument,
                "layer_norm_grad 'layer_norm_grad': g must match x (float32 (2, 3, 4)), got "
                "float32 (6, 4)");
  EXPECT_STATUS(LayerNormParamGrad(x, Reshape(x, {6, 4})).status(),
                absl::StatusCode::kInvalidArgument,
                "layer_norm_param_grad 'layer_norm_param_grad': g must match x (float32 (2, 3, "
                "4)), got float32 (6, 4)");
  EXPECT_STATUS(LayerNormParamGrad(scalar, scalar).status(), absl::StatusCode::kInvalidArgument,
                "x must have rank >= 1");
  {
    Graph::Scope s(g, "encoder/ln1");
    EXPECT_STATUS(LayerNorm(x, bad_gamma, Value()).status(), absl::StatusCode::kInvalidArgument,
                  "layer_norm 'encoder/ln1/layer_norm'");
  }
}

}  // namespace
}  // namespace dagrad::testing
