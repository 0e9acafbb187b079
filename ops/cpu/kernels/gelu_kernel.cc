// GELU's float32 kernels for one ISA level (CpuKernels::gelu_f32 and
// gelu_grad_f32), as GCC vector extensions at the level's width. The exact
// form needs Phi(x) = (1 + erf(x / sqrt(2))) / 2, which glibc computes one
// scalar call at a time; here, with u = x / sqrt(2), s = u^2:
//
//   |u| < 1:  erf(u) = u * P(s)                   P: degree 5, rel. error 4e-8
//   |u| >= 1: erfc(|u|) = exp(-s) * t * Q(t),     Q: degree 7, rel. error 9e-8
//             t = 1 / (1 + |u| / 2)               (t -> 0 as |u| -> inf)
//
// both fitted (weighted least squares, iterated to equal ripple) to
// erf(u) / u and erfc(|u|) exp(s) / t on their ranges. Phi's error is then
// within 2^-23 of the exact value everywhere (tests/autodiff/gelu_test.cc), against
// 2^-24 for 0.5 * (1 + erff(u)); for negative x the tail 0.5 * erfc(|u|)
// keeps Phi's relative error within 2^-16 down to x = -12, where
// 1 + erff(u) would cancel to nothing. exp(-s) is also sqrt(2 pi) phi(x),
// so the backward pass g * (Phi + x phi) costs one exponential. The tanh
// form is x * sigmoid(2 z), z = sqrt(2 / pi) (x + 0.044715 x^3), which
// equals 0.5 x (1 + tanh z) without its cancellation.
//
// The FMA rule (cpu_kernels.h): the polynomials and the exponential's
// reduction use MulAdd, fused at the avx2 and avx512 levels (a third of
// the arithmetic) and as written at the baseline.

#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/cpu/kernels/level.h"
#include "ops/cpu/kernels/simd.h"
#include "ops/cpu/kernels/vec_exp.h"

namespace dagrad::kernels::DAGRAD_ISA {
namespace {

constexpr float kSqrtHalf = 0.70710678118654752440f;    // 1 / sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;  // 1 / sqrt(2 pi)
constexpr float kTanhScale = 0.79788456080286535588f;   // sqrt(2 / pi)
constexpr float kTanhCubic = 0.044715f;

// P(s): erf(u) / u for s = u^2 in [0, 1].
constexpr float kErfSmall[] = {1.128379107e+00f, -3.761232495e-01f,
                               1.128017977e-01f, -2.671131119e-02f,
                               4.917551298e-03f, -5.631420645e-04f};
// Q(t): erfc(|u|) exp(u^2) / t for t = 1 / (1 + |u| / 2) in (0, 2 / 3].
constexpr float kErfcLarge[] = {
    2.820947766e-01f, 2.821003199e-01f, 2.466215640e-01f,  1.793487072e-01f,
    6.247589737e-02f, 7.533789426e-02f, -2.162694186e-01f, 8.864813298e-02f};

// Normal holds Phi(x) and exp(-x^2 / 2) = sqrt(2 pi) phi(x).
struct Normal {
  VecF cdf, gauss;
};

inline Normal NormalOf(VecF x) {
  const VecF u = x * kSqrtHalf;
  const VecF a = u < 0.0f ? -u : u;
  const VecF s = u * u;
  const VecF gauss = ExpNeg(-s);
  const VecF small =
      MulAdd(VecF{} + 0.5f, u * Horner(kErfSmall, s), VecF{} + 0.5f);
  const VecF t = 1.0f / (1.0f + 0.5f * a);
  const VecF half_erfc = 0.5f * gauss * (t * Horner(kErfcLarge, t));
  const VecF large = u < 0.0f ? half_erfc : 1.0f - half_erfc;
  return {a < 1.0f ? small : large, gauss};
}

// TanhForm holds s = sigmoid(2 z), 1 - s and dz/dx for the tanh form.
struct TanhForm {
  VecF s, one_minus_s, dz;
};

// With e = exp(-2 |z|) <= 1: s = 1 / (1 + e) and 1 - s = e / (1 + e) for
// z >= 0, the other way round for z < 0; neither overflows nor cancels.
inline TanhForm TanhFormOf(VecF x) {
  const VecF x2 = x * x;
  const VecF z = kTanhScale * MulAdd(VecF{} + kTanhCubic, x2 * x, x);
  const VecF e = ExpNeg(-2.0f * (z < 0.0f ? -z : z));
  const VecF d = 1.0f / (1.0f + e);
  const VecF ed = e * d;
  const auto positive = z >= 0.0f;  // a lane mask
  return {positive ? d : ed, positive ? ed : d,
          kTanhScale * MulAdd(VecF{} + 3.0f * kTanhCubic, x2, VecF{} + 1.0f)};
}

inline VecF GeluVec(VecF x, bool tanh) {
  if (tanh) return x * TanhFormOf(x).s;
  return x * NormalOf(x).cdf;
}

// gelu'(x) = Phi(x) + x phi(x); for the tanh form, d/dx x sigmoid(2 z) =
// s + x * 2 s (1 - s) z', whose second term is 0 where 2 s (1 - s) is
// (|x| above 10 or so; past 1.8e19, z' overflows and 0 * inf was NaN).
inline VecF GeluGradVec(VecF x, VecF g, bool tanh) {
  if (tanh) {
    const TanhForm f = TanhFormOf(x);
    const VecF w = 2.0f * f.s * f.one_minus_s;
    return g * (f.s + (w > 0.0f ? x * (w * f.dz) : VecF{}));
  }
  const Normal n = NormalOf(x);
  return g * (n.cdf + x * (n.gauss * kInvSqrt2Pi));
}

}  // namespace

// g is null for the forward pass.
void GeluF32(const GeluArgs& args, int64_t begin, int64_t end) {
  if (args.tanh) {
    ForEachVec(args.x, args.g, args.y, begin, end, [](VecF x, VecF) { return GeluVec(x, true); });
  } else {
    ForEachVec(args.x, args.g, args.y, begin, end, [](VecF x, VecF) { return GeluVec(x, false); });
  }
}

void GeluGradF32(const GeluArgs& args, int64_t begin, int64_t end) {
  if (args.tanh) {
    ForEachVec(args.x, args.g, args.y, begin, end,
               [](VecF x, VecF g) { return GeluGradVec(x, g, true); });
  } else {
    ForEachVec(args.x, args.g, args.y, begin, end,
               [](VecF x, VecF g) { return GeluGradVec(x, g, false); });
  }
}

}  // namespace dagrad::kernels::DAGRAD_ISA
