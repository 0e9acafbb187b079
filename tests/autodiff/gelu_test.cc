// GELU (ops/gelu.h): the float32 kernels of every ISA level against a
// float64 reference built on std::erfc and std::tanh, with the bounds that
// ops/cpu/kernels/cpu_kernels.h states; every level against the baseline; the
// op's errors. Its op case (float64 gradchecks of both forms, CPU against
// CUDA, levels against the baseline) is in tests/autodiff/gelu_cases.cc, its PyTorch
// goldens in tests/autodiff/golden_ops_test.cc (gelu_* of nn_ops.json).

#include "ops/gelu.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/autodiff/autodiff.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/elementwise.h"
#include "ops/math/gelu_math.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr double kEps = 1.0 / (1 << 24);  // 2^-24

// Reference values in double for float32 inputs.
double PhiRef(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double GeluRef(double x) { return x * PhiRef(x); }
double GeluGradRef(double x) {
  return PhiRef(x) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
}
double TanhSigmoidRef(double x) {  // 0.5 (1 + tanh z)
  return 0.5 *
         (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double GeluTanhRef(double x) { return x * TanhSigmoidRef(x); }
double GeluTanhGradRef(double x) {
  const double t = 2.0 * TanhSigmoidRef(x) - 1.0;
  const double dz = std::sqrt(2.0 / M_PI) * (1.0 + 3.0 * 0.044715 * x * x);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dz;
}

// Inputs: a grid over [-12, 12] in steps of 2^-12 (both polynomials, the
// switch at |x| = sqrt(2) and the tails), and 0.
std::vector<float> Grid() {
  std::vector<float> x;
  for (int i = -12 * 4096; i <= 12 * 4096; ++i)
    x.push_back(static_cast<float>(i / 4096.0));
  return x;
}

struct Outputs {
  std::vector<float> y, dx;
};

// RunKernels calls `isa`'s kernels on x (g = 1 for dx) in two uneven ranges,
// so that a tail of each is padded.
Outputs RunKernels(CpuIsa isa, const std::vector<float>& x, bool tanh) {
  const CpuKernels& k = KernelsFor(isa);
  const int64_t n = x.size();
  const std::vector<float> ones(n, 1.0f);
  Outputs out{std::vector<float>(n), std::vector<float>(n)};
  const GeluArgs fwd = {tanh, x.data(), nullptr, out.y.data()};
  const GeluArgs bwd = {tanh, x.data(), ones.data(), out.dx.data()};
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, n / 3}, {n / 3, n}}) {
    k.gelu_f32(fwd, b, e);
    k.gelu_grad_f32(bwd, b, e);
  }
  return out;
}

TEST(GeluKernel, ExactWithinTheStatedBoundOfErfcAtEveryLevel) {
  const std::vector<float> x = Grid();
  for (CpuIsa isa : CpuIsaRunnable()) {
    SCOPED_TRACE(CpuIsaName(isa));
    const Outputs out = RunKernels(isa, x, false);
    double worst_y = 0, worst_tail = 0, worst_dx = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double xi = x[i], ref = GeluRef(xi);
      // Phi within 2^-23, and the product's rounding.
      worst_y = MaxOrNaN(
          worst_y, std::abs(out.y[i] - ref) / (std::abs(xi) * 2 * kEps +
                                               std::abs(ref) * kEps + 1e-300));
      // The tail keeps relative accuracy: within 2^-16 of gelu for x < 0.
      if (xi < 0)
        worst_tail =
            MaxOrNaN(worst_tail, std::abs(out.y[i] - ref) / std::abs(ref));
      // gelu' = Phi + x phi: Phi's bound plus 2^-21 relative of x phi
      // (exp's 2 ulps and the rounding of x^2 / 2 at |x| <= 12).
      const double xphi = std::abs(GeluGradRef(xi) - PhiRef(xi));
      worst_dx = MaxOrNaN(
          worst_dx, std::abs(out.dx[i] - GeluGradRef(xi)) /
                        (2 * kEps + 8 * kEps * xphi + kEps * GeluGradRef(xi)));
    }
    EXPECT_LE(worst_y, 1.0);
    EXPECT_LE(worst_tail, 1.0 / (1 << 16));
    EXPECT_LE(worst_dx, 1.0);
  }
}

TEST(GeluKernel, TanhFormWithinTheStatedBoundOfItsFormula) {
  const std::vector<float> x = Grid();
  for (CpuIsa isa : CpuIsaRunnable()) {
    SCOPED_TRACE(CpuIsaName(isa));
    const Outputs out = RunKernels(isa, x, true);
    double worst_y = 0, worst_dx = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double xi = x[i];
      worst_y =
          MaxOrNaN(worst_y, std::abs(out.y[i] - GeluTanhRef(xi)) /
                                (std::abs(xi) * 2 * kEps +
                                 std::abs(GeluTanhRef(xi)) * kEps + 1e-300));
      worst_dx = MaxOrNaN(worst_dx, std::abs(out.dx[i] - GeluTanhGradRef(xi)) /
                                        (4 * kEps * (1 + std::abs(xi))));
    }
    EXPECT_LE(worst_y, 1.0);
    EXPECT_LE(worst_dx, 1.0);
  }
}

// The levels differ by their fused multiply-adds only: within twice the
// reference bounds of each other, NaN and infinities in the same places.
TEST(GeluKernel, EveryLevelWithinTheBoundsOfBaseline) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(4099);
  for (float& v : x) v = normal(rng);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[6] = std::numeric_limits<float>::infinity();
  x[7] = -std::numeric_limits<float>::infinity();
  x[8] = -0.0f;
  for (bool tanh : {false, true}) {
    const Outputs base = RunKernels(CpuIsa::kBaseline, x, tanh);
    for (CpuIsa isa : CpuIsaRunnable()) {
      SCOPED_TRACE(absl::StrCat(CpuIsaName(isa), tanh ? " tanh" : " exact"));
      const Outputs out = RunKernels(isa, x, tanh);
      for (size_t i = 0; i < x.size(); ++i) {
        const double ax = std::abs(x[i]);
        for (auto [got, want, bound] :
             {std::tuple{out.y[i], base.y[i],
                         2 * (2 * kEps * ax + kEps * std::abs(base.y[i]))},
              std::tuple{out.dx[i], base.dx[i], 2 * (4 * kEps * (1 + ax))}}) {
          if (!std::isfinite(want)) {
            EXPECT_EQ(std::isnan(got), std::isnan(want)) << x[i];
            if (!std::isnan(want)) EXPECT_EQ(got, want) << x[i];
          } else {
            EXPECT_LE(std::abs(got - want), bound) << x[i];
          }
        }
      }
    }
  }
}

// Non-finite inputs give torch's results (0.5 x (1 + erf) as written):
// gelu(+inf) = +inf, gelu(-inf) = NaN (-inf * 0), NaN stays NaN; large
// finite inputs saturate.
TEST(GeluKernel, NonFiniteAndLargeInputsAsTorch) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {inf,    -inf, std::nanf(""), 1e30f,
                                -1e30f, 0.0f, -30.0f};
  for (bool tanh : {false, true}) {
    const Outputs out = RunKernels(CpuIsa::kBaseline, x, tanh);
    EXPECT_EQ(out.y[0], inf);
    EXPECT_TRUE(std::isnan(out.y[1]));
    EXPECT_TRUE(std::isnan(out.y[2]));
    EXPECT_EQ(out.y[3], 1e30f);
    EXPECT_EQ(out.y[4], 0.0f);
    EXPECT_EQ(out.y[5], 0.0f);
    EXPECT_LE(std::abs(out.y[6]), 1e-30f);
    EXPECT_EQ(out.dx[5], 0.5f);
    // The tanh form's x^3 overflows at 1e30, and its gradient was
    // 0 * inf = NaN there (as torch's float32 is); torch's float64 gives 1, 0.
    EXPECT_EQ(out.dx[3], 1.0f) << tanh;
    EXPECT_EQ(out.dx[4], 0.0f) << tanh;
  }
  // The float64 functor (the op's float64 kernel, and CUDA's) alike.
  const GeluBackwardFn grad(Attrs().Str("approximate", "tanh"));
  EXPECT_EQ(grad(1e200, 1.0), 1.0);
  EXPECT_EQ(grad(-1e200, 1.0), 0.0);
  EXPECT_EQ(grad(3e38f, 1.0f), 1.0f);
}

// The op runs the active level's kernel for float32 and GeluFn (std::erf)
// for float64; both agree with the reference.
TEST(Gelu, OpBothFormsBothDTypes) {
  Graph g;
  const std::vector<double> xs = {-6.0, -1.5, -0.25, 0.0, 0.5, 1.4142, 3.0};
  Value x32 = g.Input("x32", DType::kFloat32, {7});
  Value x64 = g.Input("x64", DType::kFloat64, {7});
  std::vector<float> xs32(xs.begin(), xs.end());
  const Feeds feeds = {{x32, T<float>({7}, xs32)}, {x64, T<double>({7}, xs)}};
  ASSERT_OK_AND_ASSIGN(auto out,
                       RunOnce(g,
                               {Gelu(x32), Gelu(x32, GeluApproximate::kTanh),
                                Gelu(x64), Gelu(x64, GeluApproximate::kTanh)},
                               feeds));
  std::vector<double> exact, tanh;
  for (double v : xs) {
    exact.push_back(GeluRef(v));
    tanh.push_back(GeluTanhRef(v));
  }
  // float32: within 2^-23 |x| (|x| <= 6); float64: 0.5 x (1 + erf) as
  // torch, whose cancellation for x < 0 costs digits relative to gelu.
  ExpectAllClose(out[0], exact, 0, 8e-7, "exact f32");
  ExpectAllClose(out[1], tanh, 0, 8e-7, "tanh f32");
  ExpectAllClose(out[2], exact, 1e-14, 1e-16, "exact f64");
  ExpectAllClose(out[3], tanh, 1e-14, 1e-16, "tanh f64");
}

TEST(Gelu, GradientKeepsTheForm) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {3});
  ASSERT_OK_AND_ASSIGN(auto grads,
                       Gradients(Sum(Gelu(x, GeluApproximate::kTanh)), {x}));
  EXPECT_EQ(grads[0].node().attrs.GetStr("approximate"), "tanh");
  ASSERT_OK_AND_ASSIGN(auto exact, Gradients(Sum(Gelu(x)), {x}));
  EXPECT_EQ(exact[0].node().attrs.GetStr("approximate"), "none");
}

TEST(Gelu, Errors) {
  Graph g;
  Value i = g.Input("i", DType::kInt64, {3});
  Value x = g.Input("x", DType::kFloat32, {3});
  Value x64 = g.Input("x64", DType::kFloat64, {3});
  Value y = g.Input("y", DType::kFloat32, {4});
  EXPECT_STATUS(Gelu(i).status(), absl::StatusCode::kInvalidArgument, "gelu");
  EXPECT_STATUS(GeluGrad(x, x64).status(), absl::StatusCode::kInvalidArgument,
                "dtype");
  EXPECT_STATUS(GeluGrad(x, y).status(), absl::StatusCode::kInvalidArgument,
                "x and g must have the same shape");
}

}  // namespace
}  // namespace dagrad::testing
