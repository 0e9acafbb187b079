// Fused attention's row kernels for one ISA level (ops/attention_cpu.cc
// runs the block products and the masks around them): the online-softmax
// update of a block of scores in the forward pass, and the step from
// scores to dS in the backward pass, each with attention dropout's keep
// decision (ops/dropout.h). The exponentials are VectorExp's (ExpVec, one
// register of lanes at a time, the tail in a padded register), sums run in
// double in SumLanes<16>'s order, and no multiply-add is fused: every
// level's result is bit-identical to the baseline's.

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ops/kernels/cpu_kernels.h"
#include "ops/kernels/level.h"
#include "ops/kernels/simd.h"
#include "ops/kernels/vec_exp.h"
// VectorExp, RowMax and SumLanes have internal linkage (vector_math.h says why).
#include "ops/minmax.h"
#include "ops/vector_math.h"

namespace dagrad::kernels::DAGRAD_ISA {
namespace {

typedef uint32_t VecU __attribute__((vector_size(kVecBytes)));
typedef uint32_t UnalignedU __attribute__((vector_size(kVecBytes), aligned(4), may_alias));

// Keep returns the dropout factor of one word: drop_scale when kept, else 0.
template <typename T>
T Keep(uint32_t word, uint32_t threshold, T drop_scale) {
  return (word >> 8) >= threshold ? drop_scale : T(0);
}

// ExpSum writes exp(z[k] - m) over z[0, n) and returns their sum in double.
double ExpSum(float* z, int64_t n, float m) { return ExpShiftSumF32(z, z, n, m); }
double ExpSum(double* z, int64_t n, double m) {
  for (int64_t k = 0; k < n; ++k) z[k] = std::exp(z[k] - m);
  return SumLanes<16>(n, [&](int64_t k) { return z[k]; });
}

template <typename T>
void SoftmaxRows(const AttentionBlock<T>& a, T* m, double* l, T* alpha) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < a.rows; ++r) {
    T* z = a.s + r * a.ld;
    const int64_t valid = a.valid[r];
    const T m_new = PropagatingMax(m[r], RowMax(z, valid));
    if (m_new == kNegInf) {  // nothing kept so far: no weight, no rescaling
      std::memset(z, 0, a.n * sizeof(T));
      alpha[r] = T(1);
      continue;
    }
    alpha[r] = VectorExp(m[r] - m_new);  // 0 for the first kept block (m = -inf)
    const double sum = ExpSum(z, valid, m_new);
    std::memset(z + valid, 0, (a.n - valid) * sizeof(T));
    l[r] = l[r] * alpha[r] + sum;
    m[r] = m_new;
    if (a.bits == nullptr) continue;
    const uint32_t* w = a.bits + r * a.ld;
    for (int64_t k = 0; k < valid; ++k) z[k] *= Keep(w[k], a.threshold, a.drop_scale);
  }
}

// GradLanes is the backward step on one register of lanes: p = exp(z -
// lse), s = p * keep (the dropped weight) and dp = p * (dp * keep - d).
void GradLanes(float* z, float* dp, const uint32_t* bits, const AttentionBlock<float>& a,
               float lse, float d) {
  const VecF p = ExpVec(*reinterpret_cast<const UnalignedF*>(z) - lse);
  VecF keep = VecF{} + 1.0f;
  if (bits != nullptr) {
    const VecU w = *reinterpret_cast<const UnalignedU*>(bits) >> 8;
    keep = w >= a.threshold ? VecF{} + a.drop_scale : VecF{};
  }
  const VecF g = *reinterpret_cast<const UnalignedF*>(dp);
  *reinterpret_cast<UnalignedF*>(z) = p * keep;
  *reinterpret_cast<UnalignedF*>(dp) = p * (g * keep - d);
}

void GradRow(const AttentionBlock<float>& a, int64_t r, float lse, float d, float* dp) {
  float* z = a.s + r * a.ld;
  const uint32_t* bits = a.bits == nullptr ? nullptr : a.bits + r * a.ld;
  const int64_t valid = a.valid[r];
  int64_t k = 0;
  for (; k + kVecLanes <= valid; k += kVecLanes) {
    GradLanes(z + k, dp + k, bits == nullptr ? nullptr : bits + k, a, lse, d);
  }
  if (k < valid) {  // the tail, in a padded register
    alignas(64) float zt[kVecLanes] = {}, dt[kVecLanes] = {};
    alignas(64) uint32_t bt[kVecLanes] = {};
    const int64_t len = valid - k;
    std::memcpy(zt, z + k, len * sizeof(float));
    std::memcpy(dt, dp + k, len * sizeof(float));
    if (bits != nullptr) std::memcpy(bt, bits + k, len * sizeof(uint32_t));
    GradLanes(zt, dt, bits == nullptr ? nullptr : bt, a, lse, d);
    std::memcpy(z + k, zt, len * sizeof(float));
    std::memcpy(dp + k, dt, len * sizeof(float));
  }
}

void GradRow(const AttentionBlock<double>& a, int64_t r, double lse, double d, double* dp) {
  double* z = a.s + r * a.ld;
  const uint32_t* bits = a.bits == nullptr ? nullptr : a.bits + r * a.ld;
  for (int64_t k = 0; k < a.valid[r]; ++k) {
    const double p = std::exp(z[k] - lse);
    const double keep = bits == nullptr ? 1.0 : Keep(bits[k], a.threshold, a.drop_scale);
    z[k] = p * keep;
    dp[k] = p * (dp[k] * keep - d);
  }
}

template <typename T>
void GradRows(const AttentionBlock<T>& a, const T* lse, const T* d, T* dp) {
  for (int64_t r = 0; r < a.rows; ++r) {
    T* dpr = dp + r * a.ld;
    GradRow(a, r, lse[r], d[r], dpr);
    const int64_t valid = a.valid[r];
    std::memset(a.s + r * a.ld + valid, 0, (a.n - valid) * sizeof(T));
    std::memset(dpr + valid, 0, (a.n - valid) * sizeof(T));
  }
}

}  // namespace

void AttentionSoftmaxF32(const AttentionBlock<float>& a, float* m, double* l, float* alpha) {
  SoftmaxRows(a, m, l, alpha);
}
void AttentionSoftmaxF64(const AttentionBlock<double>& a, double* m, double* l, double* alpha) {
  SoftmaxRows(a, m, l, alpha);
}
void AttentionGradF32(const AttentionBlock<float>& a, const float* lse, const float* d,
                      float* dp) {
  GradRows(a, lse, d, dp);
}
void AttentionGradF64(const AttentionBlock<double>& a, const double* lse, const double* d,
                      double* dp) {
  GradRows(a, lse, d, dp);
}

}  // namespace dagrad::kernels::DAGRAD_ISA
