// ops/cpu/kernels/vec_exp.h
//
// VecF / VecI: the ISA level's register of floats / int32s as GCC vector
// extensions (operators, comparisons giving lane masks, ?: selecting by
// lane), so that one piece of code serves every level; UnalignedF: the same
// register read from or written to any float address. ExpShiftedVec:
// VectorExp (ops/cpu/internal/vector_math.h) on a register, for arguments
// up to 88; ExpNeg: an exp for arguments <= 0 with fused multiply-adds
// where the level has them (MulAdd); Horner: a polynomial by MulAdd;
// ForEachVec: a function of registers over a range of floats. For the
// kernels in ops/cpu/kernels/ only: everything here lives in the level's
// namespace.
//
//   VecF x = *reinterpret_cast<const UnalignedF*>(in + k);
//   *reinterpret_cast<UnalignedF*>(out + k) = ExpShiftedVec(x - m);  // m >= x

#ifndef DAGRAD_OPS_CPU_KERNELS_VEC_EXP_H_
#define DAGRAD_OPS_CPU_KERNELS_VEC_EXP_H_

#include <cstdint>
#include <initializer_list>

#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/kernels/simd.h"

namespace dagrad::kernels::DAGRAD_ISA {

constexpr int kVecBytes = sizeof(Simd<float>::Reg);
typedef float VecF __attribute__((vector_size(kVecBytes)));
typedef int32_t VecI __attribute__((vector_size(kVecBytes)));
typedef float UnalignedF
    __attribute__((vector_size(kVecBytes), aligned(4), may_alias));
constexpr int kVecLanes = kVecBytes / sizeof(float);

// ExpShiftedVec is VectorExp on a register of lanes, for arguments <= 88
// and NaN (a value less its row's maximum is <= 0): the same operations in
// the same order, each rounded once, so every lane is bit-identical to
// VectorExp's result. There, clamped to [-87.34, 88], n lies in
// [-126, 127], so 2^n is one normal float and p * 2^n rounds once, as
// VectorExp's p * 2^(n/2) * 2^(n - n/2) does (which it needs for n = 128,
// up to 88.72); above 88 it gives exp(88). Written out because GCC does not
// if-convert VectorExp's selects below AVX-512 (its loop stayed scalar at
// the baseline and avx2 levels: 0.2 G exps/s against 0.8-1.6 at avx512).
inline VecF ExpShiftedVec(VecF x) {
  const VecF lo = VecF{} + -87.33654f, hi = VecF{} + 88.0f, round = VecF{} + 12582912.0f;
  VecF xc = x >= lo ? x : lo;  // NaN -> lo, as VectorExp
  xc = xc <= hi ? xc : hi;
  const VecF n = (xc * 1.44269504088896341f + round) - round;
  const VecF r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  const VecF scale = reinterpret_cast<VecF>((__builtin_convertvector(n, VecI) + 127) << 23);
  const VecF y = ExpOfReduced(r) * scale;
  return x != x ? x : (x < lo ? VecF{} : y);
}

// MulAdd is a * b + c: one fused rounding where the level has FMA.
inline VecF MulAdd(VecF a, VecF b, VecF c) {
#if defined(__AVX512F__)
  return reinterpret_cast<VecF>(_mm512_fmadd_ps(reinterpret_cast<__m512>(a),
                                                reinterpret_cast<__m512>(b),
                                                reinterpret_cast<__m512>(c)));
#elif defined(__AVX2__) && defined(__FMA__)
  return reinterpret_cast<VecF>(_mm256_fmadd_ps(reinterpret_cast<__m256>(a),
                                                reinterpret_cast<__m256>(b),
                                                reinterpret_cast<__m256>(c)));
#else
  return a * b + c;
#endif
}

template <int kN>
inline VecF Horner(const float (&c)[kN], VecF t) {
  VecF p = VecF{} + c[kN - 1];
  for (int i = kN - 2; i >= 0; --i) p = MulAdd(p, t, VecF{} + c[i]);
  return p;
}

// ExpNeg is exp(v) for v <= 0 (NaN gives some finite value: callers
// multiply it by x): VectorExp's reduction and polynomial
// (ops/cpu/internal/vector_math.h), without the overflow side, 0 below -87.33654.
inline VecF ExpNeg(VecF v) {
  const VecF lo = VecF{} + -87.33654f, round = VecF{} + 12582912.0f;
  const VecF xc = v >= lo ? v : lo;
  const VecF n = MulAdd(xc, VecF{} + 1.44269504088896341f, round) - round;
  const VecF r =
      MulAdd(n, VecF{} + 2.12194440e-4f, MulAdd(n, VecF{} + -0.693359375f, xc));
  VecF p = VecF{} + 1.9875691500e-4f;
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                  1.6666665459e-1f, 5.0000001201e-1f}) {
    p = MulAdd(p, r, VecF{} + c);
  }
  p = MulAdd(p, r * r, r) + 1.0f;
  // n lies in [-126, 0]: 2^n is one normal float.
  const VecF scale =
      reinterpret_cast<VecF>((__builtin_convertvector(n, VecI) + 127) << 23);
  return v < lo ? VecF{} : p * scale;
}

// ForEachVec writes f(x[i], g[i]) to y[i] for i in [begin, end) (g[i] = 0
// where g is null): whole registers first, then the tail padded to a
// register, so every element takes the same arithmetic. y may be x or g.
template <typename F>
void ForEachVec(const float* x, const float* g, float* y, int64_t begin, int64_t end, F f) {
  int64_t i = begin;
  for (; i + kVecLanes <= end; i += kVecLanes) {
    const VecF xi = *reinterpret_cast<const UnalignedF*>(x + i);
    const VecF gi = g ? *reinterpret_cast<const UnalignedF*>(g + i) : VecF{};
    *reinterpret_cast<UnalignedF*>(y + i) = f(xi, gi);
  }
  if (i == end) return;
  VecF xt{}, gt{};
  for (int64_t k = 0; k < end - i; ++k) {
    xt[k] = x[i + k];
    gt[k] = g ? g[i + k] : 0.0f;
  }
  const VecF yt = f(xt, gt);
  for (int64_t k = 0; k < end - i; ++k) y[i + k] = yt[k];
}

}  // namespace dagrad::kernels::DAGRAD_ISA

#endif  // DAGRAD_OPS_CPU_KERNELS_VEC_EXP_H_
