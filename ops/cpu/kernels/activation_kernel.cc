// tanh's and sigmoid's float32 kernels for one ISA level
// (CpuKernels::tanh_f32 and sigmoid_f32), as GCC vector extensions at the
// level's width, in place of the C library's one call per element. With
// a = |x| and e = exp(-2a) (ExpNeg, ops/cpu/kernels/vec_exp.h):
//
//   a < 0.625:  tanh(x) = x + x^3 P(x^2)     P: degree 4, tanh's rel. error 7e-9
//   a >= 0.625: tanh(a) = 1 - 2e / (1 + e), its sign from x
//
// P is fitted (weighted least squares, iterated to equal ripple) to
// (tanh(x) - x) / x^3 on [0, 0.625]; above, e <= 0.29, and the one
// rounding that matters is 1 - q, q = 2e / (1 + e) <= 0.45 taking its
// rounding errors at its own, smaller scale.
//
// sigmoid(x) = 1 / (1 + e') for x >= 0 and e' / (1 + e') below, e' =
// exp(-|x|): neither overflows, and the small tail keeps its relative
// accuracy down to x = -87.3 (0 below, where torch has subnormals to
// -103). NaN stays NaN, tanh(-0) = -0. The FMA rule (cpu_kernels.h): P
// and the exponential use MulAdd, fused at the avx2 and avx512 levels.

#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/cpu/kernels/level.h"
#include "ops/cpu/kernels/simd.h"
#include "ops/cpu/kernels/vec_exp.h"

namespace dagrad::kernels::DAGRAD_ISA {
namespace {

constexpr float kTanhSwitch = 0.625f;
// P(s) = (tanh(x) - x) / x^3 for s = x^2 in [0, 0.625^2].
constexpr float kTanhSmall[] = {-3.333328402e-01f, 1.333149349e-01f, -5.374367142e-02f,
                                2.065114118e-02f, -5.717663049e-03f};

constexpr int32_t kSignBit = INT32_MIN;

// Abs clears the sign bit (-0 too); WithSignOf sets it as x's.
inline VecF Abs(VecF x) { return reinterpret_cast<VecF>(reinterpret_cast<VecI>(x) & ~kSignBit); }
inline VecF WithSignOf(VecF magnitude, VecF x) {
  return reinterpret_cast<VecF>(reinterpret_cast<VecI>(magnitude) |
                                (reinterpret_cast<VecI>(x) & kSignBit));
}

inline VecF TanhVec(VecF x) {
  const VecF a = Abs(x), s = a * a;
  const VecF small = MulAdd(a * s, Horner(kTanhSmall, s), a);
  const VecF e = ExpNeg(-2.0f * a);
  const VecF large = 1.0f - 2.0f * e / (1.0f + e);
  const VecF y = WithSignOf(a < kTanhSwitch ? small : large, x);
  return x != x ? x : y;
}

inline VecF SigmoidVec(VecF x) {
  const VecF e = ExpNeg(-Abs(x));
  const VecF y = x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
  return x != x ? x : y;
}

}  // namespace

void TanhF32(const float* x, float* y, int64_t n) {
  ForEachVec(x, nullptr, y, 0, n, [](VecF v, VecF) { return TanhVec(v); });
}

void SigmoidF32(const float* x, float* y, int64_t n) {
  ForEachVec(x, nullptr, y, 0, n, [](VecF v, VecF) { return SigmoidVec(v); });
}

}  // namespace dagrad::kernels::DAGRAD_ISA
