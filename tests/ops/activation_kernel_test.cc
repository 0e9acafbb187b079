// tanh's and sigmoid's float32 kernels (ops/cpu/kernels/activation_kernel.cc)
// at every ISA level: within the bound that ops/cpu/kernels/cpu_kernels.h
// states, in units in the last place of the exact value (std::tanh and
// std::exp in double), over every 257th float of either sign; the special
// values; ranges that end inside a register, in place. The ops against
// PyTorch: tests/autodiff/golden_ops_test.cc (tanh, sigmoid and their
// *_specials).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

double TanhRef(double x) { return std::tanh(x); }
double SigmoidRef(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// UlpsOff is |y - exact| in units in the last place of the float nearest
// `exact` (the smallest subnormal's spacing below the normal range).
double UlpsOff(float y, double exact) {
  const float nearest = static_cast<float>(std::abs(exact));
  const double ulp = std::nextafter(nearest, std::numeric_limits<float>::infinity()) - nearest;
  return std::abs(static_cast<double>(y) - exact) / ulp;
}

// Every 257th finite float of either sign (about 33 million / 257 of each).
std::vector<float> Sweep() {
  std::vector<float> x;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 257) {
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
    x.push_back(-f);
  }
  return x;
}

using Kernel = void (*)(const float*, float*, int64_t);

// Each kernel, its exact value, and the bound that cpu_kernels.h states.
struct Activation {
  const char* name;
  Kernel CpuKernels::*kernel;
  double (*exact)(double);
  double max_ulps;
};

const Activation kActivations[] = {{"tanh", &CpuKernels::tanh_f32, TanhRef, 1.5},
                                   {"sigmoid", &CpuKernels::sigmoid_f32, SigmoidRef, 2.5}};

TEST(ActivationKernel, WithinTheStatedUlpsAtEveryLevel) {
  const std::vector<float> x = Sweep();
  std::vector<float> y(x.size());
  for (const Activation& f : kActivations) {
    for (CpuIsa isa : CpuIsaRunnable()) {
      SCOPED_TRACE(absl::StrCat(f.name, " at ", CpuIsaName(isa)));
      (KernelsFor(isa).*f.kernel)(x.data(), y.data(), x.size());
      double worst = 0;
      float worst_x = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double exact = f.exact(x[i]);
        // sigmoid is 0 where exp(x) is below the normal range (stated).
        if (exact < 0x1p-126 && exact > 0 && y[i] == 0 && x[i] < -87.33654f) continue;
        const double off = UlpsOff(y[i], exact);
        if (!(off <= worst)) worst = off, worst_x = x[i];
      }
      EXPECT_LE(worst, f.max_ulps) << "at x = " << worst_x;
    }
  }
}

TEST(ActivationKernel, SpecialValuesAndTailsInPlace) {
  const float inf = std::numeric_limits<float>::infinity();
  for (CpuIsa isa : CpuIsaRunnable()) {
    SCOPED_TRACE(CpuIsaName(isa));
    const CpuKernels& k = KernelsFor(isa);
    // 21 elements: a register or two and a tail at every level.
    std::vector<float> t = {NAN, inf, -inf, 0.0f, -0.0f, 1e-30f, -1e-30f, 0.625f, -0.625f, 9.0f,
                            -9.0f, 20.0f, 3.0f, 0.1f, -0.3f, 1.0f, 2.0f, -2.0f, 5.0f, 0.5f, -4.0f};
    std::vector<float> s = t;
    const std::vector<float> x = t;
    k.tanh_f32(t.data(), t.data(), t.size());
    k.sigmoid_f32(s.data(), s.data(), s.size());
    EXPECT_TRUE(std::isnan(t[0]) && std::isnan(s[0]));
    EXPECT_EQ(t[1], 1.0f);
    EXPECT_EQ(t[2], -1.0f);
    EXPECT_EQ(s[1], 1.0f);
    EXPECT_EQ(s[2], 0.0f);
    EXPECT_TRUE(t[4] == 0 && std::signbit(t[4]));  // tanh(-0) = -0
    EXPECT_EQ(s[3], 0.5f);
    EXPECT_EQ(t[5], 1e-30f);
    for (size_t i = 1; i < x.size(); ++i) {
      EXPECT_LE(UlpsOff(t[i], TanhRef(x[i])), kActivations[0].max_ulps) << x[i];
      EXPECT_LE(UlpsOff(s[i], SigmoidRef(x[i])), kActivations[1].max_ulps) << x[i];
    }
  }
}

}  // namespace
}  // namespace dagrad::testing
