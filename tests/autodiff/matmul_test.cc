// matmul and linear against a naive float64 reference, errors, gradients
// (their op cases are in matmul_cases.cc).

#include <cstdlib>
#include <random>

#include "ops/autodiff/autodiff.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/gemm.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Naive float64 reference: C[b] = op(A[b]) · op(B[b]), A and B batched alike.
std::vector<double> NaiveMatMul(const std::vector<double>& a, const std::vector<double>& b,
                                int64_t batch, int64_t m, int64_t k, int64_t n, bool ta,
                                bool tb) {
  std::vector<double> c(batch * m * n, 0.0);
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double av = ta ? a[p * m * k + q * m + i] : a[p * m * k + i * k + q];
          const double bv = tb ? b[p * k * n + j * k + q] : b[p * k * n + q * n + j];
          s += av * bv;
        }
        c[p * m * n + i * n + j] = s;
      }
    }
  }
  return c;
}

// Small products run dagrad's own kernel, large ones BLIS: both are checked.
class MatMulReference : public ::testing::TestWithParam<std::tuple<bool, bool, bool>> {};

TEST_P(MatMulReference, BatchedTransposedMatchesNaive) {
  const auto [ta, tb, large] = GetParam();
  const int64_t batch = 3, m = large ? 70 : 17, k = large ? 300 : 33, n = large ? 90 : 9;
  const Shape sa = ta ? Shape({batch, k, m}) : Shape({batch, m, k});
  const Shape sb = tb ? Shape({batch, n, k}) : Shape({batch, k, n});
  Graph g;
  Value a = g.Input("a", DType::kFloat32, sa);
  Value b = g.Input("b", DType::kFloat32, sb);
  Tensor av = Random(DType::kFloat32, sa, 1), bv = Random(DType::kFloat32, sb, 2);
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {MatMul(a, b, {.transpose_a = ta, .transpose_b = tb})},
                                         {{a, av}, {b, bv}}));
  EXPECT_EQ(out[0].shape(), Shape({batch, m, n}));
  ExpectAllClose(out[0], NaiveMatMul(AsDoubles(av), AsDoubles(bv), batch, m, k, n, ta, tb),
                 1e-5, 1e-4, "matmul");
}

INSTANTIATE_TEST_SUITE_P(Transposes, MatMulReference,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Bool()));

TEST(MatMul, BroadcastBatchAndSharedOperand) {
  Graph g;
  Value a = g.Input("a", DType::kFloat64, {2, 1, 3, 4});
  Value b = g.Input("b", DType::kFloat64, {4, 5});
  Value c = g.Input("c", DType::kFloat64, {1, 3, 4, 5});
  Tensor av = Random(DType::kFloat64, {2, 1, 3, 4}, 3);
  Tensor bv = Random(DType::kFloat64, {4, 5}, 4);
  Tensor cv = Random(DType::kFloat64, {1, 3, 4, 5}, 5);
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {MatMul(a, b), MatMul(a, c)},
                                         {{a, av}, {b, bv}, {c, cv}}));
  EXPECT_EQ(out[0].shape(), Shape({2, 1, 3, 5}));
  EXPECT_EQ(out[1].shape(), Shape({2, 3, 3, 5}));
  const std::vector<double> A = AsDoubles(av), B = AsDoubles(bv), C = AsDoubles(cv);
  std::vector<double> want0, want1;
  for (int p = 0; p < 2; ++p) {
    std::vector<double> ap(A.begin() + p * 12, A.begin() + (p + 1) * 12);
    for (double v : NaiveMatMul(ap, B, 1, 3, 4, 5, false, false)) want0.push_back(v);
    for (int q = 0; q < 3; ++q) {
      std::vector<double> cq(C.begin() + q * 20, C.begin() + (q + 1) * 20);
      for (double v : NaiveMatMul(ap, cq, 1, 3, 4, 5, false, false)) want1.push_back(v);
    }
  }
  ExpectAllClose(out[0], want0, 1e-12, 1e-12, "shared rhs");
  ExpectAllClose(out[1], want1, 1e-12, 1e-12, "broadcast batch");
}

TEST(Linear, MatchesXWTransposePlusBias) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 3});
  Value w = g.Input("w", DType::kFloat32, {2, 3});
  Value b = g.Input("b", DType::kFloat32, {2});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Linear(x, w, b), Linear(x, w)},
                                         {{x, T<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                                          {w, T<float>({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5})},
                                          {b, T<float>({2}, {10, 20})}}));
  // Row 0: [1 - 3, 0.5 * 6] + b = [8, 23]; row 1: [4 - 6, 7.5] + b = [8, 27.5].
  ExpectAllClose(out[0], {8, 23, 8, 27.5}, 1e-6, 0, "linear");
  ExpectAllClose(out[1], {-2, 3, -2, 7.5}, 1e-6, 0, "linear without bias");
}

// A tall product whose B is stored by columns with padding (csb > k), as a
// linear layer's x·wᵀ: under BLIS's AVX2 kernel sets Gemm copies a float B to rows
// first (ctest's gemm_blis_haswell runs this with BLIS_ARCH_TYPE=haswell),
// elsewhere BLIS reads it in place. Against a naive sum, beta included.
template <typename F>
void CheckTallProductWithColumnStoredB() {
  if (absl::Status st = ConfigureCpu(); !st.ok()) {
    GTEST_SKIP() << "this CPU cannot run the kernel set asked for: " << st.message();
  }
  // k > 256: never SmallGemm's (ops/cpu/internal/small_gemm.h), so BLIS runs it.
  const int64_t m = 803, n = 24, k = 300, csb = 303;
  std::mt19937 rng(9);
  std::uniform_real_distribution<F> u(-1, 1);
  std::vector<F> a(m * k), b(n * csb), c(m * n);
  for (F& v : a) v = u(rng);
  for (F& v : b) v = u(rng);
  for (F& v : c) v = u(rng);
  std::vector<F> want(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += double{a[i * k + p]} * b[j * csb + p];
      want[i * n + j] = static_cast<F>(1.5 * acc + 0.5 * c[i * n + j]);
    }
  }
  ASSERT_OK(Gemm<F>(m, n, k, F(1.5), a.data(), k, 1, b.data(), 1, csb, F(0.5), c.data(), n, 1));
  const double tol = 4 * k * std::numeric_limits<F>::epsilon();
  for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(c[i], want[i], tol) << i;
}

TEST(Gemm, TallProductWithColumnStoredBFloat) { CheckTallProductWithColumnStoredB<float>(); }
TEST(Gemm, TallProductWithColumnStoredBDouble) { CheckTallProductWithColumnStoredB<double>(); }

TEST(MatMul, EmptyDimensionsGiveZeros) {
  Graph g;
  Value a = g.Input("a", DType::kFloat32, {2, 0});
  Value b = g.Input("b", DType::kFloat32, {0, 3});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {MatMul(a, b)},
                                         {{a, *Tensor::Zeros(DType::kFloat32, {2, 0})},
                                          {b, *Tensor::Zeros(DType::kFloat32, {0, 3})}}));
  ExpectAllClose(out[0], {0, 0, 0, 0, 0, 0}, 0, 0, "k = 0");
}

TEST(MatMul, Errors) {
  Graph g;
  Value a = g.Input("a", DType::kFloat32, {2, 3, 4});
  Value v = g.Input("v", DType::kFloat32, {4});
  Value i = g.Input("i", DType::kInt32, {4, 2});
  EXPECT_STATUS(MatMul(a, a).status(), absl::StatusCode::kInvalidArgument,
                "matmul 'matmul': contracting dims differ: 4 vs 3");
  EXPECT_STATUS(MatMul(a, v).status(), absl::StatusCode::kInvalidArgument, "rank >= 2");
  EXPECT_STATUS(MatMul(Reshape(v, {4, 1}), i).status(), absl::StatusCode::kInvalidArgument,
                "dtypes differ");
  Value b = g.Input("b", DType::kFloat32, {3, 4, 5});
  EXPECT_STATUS(MatMul(a, b).status(), absl::StatusCode::kInvalidArgument,
                "batch dims: shapes (2,) and (3,) do not broadcast");
  Value w = g.Input("w", DType::kFloat32, {5, 3});
  EXPECT_STATUS(Linear(a, w).status(), absl::StatusCode::kInvalidArgument,
                "in-features 3");
  Value w2 = g.Input("w2", DType::kFloat32, {5, 4});
  EXPECT_STATUS(Linear(a, w2, v).status(), absl::StatusCode::kInvalidArgument,
                "bias must be (5,)");
}

// Found by the CUDA cross-checks: gradients of a linear layer with no input
// features (all zero, but they must build).
TEST(Linear, GradientsWithZeroInFeatures) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 3, 0});
  Value w = g.Input("w", DType::kFloat32, {4, 0});
  Value b = g.Input("b", DType::kFloat32, {4});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Linear(x, w, b)), {x, w, b}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0], grads[1], grads[2]},
                                         {{x, *Tensor::Zeros(DType::kFloat32, {2, 3, 0})},
                                          {w, *Tensor::Zeros(DType::kFloat32, {4, 0})},
                                          {b, T<float>({4}, {1, 2, 3, 4})}}));
  EXPECT_EQ(out[0].shape(), Shape({2, 3, 0}));
  EXPECT_EQ(out[1].shape(), Shape({4, 0}));
  ExpectAllClose(out[2], {6, 6, 6, 6}, 0, 0, "db = rows");
}

TEST(Reduce, MaxOfMinusInfinityIsMinusInfinityOnEveryPath) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 2, 2});
  const float inf = INFINITY;
  Feeds feeds = {{x, T<float>({2, 2, 2}, {-inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Max(x, {-1}), Max(x, {0}), Max(x, {0, 2})}, feeds));
  for (const Tensor& t : out) {
    for (double v : AsDoubles(t)) EXPECT_EQ(v, -inf);
  }
}

}  // namespace
}  // namespace dagrad::testing
