// sum_of_squares (ops/sum_of_squares.h): hand-worked values, the order of
// ops/math/sum_of_squares_math.h bit for bit, the same bits at every thread
// count, the composed float64 formula, the composed gradient, non-finite
// values and errors. Its op case (gradcheck, CUDA, ISA levels) is in
// sum_of_squares_cases.cc.

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/elementwise.h"
#include "ops/math/sum_of_squares_math.h"
#include "ops/reduce.h"
#include "ops/sum_of_squares.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// DocumentedChunkSum: a chunk's sum in the order the math header describes,
// written as a plain loop over the elements.
template <typename T>
double DocumentedChunkSum(const T* x, int64_t n) {
  double lanes[kSquaresLanes] = {};
  for (int64_t i = 0; i < n; ++i) lanes[i % kSquaresLanes] += SquareOf(x[i]);
  for (int width = kSquaresLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) FoldLanes(lanes, width, l);
  }
  double sum = lanes[0];
  return sum;
}

// DocumentedTotal adds chunk sums as the header says: lanes, then the tree.
double DocumentedTotal(const std::vector<double>& sums) {
  double lanes[kSquaresLanes] = {};
  for (size_t c = 0; c < sums.size(); ++c) lanes[c % kSquaresLanes] += sums[c];
  for (int width = kSquaresLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) FoldLanes(lanes, width, l);
  }
  return lanes[0];
}

// DocumentedSum is the op's value for `inputs` (float32 or float64), chunk
// by chunk in input order.
double DocumentedSum(const std::vector<Tensor>& inputs) {
  std::vector<double> sums;
  for (const Tensor& t : inputs) {
    for (int64_t begin = 0; begin < t.num_elements(); begin += kSquaresChunk) {
      const int64_t n = std::min(kSquaresChunk, t.num_elements() - begin);
      sums.push_back(t.dtype() == DType::kFloat32
                         ? DocumentedChunkSum(t.data<float>() + begin, n)
                         : DocumentedChunkSum(t.data<double>() + begin, n));
    }
  }
  return DocumentedTotal(sums);
}

// Evaluate runs SumOfSquares over inputs fed `values`.
absl::StatusOr<double> Evaluate(const std::vector<Tensor>& values) {
  Graph g;
  std::vector<Value> xs;
  Feeds feeds;
  for (const Tensor& t : values) {
    xs.push_back(g.Input(absl::StrCat("x", xs.size()), t.dtype(), t.shape()));
    feeds.push_back({xs.back(), t});
  }
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOnce(g, {SumOfSquares(xs)}, feeds));
  return out[0].data<double>()[0];
}

// Inputs across chunk boundaries, of both dtypes, an empty one among them.
std::vector<Tensor> LargeInputs() {
  return {Random(DType::kFloat32, {3, 70001}, 1, -2, 2), Random(DType::kFloat64, {65536}, 2),
          Random(DType::kFloat32, {0, 5}, 3), Random(DType::kFloat64, {}, 4, -9, 9),
          Random(DType::kFloat32, {131072}, 5, -1e3, 1e3)};
}

TEST(SumOfSquares, HandWorkedValues) {
  // 3^2 + 4^2 + 1 + 2^2 + (-2)^2 + 0 + 12^2 = 25 + 9 + 144
  ASSERT_OK_AND_ASSIGN(double v, Evaluate({T<float>({2}, {3, 4}),
                                           T<double>({2, 2}, {1, 2, -2, 0}),
                                           T<double>({}, {12})}));
  EXPECT_EQ(v, 178.0);
  ASSERT_OK_AND_ASSIGN(double empty, Evaluate({T<float>({0}, {})}));
  EXPECT_EQ(empty, 0.0);
}

TEST(SumOfSquares, AddsInTheDocumentedOrder) {
  const std::vector<Tensor> inputs = LargeInputs();
  ASSERT_OK_AND_ASSIGN(double v, Evaluate(inputs));
  const double want = DocumentedSum(inputs);
  EXPECT_EQ(std::memcmp(&v, &want, sizeof(v)), 0) << v << " vs " << want;
}

TEST(SumOfSquares, SameBitsOnEveryThreadCount) {
  const int saved = NumThreads();
  const std::vector<Tensor> inputs = LargeInputs();
  const double want = DocumentedSum(inputs);
  for (int threads : {1, 2, 3, 4}) {
    ASSERT_OK(SetNumThreads(threads));
    ASSERT_OK_AND_ASSIGN(double v, Evaluate(inputs));
    EXPECT_EQ(std::memcmp(&v, &want, sizeof(v)), 0) << threads << " threads: " << v;
  }
  ASSERT_OK(SetNumThreads(saved));
}

// The composed formula in float64: sum over inputs of Sum(x64 * x64), to
// the rounding of the additions.
TEST(SumOfSquares, AgreesWithTheComposedFormulaInFloat64) {
  const std::vector<Tensor> inputs = LargeInputs();
  Graph g;
  std::vector<Value> xs;
  Feeds feeds;
  Value composed;
  for (const Tensor& t : inputs) {
    xs.push_back(g.Input(absl::StrCat("x", xs.size()), t.dtype(), t.shape()));
    feeds.push_back({xs.back(), t});
    const Value x64 = Cast(xs.back(), DType::kFloat64);
    const Value s = Sum(x64 * x64);
    composed = composed.is_null() ? s : composed + s;
  }
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {SumOfSquares(xs), composed}, feeds));
  const double got = out[0].data<double>()[0], want = out[1].data<double>()[0];
  // Both add the same n exact squares (positive) in double, in other
  // orders: each is within (n - 1) 2^-53 of the exact sum, relatively.
  int64_t n = 0;
  for (const Tensor& t : inputs) n += t.num_elements();
  EXPECT_NEAR(got, want, 2.0 * static_cast<double>(n) * 0x1p-53 * want);
}

// The gradient rule gives the composed float64 norm's gradients, bit for
// bit: 2 x g in float64 (where Mul(x, x)'s rule adds g x to itself), cast
// to the input's dtype once.
TEST(SumOfSquares, DifferentiatesLikeTheComposedNorm) {
  Graph g;
  Value a = g.Input("a", DType::kFloat32, {4, 5});
  Value b = g.Input("b", DType::kFloat64, {3});
  const Value wide = Cast(a, DType::kFloat64);
  Value composed = Sum(wide * wide) + Sum(b * b);
  Value seed = g.Input("seed", DType::kFloat64, {});
  ASSERT_OK_AND_ASSIGN(auto fused, Gradients(SumOfSquares({a, b}) * seed, {a, b}));
  ASSERT_OK_AND_ASSIGN(auto reference, Gradients(composed * seed, {a, b}));
  ASSERT_OK_AND_ASSIGN(auto out,
                       RunOnce(g, {fused[0], fused[1], reference[0], reference[1]},
                               {{a, Random(DType::kFloat32, {4, 5}, 7, -3, 3)},
                                {b, Random(DType::kFloat64, {3}, 8)},
                                {seed, T<double>({}, {0.37})}}));
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(out[i].nbytes(), out[i + 2].nbytes());
    EXPECT_EQ(std::memcmp(out[i].raw_data(), out[i + 2].raw_data(), out[i].nbytes()), 0)
        << "input " << i;
  }
}

// The norm of float32 values near the bottom of their range: its gradient
// x / |x| is made in float64, where the seed 1 / (2 |x|) (3.5e39) fits.
TEST(SumOfSquares, GradientOfATinyNormIsFinite) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {4});
  ASSERT_OK_AND_ASSIGN(auto grad, Gradients(Sqrt(SumOfSquares({x})), {x}));
  const std::vector<float> values = {1e-40f, -1e-40f, 1.4e-45f, 0};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grad[0]}, {{x, T<float>({4}, values)}}));
  double norm = 0;
  for (float v : values) norm += static_cast<double>(v) * v;
  norm = std::sqrt(norm);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out[0].data<float>()[i], static_cast<float>(values[i] / norm)) << i;
  }
}

TEST(SumOfSquares, NonFiniteValues) {
  const double inf = std::numeric_limits<double>::infinity();
  ASSERT_OK_AND_ASSIGN(double nan, Evaluate({T<float>({3}, {1, NAN, 2}), T<double>({1}, {inf})}));
  EXPECT_TRUE(std::isnan(nan));
  ASSERT_OK_AND_ASSIGN(double infinite, Evaluate({T<float>({2}, {-INFINITY, 1})}));
  EXPECT_EQ(infinite, inf);
  ASSERT_OK_AND_ASSIGN(double overflow, Evaluate({T<double>({2}, {1e200, -1e200})}));
  EXPECT_EQ(overflow, inf);
}

TEST(SumOfSquares, Errors) {
  Graph g;
  Value i = g.Input("i", DType::kInt32, {2});
  Value x = g.Input("x", DType::kFloat32, {2});
  EXPECT_STATUS(SumOfSquares({x, i}).status(), absl::StatusCode::kInvalidArgument,
                "sum_of_squares");
  EXPECT_STATUS(SumOfSquares({x, Value()}).status(), absl::StatusCode::kInvalidArgument,
                "null Value");
  EXPECT_TRUE(SumOfSquares({}).is_null());
}

}  // namespace
}  // namespace dagrad::testing
