// Elementwise ops: hand-computed forward values and builder errors. Their
// op cases (gradcheck, CUDA, CPU levels, timing) are in unary_cases.cc and
// binary_cases.cc.

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(Elementwise, HandComputedValues) {
  Graph g;
  Value a = g.Input("a", DType::kFloat32, {2, 2});
  Value b = g.Input("b", DType::kFloat32, {2});
  Feeds feeds = {{a, T<float>({2, 2}, {1, 2, 3, 4})}, {b, T<float>({2}, {10, 20})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {a + b, a * b, a - b, b / a, Maximum(a, b * 0.1f),
                                             Relu(a - 2.5), Pow(a, 2.0), a * 3.0 + 1.0},
                                         feeds));
  ExpectAllClose(out[0], {11, 22, 13, 24}, 0, 0, "add");
  ExpectAllClose(out[1], {10, 40, 30, 80}, 0, 0, "mul");
  ExpectAllClose(out[2], {-9, -18, -7, -16}, 0, 0, "sub");
  ExpectAllClose(out[3], {10, 10, 10.0 / 3, 5}, 1e-6, 0, "div");
  ExpectAllClose(out[4], {1, 2, 3, 4}, 1e-6, 0, "maximum");
  ExpectAllClose(out[5], {0, 0, 0.5, 1.5}, 0, 0, "relu");
  ExpectAllClose(out[6], {1, 4, 9, 16}, 0, 0, "pow");
  ExpectAllClose(out[7], {4, 7, 10, 13}, 0, 0, "scale+shift");
}

TEST(Elementwise, ScalarDividedByAValue) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {4});
  Value a = g.Input("a", DType::kFloat32, {2});
  Value r = 2.0 / (a * a + 1.0);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(3.0 / x), {x}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {3.0 / x, grads[0], r},
                                         {{x, T<double>({4}, {2, -4, 0.5, 0})},
                                          {a, T<float>({2}, {1, 3})}}));
  const double inf = std::numeric_limits<double>::infinity();
  ExpectAllClose(out[0], {1.5, -0.75, 6, inf}, 0, 0, "3 / x");
  ExpectAllClose(out[1], {-0.75, -3.0 / 16, -12, -inf}, 1e-15, 0, "-3 / x^2");
  EXPECT_EQ(out[2].dtype(), DType::kFloat32);
  ExpectAllClose(out[2], {1, 0.2}, 1e-7, 0, "2 / (a^2 + 1)");
}

// d(a / b)/db = -g (a / b) / b, in PyTorch's order: where a = 0 it is 0
// even when g / b overflows (the order -(g / b) (a / b) made that inf * 0,
// NaN). g = 1e5, b = 1e-35: g / b = 1e40 is past float32's range.
TEST(Elementwise, DivGradientOfAZeroNumeratorIsZero) {
  Graph g;
  Value a = g.Input("a", DType::kFloat32, {2});
  Value b = g.Input("b", DType::kFloat32, {2});
  Value w = g.Input("w", DType::kFloat32, {2});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Div(a, b) * w), {a, b}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0], grads[1]},
                                         {{a, T<float>({2}, {0, 3})},
                                          {b, T<float>({2}, {1e-35f, 2})},
                                          {w, T<float>({2}, {1e5f, 4})}}));
  EXPECT_EQ(out[0].data<float>()[0], std::numeric_limits<float>::infinity());  // 1e40
  EXPECT_EQ(out[0].data<float>()[1], 2.0f);
  EXPECT_EQ(out[1].data<float>()[0], 0.0f);
  EXPECT_EQ(out[1].data<float>()[1], -3.0f);  // -4 * 3 / 4
}

TEST(Elementwise, TranscendentalValues) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {3});
  Feeds feeds = {{x, T<double>({3}, {-1.0, 0.0, 2.0})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Gelu(x), Sigmoid(x), Tanh(x), Sin(x), Cos(x),
                                             Exp(x)},
                                         feeds));
  // gelu(x) = x Phi(x): Phi(-1) = 0.158655253931457, Phi(2) = 0.977249868051821.
  ExpectAllClose(out[0], {-0.158655253931457, 0.0, 1.954499736103642}, 1e-12, 1e-15, "gelu");
  ExpectAllClose(out[1], {1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-2.0))}, 1e-15, 0,
                 "sigmoid");
  ExpectAllClose(out[2], {std::tanh(-1.0), 0, std::tanh(2.0)}, 1e-15, 0, "tanh");
  ExpectAllClose(out[3], {std::sin(-1.0), 0, std::sin(2.0)}, 1e-15, 0, "sin");
  ExpectAllClose(out[4], {std::cos(-1.0), 1, std::cos(2.0)}, 1e-15, 0, "cos");
  ExpectAllClose(out[5], {std::exp(-1.0), 1, std::exp(2.0)}, 1e-15, 0, "exp");
}

// Scale is a product: -0 * 2 is -0 and 0 * -1 is -0, with no + 0 that
// would make them +0; a shift adds.
TEST(Elementwise, ScaleKeepsTheSignOfZero) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Feeds feeds = {{x, T<float>({2}, {-0.0f, -1.0f})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Scale(x, 2.0), Scale(x, 0.0), AddScalar(x, 0.5)},
                                         feeds));
  const std::vector<float> doubled = out[0].ToVector<float>(), zeroed = out[1].ToVector<float>();
  EXPECT_TRUE(doubled[0] == 0 && std::signbit(doubled[0])) << doubled[0];
  EXPECT_EQ(doubled[1], -2.0f);
  EXPECT_TRUE(std::signbit(zeroed[0]) && std::signbit(zeroed[1])) << zeroed[0] << " " << zeroed[1];
  ExpectAllClose(out[2], {0.5, -0.5}, 0, 0, "shift");
}

// Pow computes the exponents 0.5 and -0.5 as torch does (sqrt, 1 / sqrt),
// CPow as C's pow: they part at -0 and -inf, by IEEE 754's pow and sqrt:
// sqrt(-0) = -0, sqrt(-inf) = NaN; pow(+-0, 0.5) = +0, pow(-inf, 0.5) = +inf,
// pow(+-0, -0.5) = +inf, pow(-inf, -0.5) = +0, pow(-4, 0.5) = NaN.
// ExpectSameValues checks `got` against `want` exactly, NaN for NaN and the
// sign of each zero included.
void ExpectSameValues(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ExpectAllClose(got, want, 0, 0, what);
  const std::vector<double> g = AsDoubles(got);
  for (size_t i = 0; i < g.size() && i < want.size(); ++i) {
    if (want[i] == 0) EXPECT_EQ(std::signbit(g[i]), std::signbit(want[i])) << what << " element " << i;
  }
}

// Casts float64 values to a float tensor of dtype d.
Tensor Floats(DType d, const std::vector<double>& values) {
  Tensor t = T<double>({static_cast<int64_t>(values.size())}, values);
  return d == DType::kFloat32 ? ToFloat32(t) : t;
}

TEST(Elementwise, PowIsTorchsAndCPowIsCs) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    SCOPED_TRACE(DTypeName(d));
    Graph g;
    Value x = g.Input("x", d, {6});
    const Tensor feed = Floats(d, {-0.0, 0.0, -kInf, kInf, 4, -4});
    ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Pow(x, 0.5), CPow(x, 0.5), Pow(x, -0.5), CPow(x, -0.5)},
                                           {{x, feed}}));
    ExpectSameValues(out[0], {-0.0, 0.0, kNaN, kInf, 2, kNaN}, "Pow(x, 0.5)");
    ExpectSameValues(out[1], {0.0, 0.0, kInf, kInf, 2, kNaN}, "CPow(x, 0.5)");
    ExpectSameValues(out[2], {-kInf, kInf, kNaN, 0.0, 0.5, kNaN}, "Pow(x, -0.5)");
    ExpectSameValues(out[3], {kInf, kInf, 0.0, 0.0, 0.5, kNaN}, "CPow(x, -0.5)");
  }
}

// The gradient of CPow is p CPow(x, p - 1): at -0 with p = 1.5 that is
// 1.5 pow(-0, 0.5) = +0, where Pow's 1.5 sqrt(-0) is -0.
TEST(Elementwise, CPowGradientKeepsCsPow) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {3});
  ASSERT_OK_AND_ASSIGN(auto c_grads, Gradients(Sum(CPow(x, 1.5)), {x}));
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Pow(x, 1.5)), {x}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {c_grads[0], grads[0]},
                                         {{x, T<double>({3}, {-0.0, 4.0, 0.25})}}));
  ExpectSameValues(out[0], {0.0, 3.0, 0.75}, "d CPow(x, 1.5) / dx");
  ExpectSameValues(out[1], {-0.0, 3.0, 0.75}, "d Pow(x, 1.5) / dx");
}

TEST(Elementwise, ComparisonsAndLogic) {
  Graph g;
  Value a = g.Input("a", DType::kInt64, {4});
  Value b = g.Input("b", DType::kInt64, {1});
  Feeds feeds = {{a, T<int64_t>({4}, {1, 2, 3, 4})}, {b, T<int64_t>({1}, {2})}};
  Value lt = Less(a, b), gt = Greater(a, b), eq = Equal(a, b);
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {lt, gt, eq, LogicalOr(lt, eq), LogicalAnd(lt, gt),
                                             LogicalNot(eq), Cast(gt, DType::kFloat32)},
                                         feeds));
  ExpectAllClose(out[0], {1, 0, 0, 0}, 0, 0, "less");
  ExpectAllClose(out[1], {0, 0, 1, 1}, 0, 0, "greater");
  ExpectAllClose(out[2], {0, 1, 0, 0}, 0, 0, "equal");
  ExpectAllClose(out[3], {1, 1, 0, 0}, 0, 0, "or");
  ExpectAllClose(out[4], {0, 0, 0, 0}, 0, 0, "and");
  ExpectAllClose(out[5], {1, 0, 1, 1}, 0, 0, "not");
  ExpectAllClose(out[6], {0, 0, 1, 1}, 0, 0, "cast");
  EXPECT_EQ(out[0].dtype(), DType::kBool);
}

TEST(Elementwise, BuilderErrorsNameOpAndShapes) {
  Graph g;
  Value a = g.Input("a", DType::kFloat32, {2, 3});
  Value b = g.Input("b", DType::kFloat32, {4});
  Value i = g.Input("i", DType::kInt64, {2, 3});
  Value m = g.Input("m", DType::kBool, {2, 3});
  EXPECT_STATUS(Add(a, b).status(), absl::StatusCode::kInvalidArgument,
                "add 'add': shapes (2, 3) and (4,) do not broadcast");
  EXPECT_STATUS(Mul(a, i).status(), absl::StatusCode::kInvalidArgument, "dtypes differ");
  EXPECT_STATUS(Exp(i).status(), absl::StatusCode::kInvalidArgument,
                "exp 'exp': input must be float32 or float64, got int64");
  // Arithmetic with a number names what was written, not the node it builds.
  EXPECT_STATUS((i + 1.0).status(), absl::StatusCode::kInvalidArgument,
                "x + s or x - s (AddScalar), a Value plus a number: x must be float32 or "
                "float64, got int64 (2, 3)");
  EXPECT_STATUS((i * 2.0).status(), absl::StatusCode::kInvalidArgument, "x * s or x / s (Scale)");
  EXPECT_STATUS((2.0 / i).status(), absl::StatusCode::kInvalidArgument,
                "Pow(x, p), or s / x (x to the power -1)");
  EXPECT_STATUS(Add(m, m).status(), absl::StatusCode::kInvalidArgument, "numeric");
  EXPECT_STATUS(LogicalAnd(a, a).status(), absl::StatusCode::kInvalidArgument, "must be bool");
  {
    Graph::Scope s(g, "encoder");
    EXPECT_STATUS(Sub(a, b).status(), absl::StatusCode::kInvalidArgument,
                  "sub 'encoder/sub': shapes (2, 3) and (4,)");
  }
  Graph other;
  Value c = other.Input("c", DType::kFloat32, {2, 3});
  EXPECT_STATUS(Add(a, c).status(), absl::StatusCode::kInvalidArgument, "another graph");
  EXPECT_STATUS(Add(a, Value()).status(), absl::StatusCode::kInvalidArgument, "null Value");
  // An error flows through later ops unchanged.
  Value bad = Add(a, b);
  EXPECT_EQ(Exp(Relu(bad)).status(), bad.status());
  EXPECT_FALSE(g.status().ok());
}

// Found by the graph fuzzer: integer arithmetic must wrap, not be undefined.
TEST(Elementwise, IntegerArithmeticWrapsAround) {
  Graph g;
  Value a = g.Input("a", DType::kInt32, {3});
  Value b = g.Input("b", DType::kInt32, {3});
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  const int32_t kMax = std::numeric_limits<int32_t>::max();
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Add(a, b), Sub(a, b), Mul(a, b), Div(a, b), Sum(a)},
                                         {{a, T<int32_t>({3}, {kMin, kMax, kMin})},
                                          {b, T<int32_t>({3}, {kMin, 1, -1})}}));
  EXPECT_EQ(out[0].ToVector<int32_t>(), (std::vector<int32_t>{0, kMin, kMax}));
  EXPECT_EQ(out[1].ToVector<int32_t>(), (std::vector<int32_t>{0, kMax - 1, kMin + 1}));
  EXPECT_EQ(out[2].ToVector<int32_t>(), (std::vector<int32_t>{0, kMax, kMin}));
  EXPECT_EQ(out[3].ToVector<int32_t>(), (std::vector<int32_t>{1, kMax, kMin}));
  EXPECT_EQ(out[4].ToVector<int32_t>(), (std::vector<int32_t>{static_cast<int32_t>(
                                            int64_t{kMin} + kMax + kMin)}));
  EXPECT_STATUS(Mean(a).status(), absl::StatusCode::kInvalidArgument,
                "mean needs a float input, got int32");
}

}  // namespace
}  // namespace dagrad::testing
