// ops/cpu/internal/vector_math.h
//
// VectorExp: exp written in plain arithmetic so that loops calling it
// vectorise (glibc's expf is a scalar call unless -ffast-math, which dagrad
// does not use). float: Cody-Waite range reduction and the degree-6
// polynomial of Cephes' expf (error within 2 ulp); exactly 0 below the
// smallest normal result, so masked softmax positions (-inf) stay exactly
// zero; +inf above the largest; NaN stays NaN. double: std::exp (gradient
// checks want it exact).
//
// SumLanes: a sum in double that vectorises, for the float reductions that
// must agree with float64 (DESIGN: every float reduction accumulates in
// double).
//
//   // setup: Kernel
//   for (int64_t k = 0; k < n; ++k) y[k] = VectorExp(x[k] - m);
//   double s = SumLanes(n, [&](int64_t i) { return static_cast<double>(x[i]); });
//
// RowMax: the NaN-propagating maximum of a row (ops/math/minmax.h), vectorised.
//
//   // setup: Kernel
//   float m = RowMax(x, n);   // -inf for n == 0 or a row of -inf; NaN if any is

#ifndef DAGRAD_OPS_CPU_INTERNAL_VECTOR_MATH_H_
#define DAGRAD_OPS_CPU_INTERNAL_VECTOR_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ops/math/minmax.h"

namespace dagrad {

// ExpOfReduced returns e^r by the degree-6 polynomial of Cephes' expf, for
// the reduced argument r = x - n ln2 (|r| <= ln2 / 2). T is float here and
// a register of floats in ops/cpu/kernels/vec_exp.h: the same operations in the
// same order, so both give the same bits.
template <typename T>
static inline T ExpOfReduced(T r) {
  T p = T{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * (r * r) + r + 1.0f;
}

// static: each translation unit keeps its own copy. The ISA-level kernels
// (ops/cpu/kernels/) compile this header once per level; a shared inline copy
// could be the AVX-512 one for everyone.
static inline float VectorExp(float x) {
  constexpr float kLo = -87.33654f, kHi = 88.72283f;
  // Clamp with comparisons that map NaN to a finite bound (fminf/fmaxf would
  // be library calls here, and block vectorisation).
  float xc = x >= kLo ? x : kLo;
  xc = xc <= kHi ? xc : kHi;
  // n = round-to-nearest-even(xc / ln2) by adding and subtracting 1.5 * 2^23
  // (|xc / ln2| < 2^22): what std::nearbyint gives in the default rounding
  // mode, but two adds that vectorise with SSE2, where nearbyint is a call.
  constexpr float kRound = 12582912.0f;
  const float n = (xc * 1.44269504088896341f + kRound) - kRound;
  // Cody-Waite: r = x - n ln2 in two parts, exact for |n| < 2^8.
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  const float p = ExpOfReduced(r);
  // 2^n from its exponent bits (n + 127 lies in [1, 254] after the clamp,
  // but 2^128 is needed at the top: scale by 2^(n-1) twice there).
  const int32_t e = static_cast<int32_t>(n);
  const int32_t half = e >> 1;
  const int32_t bits_a = (half + 127) << 23, bits_b = (e - half + 127) << 23;
  float sa, sb;
  std::memcpy(&sa, &bits_a, 4);
  std::memcpy(&sb, &bits_b, 4);
  const float y = p * sa * sb;
  const float result = x < kLo ? 0.0f : (x > kHi ? INFINITY : y);
  return x != x ? x : result;
}

inline double VectorExp(double x) { return std::exp(x); }

// SumLanes returns f(0) + ... + f(n-1) in double. Without -ffast-math the
// compiler may not reorder a single running sum; kLanes independent
// partial sums give it vector lanes to fill (and, as a side effect, an
// error that grows with n / kLanes rather than n). static, as VectorExp:
// the ISA-level kernels use it too.
template <int kLanes = 8, typename F>
static inline double SumLanes(int64_t n, F&& f) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lane[l] += f(i + l);
  }
  double s = 0;
  for (; i < n; ++i) s += f(i);
  for (int l = 0; l < kLanes; ++l) s += lane[l];
  return s;
}

// MaxIdentity starts a max: -inf for floats (so a row of -inf gives -inf,
// and an empty row too), lowest() for integers.
template <typename T>
T MaxIdentity() {
  if constexpr (std::numeric_limits<T>::has_infinity) {
    return -std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

// RowMax returns the maximum of x[0, n), NaN if any element is NaN, and
// MaxIdentity<T>() for n == 0. Sixteen running maxima, each from the
// identity: lanes[j] takes x[k + j] of every whole block of sixteen, the
// tail goes to lanes[0], then the lanes combine in order (an `omp simd
// reduction(max)` starts its lanes at the compiler's choice: -inf with GCC,
// -FLT_MAX with clang, and drops NaN). For floating point the lanes are
// GCC vectors: written as a plain loop of PropagatingMax, GCC left it
// scalar and branchy (over half of a softmax over rows of 32).
template <typename T>
T RowMax(const T* x, int64_t n) {
  constexpr int kLanes = 16;
  T lanes[kLanes];
  int64_t k = 0;
  if constexpr (std::is_floating_point_v<T>) {
    // 16-byte vectors: SSE2 and NEON registers (GCC splits wider generic
    // vectors into scalars where the target has no register that wide).
    constexpr int kW = 16 / sizeof(T), kRegs = kLanes / kW;
    typedef T Vec __attribute__((vector_size(16)));
    typedef T VecU __attribute__((vector_size(16), aligned(alignof(T)), may_alias));
    Vec v[kRegs];
    for (Vec& r : v) r = Vec{} + MaxIdentity<T>();
    for (; k + kLanes <= n; k += kLanes) {
      for (int r = 0; r < kRegs; ++r) {
        const Vec xk = *reinterpret_cast<const VecU*>(x + k + r * kW);
        v[r] = ((v[r] > xk) | (v[r] != v[r])) ? v[r] : xk;  // PropagatingMax by lane
      }
    }
    for (int j = 0; j < kLanes; ++j) lanes[j] = v[j / kW][j % kW];
  } else {
    for (T& l : lanes) l = MaxIdentity<T>();
    for (; k + kLanes <= n; k += kLanes) {
      for (int j = 0; j < kLanes; ++j) lanes[j] = PropagatingMax(lanes[j], x[k + j]);
    }
  }
  for (; k < n; ++k) lanes[0] = PropagatingMax(lanes[0], x[k]);
  T m = lanes[0];
  for (int j = 1; j < kLanes; ++j) m = PropagatingMax(m, lanes[j]);
  return m;
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_INTERNAL_VECTOR_MATH_H_
