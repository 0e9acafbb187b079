// Masked softmax, softmax_grad and log_softmax (their op cases, every mask
// kind alone and combined, fully masked rows, second derivatives, are in
// softmax_cases.cc): PyTorch goldens for every mask kind (forward and gradient,
// float64 and float32, in place and not), hand-worked attention numbers,
// and builder and run-time errors.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using In = std::vector<Value>;

// --- PyTorch goldens ----------------------------------------------------------

Tensor ToDType(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype || !IsFloating(t.dtype())) return t;
  Tensor out = *Tensor::Zeros(dtype, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    out.data<float>()[i] = static_cast<float>(t.data<double>()[i]);
  }
  return out;
}

struct GoldenMode {
  DType dtype;
  bool through_intermediate;  // feed scores through an op so softmax may run in place
};

// Builds the golden case's masked softmax and the gradients of sum(y * g)
// and compares both with torch's.
void CheckSoftmaxGolden(const std::string& name, GoldenMode mode) {
  SCOPED_TRACE(name + (mode.dtype == DType::kFloat32 ? " float32" : " float64") +
               (mode.through_intermediate ? " in place" : ""));
  ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden("softmax", name));
  Graph g;
  Feeds feeds;
  auto input = [&](const std::string& key) -> Value {
    if (!c.inputs.count(key)) return Value();
    const Tensor t = ToDType(c.inputs.at(key), mode.dtype);
    Value v = g.Input(key, t.dtype(), t.shape());
    feeds.push_back({v, t});
    return v;
  };
  Value scores = input("scores"), upstream = input("g"), bias = input("bias");
  SoftmaxMask mask{.keep = input("keep"), .valid_lens = input("valid_lens"), .bias = bias,
                   .causal = c.attrs["causal"].get<bool>(),
                   .causal_offset = c.attrs["causal_offset"].get<int64_t>()};
  Value x = mode.through_intermediate ? AddScalar(scores, 0.0) : scores;
  Value y = MaskedSoftmax(x, mask, c.attrs["scale"].get<double>());
  std::vector<Value> wrt = {scores};
  if (!bias.is_null()) wrt.push_back(bias);
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(Sum(Mul(y, upstream)), wrt));
  std::vector<Value> fetches = {y};
  fetches.insert(fetches.end(), grads.begin(), grads.end());

  Executor exec(g, {.check_numerics = true});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(fetches));
  if (mode.through_intermediate) EXPECT_GT(plan->info().num_in_place, 0);
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, feeds));
  const bool f32 = mode.dtype == DType::kFloat32;
  const double rtol = f32 ? 2e-5 : 1e-12, atol = f32 ? 1e-6 : 1e-14;
  ExpectAllClose(out[0], AsDoubles(c.outputs.at("y")), rtol, atol, "y");
  ExpectAllClose(out[1], AsDoubles(c.outputs.at("dscores")), rtol, atol, "dscores");
  if (!bias.is_null()) {
    ExpectAllClose(out[2], AsDoubles(c.outputs.at("dbias")), rtol, f32 ? 1e-5 : atol, "dbias");
  }
}

TEST(SoftmaxGolden, EveryMaskKindMatchesTorch) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, GoldenCaseNames("softmax"));
  EXPECT_EQ(names.size(), 10u);
  for (const std::string& name : names) {
    for (GoldenMode mode : {GoldenMode{DType::kFloat64, false}, GoldenMode{DType::kFloat32, false},
                            GoldenMode{DType::kFloat64, true}, GoldenMode{DType::kFloat32, true}}) {
      CheckSoftmaxGolden(name, mode);
    }
  }
}

// --- Hand-worked values -------------------------------------------------------

// Scaled dot-product attention from a well-known notebook (d_k = 64, so the
// scale is 1/8): one query against four keys. With e = exp(-12.5), Q = [0, 10, 0]
// scores [0, 12.5, 0, 0] -> weights [e, 1, e, e] / (1 + 3e); Q = [0, 0, 10]
// scores [0, 0, 12.5, 12.5] -> weights [e, e, 1, 1] / (2 + 2e).
TEST(SoftmaxValues, ScaledDotProductAttentionNotebook) {
  Graph g;
  Value q = g.Input("q", DType::kFloat32, {2, 3});
  Value k = g.Input("k", DType::kFloat32, {4, 3});
  Value v = g.Input("v", DType::kFloat32, {4, 3});
  Value weights = MaskedSoftmax(MatMul(q, k, {.transpose_b = true}), {}, 1.0 / std::sqrt(64.0));
  Value out = MatMul(weights, v);
  Feeds feeds = {{q, T<float>({2, 3}, {0, 10, 0, 0, 0, 10})},
                 {k, T<float>({4, 3}, {10, 0, 0, 0, 10, 0, 0, 0, 10, 0, 0, 10})},
                 {v, T<float>({4, 3}, {1, 0, 0, 10, 0, 0, 100, 5, 0, 1000, 6, 0})}};
  ASSERT_OK_AND_ASSIGN(auto got, RunOnce(g, {weights, out}, feeds));

  const double e = std::exp(-12.5);
  const double a = 1 / (1 + 3 * e), b = 1 / (2 + 2 * e);
  ExpectAllClose(got[0], {e * a, a, e * a, e * a, e * b, e * b, b, b}, 1e-6, 0, "weights");
  ExpectAllClose(got[1],
                 {e * a * (1 + 100 + 1000) + a * 10, e * a * (5 + 6), 0,
                  e * b * (1 + 10) + b * (100 + 1000), b * (5 + 6), 0},
                 1e-6, 0, "output");
  // The notebook's printed numbers (4-5 significant digits).
  ExpectAllClose(got[0], {3.7266e-06, 0.99999, 3.7266e-06, 3.7266e-06, 1.8633e-06, 1.8633e-06,
                          0.5, 0.5},
                 1e-4, 0, "notebook weights");
  ExpectAllClose(got[1], {10.004, 4.0993e-05, 0, 549.9979, 5.5, 0}, 1e-4, 0, "notebook output");
}

// Every kind of fully masked row gives exact zeros and zero gradients, in
// both float types (torch gives NaN; d2l's -1e6 fill a uniform row).
TEST(SoftmaxValues, FullyMaskedRowsAreZerosNotNaN) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Graph g;
    Value x = g.Input("x", dtype, {3, 2, 3});
    Value keep = g.Input("keep", DType::kBool, {3, 2, 1});
    Value lens = g.Input("lens", DType::kInt32, {3});
    Value y = MaskedSoftmax(x, {.keep = keep, .valid_lens = lens, .causal = true,
                                .causal_offset = 0});
    ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Mul(y, x)), {x}));
    // Row (0, 0): kept. Row (0, 1): keep false. Batch 1: length 0. Batch 2:
    // length 3, causal keeps k <= q.
    Feeds feeds = {{x, ToDType(T<double>({3, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 1, 1, 1, 1, 1,
                                                     0, 0, 0, 0, 0, 0}),
                               dtype)},
                   {keep, T<bool>({3, 2, 1}, {true, false, true, true, true, true})},
                   {lens, T<int32_t>({3}, {3, 0, 3})}};
    ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {y, grads[0]}, feeds));
    ExpectAllClose(out[0], {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0.5, 0.5, 0}, 1e-7, 0,
                   "y");
    // d/dx sum(y * x) = y + y * (x - sum(y x)): here the second term is 0 in
    // every row (a one-hot y, or x constant over the kept positions), so dx = y.
    ExpectAllClose(out[1], {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0.5, 0.5, 0}, 1e-7, 0,
                   "dx");
  }
}

// A bias of -inf masks like keep = false; a row of -inf bias is all zeros.
TEST(SoftmaxValues, MinusInfinityBiasMasks) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 3});
  Value bias = g.Input("bias", DType::kFloat32, {2, 3});
  const float inf = std::numeric_limits<float>::infinity();
  Feeds feeds = {{x, T<float>({2, 3}, {0, 0, 0, 1, 2, 3})},
                 {bias, T<float>({2, 3}, {0, -inf, 0, -inf, -inf, -inf})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {MaskedSoftmax(x, {.bias = bias})}, feeds));
  ExpectAllClose(out[0], {0.5, 0, 0.5, 0, 0, 0}, 1e-7, 0, "y");
}

// softmax_grad by hand: y = [0.2, 0.3, 0.5], g = [1, 2, 3]: sum(g y) = 2.3,
// dx = y * (g - 2.3) = [-0.26, -0.09, 0.35].
// One float32 row of 2^21 elements: the normaliser sum(exp(x - m)) and
// softmax_grad's sum(g * y) accumulate in double, so each output is within a
// few float32 roundings of the float64 reference (exp within 2 ulp, then
// the shift, the reciprocal and the product). A float32 sum of 2^21 terms
// is off by ~1e-5.
TEST(SoftmaxValues, LongFloat32RowsAgreeWithFloat64) {
  constexpr int64_t kK = int64_t{1} << 21;
  const Tensor x = Random(DType::kFloat32, {1, kK}, 7);
  const Tensor g = Random(DType::kFloat32, {1, kK}, 8, 0.5, 1.5);
  const Tensor y = Random(DType::kFloat32, {1, kK}, 9, 0.5, 1.5);
  Graph gr;
  Value vx = gr.Input("x", DType::kFloat32, {1, kK});
  Value vg = gr.Input("g", DType::kFloat32, {1, kK});
  Value vy = gr.Input("y", DType::kFloat32, {1, kK});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(gr, {Softmax(vx), SoftmaxGrad(vy, vg)},
                                         {{vx, x}, {vg, g}, {vy, y}}));
  const std::vector<double> xs = AsDoubles(x), gs = AsDoubles(g), ys = AsDoubles(y);
  double m = xs[0], sum = 0, dot = 0;
  for (double v : xs) m = std::max(m, v);
  for (double v : xs) sum += std::exp(v - m);
  for (int64_t k = 0; k < kK; ++k) dot += gs[k] * ys[k];
  std::vector<double> softmax(kK), dx(kK);
  for (int64_t k = 0; k < kK; ++k) {
    softmax[k] = std::exp(xs[k] - m) / sum;
    // g - dot ~ -2^21: dx's relative error is the dot's.
    dx[k] = ys[k] * (gs[k] - dot);
  }
  ExpectAllClose(out[0], softmax, 5e-7, 0, "softmax");
  ExpectAllClose(out[1], dx, 3e-7, 0, "softmax_grad");
}

TEST(SoftmaxValues, SoftmaxGradByHand) {
  Graph g;
  Value y = g.Input("y", DType::kFloat64, {1, 3});
  Value dy = g.Input("g", DType::kFloat64, {1, 3});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {SoftmaxGrad(y, dy)},
                                         {{y, T<double>({1, 3}, {0.2, 0.3, 0.5})},
                                          {dy, T<double>({1, 3}, {1, 2, 3})}}));
  ExpectAllClose(out[0], {-0.26, -0.09, 0.35}, 1e-12, 1e-15, "dx");
}

// --- Errors -------------------------------------------------------------------

TEST(SoftmaxErrors, BadMaskInputsAreBuildErrorsNamingOpAndShapes) {
  Graph g;
  Value s = g.Input("s", DType::kFloat32, {2, 3, 4});
  EXPECT_STATUS(MaskedSoftmax(s, {.keep = g.Input("k_int", DType::kInt32, {2, 3, 4})}).status(),
                absl::StatusCode::kInvalidArgument,
                "softmax 'softmax': keep mask must be bool (true = keep), got int32 (2, 3, 4)");
  EXPECT_STATUS(MaskedSoftmax(s, {.keep = g.Input("k_shape", DType::kBool, {2, 5})}).status(),
                absl::StatusCode::kInvalidArgument,
                "keep mask (2, 5) does not broadcast to scores (2, 3, 4)");
  EXPECT_STATUS(
      MaskedSoftmax(s, {.valid_lens = g.Input("l_float", DType::kFloat32, {2})}).status(),
      absl::StatusCode::kInvalidArgument, "valid_lens must be int32 or int64, got float32");
  EXPECT_STATUS(MaskedSoftmax(s, {.valid_lens = g.Input("l_b", DType::kInt64, {3})}).status(),
                absl::StatusCode::kInvalidArgument,
                "valid_lens (3,) must be (B) = (2,) for scores (2, 3, 4), or (B, Q) = (2, 3)");
  EXPECT_STATUS(MaskedSoftmax(s, {.valid_lens = g.Input("l_bq", DType::kInt64, {2, 4})}).status(),
                absl::StatusCode::kInvalidArgument, "valid_lens (2, 4) must be (B) = (2,)");
  Value s2 = g.Input("s2", DType::kFloat32, {2, 4});
  EXPECT_STATUS(
      MaskedSoftmax(s2, {.valid_lens = g.Input("l_2d", DType::kInt64, {2, 2})}).status(),
      absl::StatusCode::kInvalidArgument, "valid_lens (2, 2) must be (B) = (2,) for scores (2, 4)");
  Value v = g.Input("v", DType::kFloat32, {4});
  EXPECT_STATUS(MaskedSoftmax(v, {.valid_lens = g.Input("l_v", DType::kInt64, {4})}).status(),
                absl::StatusCode::kInvalidArgument, "valid_lens need scores of rank >= 2");
  EXPECT_STATUS(MaskedSoftmax(v, {.causal = true}).status(), absl::StatusCode::kInvalidArgument,
                "a causal mask needs scores of rank >= 2 (..., Q, K), got (4,)");
  EXPECT_STATUS(MaskedSoftmax(s, {.bias = g.Input("b64", DType::kFloat64, {4})}).status(),
                absl::StatusCode::kInvalidArgument,
                "bias must be float32 like scores, got float64 (4,)");
  EXPECT_STATUS(MaskedSoftmax(s, {.bias = g.Input("b_shape", DType::kFloat32, {3, 1, 4})}).status(),
                absl::StatusCode::kInvalidArgument,
                "bias (3, 1, 4) does not broadcast to scores (2, 3, 4)");
  EXPECT_STATUS(Softmax(g.Input("i", DType::kInt64, {3})).status(),
                absl::StatusCode::kInvalidArgument, "scores must be float32 or float64, got int64");
  EXPECT_STATUS(MaskedSoftmax(s, {}, std::nan("")).status(), absl::StatusCode::kInvalidArgument,
                "scale must be finite");
  EXPECT_STATUS(LogSoftmax(g.Input("scalar", DType::kFloat32, {})).status(),
                absl::StatusCode::kInvalidArgument,
                "log_softmax 'log_softmax': input must have rank >= 1");
  EXPECT_STATUS(SoftmaxGrad(s, s2).status(), absl::StatusCode::kInvalidArgument,
                "y and g must have the same shape of rank >= 1, got y (2, 3, 4) and g (2, 4)");
  {
    Graph::Scope scope(g, "attn");
    EXPECT_STATUS(MaskedSoftmax(s, {.keep = g.Input("k2", DType::kBool, {4, 4})}).status(),
                  absl::StatusCode::kInvalidArgument,
                  "softmax 'attn/softmax': keep mask (4, 4) does not broadcast");
  }
}

// log_softmax beside maxima of 3e38, as torch and ONNX Runtime: (x - m) -
// log(sum) keeps the log(2) that x - (m + log(sum)) would lose (giving 0
// at the maxima), in float32 and float64.
TEST(LogSoftmaxValues, HugeMaxima) {
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    Graph g;
    Value x = g.Input("x", d, {4});
    const std::vector<double> v = {3e38, -3e38, 3e38, 0};
    const Tensor fed = d == DType::kFloat64 ? T<double>({4}, v)
                                            : T<float>({4}, std::vector<float>(v.begin(), v.end()));
    ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Cast(LogSoftmax(x), DType::kFloat64)}, {{x, fed}}));
    const std::vector<double> y = out[0].ToVector<double>();
    EXPECT_NEAR(y[0], -std::log(2.0), 1e-6) << DTypeName(d);
    EXPECT_NEAR(y[2], -std::log(2.0), 1e-6) << DTypeName(d);
    // -3e38 - 3e38 overflows float32.
    EXPECT_EQ(y[1], d == DType::kFloat64 ? -6e38 : -std::numeric_limits<double>::infinity());
    EXPECT_NEAR(y[3], -3e38, 3e38 * 1e-7) << DTypeName(d);
  }
}

TEST(SoftmaxErrors, ValidLengthOutOfRangeIsARunTimeError) {
  Graph g;
  Value s = g.Input("s", DType::kFloat32, {2, 3, 4});
  Value lens1 = g.Input("lens1", DType::kInt64, {2});
  Value lens2 = g.Input("lens2", DType::kInt32, {2, 3});
  Value y1 = MaskedSoftmax(s, {.valid_lens = lens1});
  Value y2 = MaskedSoftmax(s, {.valid_lens = lens2});
  const Tensor scores = Random(DType::kFloat32, {2, 3, 4}, 1);
  EXPECT_STATUS(RunOnce(g, {y1}, {{s, scores}, {lens1, T<int64_t>({2}, {3, 5})}}).status(),
                absl::StatusCode::kInvalidArgument,
                "softmax 'softmax': valid_lens[1] = 5 is outside [0, 4]");
  EXPECT_STATUS(RunOnce(g, {y1}, {{s, scores}, {lens1, T<int64_t>({2}, {-1, 2})}}).status(),
                absl::StatusCode::kInvalidArgument, "valid_lens[0] = -1 is outside [0, 4]");
  EXPECT_STATUS(
      RunOnce(g, {y2}, {{s, scores}, {lens2, T<int32_t>({2, 3}, {1, 2, 3, 4, 4, 9})}}).status(),
      absl::StatusCode::kInvalidArgument, "softmax 'softmax_1': valid_lens[1, 2] = 9 is outside");
  // In range, including the bounds 0 and K, runs.
  EXPECT_TRUE(RunOnce(g, {y1}, {{s, scores}, {lens1, T<int64_t>({2}, {0, 4})}}).ok());
}

}  // namespace
}  // namespace dagrad::testing
