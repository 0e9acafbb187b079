// Row kernels of softmax and layer norm for one ISA level: plain loops the
// compiler vectorises at the level's width (4, 8 or 16 floats). None fuses
// a multiply-add, and every sum has a fixed order (independent partial sums
// in lanes, combined in order), so each level's result is bit-identical to
// the baseline's; the levels differ only in speed.

#include "ops/kernels/cpu_kernels.h"
#include "ops/kernels/level.h"
#include "ops/kernels/simd.h"
#include "ops/kernels/vec_exp.h"
// VectorExp and SumLanes have internal linkage (vector_math.h says why).
#include "ops/vector_math.h"

#include <cmath>

namespace dagrad::kernels::DAGRAD_ISA {
namespace {

// Sixteen partial sums: a full AVX-512 pair of double vectors, and the same
// order on every level.
constexpr int kLanes = 16;

// ExpShifted writes exp(in[k] - m) to out[k] for k < len.
void ExpShifted(const float* in, float* out, int64_t len, float m) {
  int64_t k = 0;
  for (; k + kVecLanes <= len; k += kVecLanes) {
    *reinterpret_cast<UnalignedF*>(out + k) =
        ExpVec(*reinterpret_cast<const UnalignedF*>(in + k) - m);
  }
  for (; k < len; ++k) out[k] = VectorExp(in[k] - m);
}

struct Moments {
  double mean, rstd;  // rstd = 1 / sqrt(biased variance + eps)
};

// Two passes in double (mean, then squared deviations): no cancellation of
// E[x^2] - E[x]^2 on rows with a large mean.
template <typename T>
Moments RowMoments(const T* x, int64_t n, double eps) {
  const double mean = SumLanes<kLanes>(n, [&](int64_t i) { return static_cast<double>(x[i]); }) / n;
  const double var = SumLanes<kLanes>(n, [&](int64_t i) {
                       const double d = x[i] - mean;
                       return d * d;
                     }) / n;
  return {mean, 1.0 / std::sqrt(var + eps)};
}

template <typename T>
void LayerNormRows(const LayerNormArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t d = a.d;
  const T* gamma = a.gamma;
  const T* beta = a.beta;
  for (int64_t r = begin; r < end; ++r) {
    const T* x = a.x + r * d;
    T* y = a.y + r * d;
    const Moments m = RowMoments(x, d, a.eps);
    // In double: rounding the mean to T first would cost up to half an ulp
    // of the mean, which on a row far from 0 is many ulps of xhat.
    for (int64_t i = 0; i < d; ++i) y[i] = static_cast<T>((x[i] - m.mean) * m.rstd);
    if (gamma) {
      for (int64_t i = 0; i < d; ++i) y[i] *= gamma[i];
    }
    if (beta) {
      for (int64_t i = 0; i < d; ++i) y[i] += beta[i];
    }
  }
}

// dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)), gy = g * gamma.
template <typename T>
void LayerNormGradRows(const LayerNormArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t d = a.d;
  const T* gamma = a.gamma;
  for (int64_t r = begin; r < end; ++r) {
    const T* x = a.x + r * d;
    const T* g = a.g + r * d;
    T* dx = a.y + r * d;
    const Moments m = RowMoments(x, d, a.eps);
    auto gy = [&](int64_t i) -> double {
      return gamma ? static_cast<double>(g[i]) * gamma[i] : static_cast<double>(g[i]);
    };
    const double mean_gy = SumLanes<kLanes>(d, gy) / d;
    const double mean_gy_xhat =
        SumLanes<kLanes>(d, [&](int64_t i) { return gy(i) * ((x[i] - m.mean) * m.rstd); }) / d;
    // Read x[i] and g[i] before writing dx[i]: dx may be x's buffer.
    for (int64_t i = 0; i < d; ++i) {
      const double xhat = (x[i] - m.mean) * m.rstd;
      dx[i] = static_cast<T>(m.rstd * (gy(i) - mean_gy - xhat * mean_gy_xhat));
    }
  }
}

// The column sums of dgamma and dbeta: acc[i] += g * xhat, acc[d + i] += g.
template <typename T>
void LayerNormParamGradRows(const LayerNormArgs<T>& a, int64_t begin, int64_t end,
                            double* __restrict acc) {
  const int64_t d = a.d;
  double* __restrict dgamma = acc;
  double* __restrict dbeta = acc + d;
  for (int64_t r = begin; r < end; ++r) {
    const T* x = a.x + r * d;
    const T* g = a.g + r * d;
    const Moments m = RowMoments(x, d, a.eps);
    for (int64_t i = 0; i < d; ++i) {
      const double gi = g[i];
      dgamma[i] += gi * ((x[i] - m.mean) * m.rstd);
      dbeta[i] += gi;
    }
  }
}

}  // namespace

double ExpShiftSumF32(const float* x, float* y, int64_t n, float m) {
  // Blocks of kBlock: exp into y (or a buffer), then the block's sum.
  constexpr int64_t kBlock = 256;
  alignas(64) float buffer[kBlock];
  double total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = n - b < kBlock ? n - b : kBlock;
    const float* in = x + b;
    float* out = y != nullptr ? y + b : buffer;
    ExpShifted(in, out, len, m);
    total += SumLanes<kLanes>(len, [&](int64_t k) { return static_cast<double>(out[k]); });
  }
  return total;
}

void LayerNormF32(const LayerNormArgs<float>& args, int64_t begin, int64_t end) {
  LayerNormRows(args, begin, end);
}
void LayerNormF64(const LayerNormArgs<double>& args, int64_t begin, int64_t end) {
  LayerNormRows(args, begin, end);
}
void LayerNormGradF32(const LayerNormArgs<float>& args, int64_t begin, int64_t end) {
  LayerNormGradRows(args, begin, end);
}
void LayerNormGradF64(const LayerNormArgs<double>& args, int64_t begin, int64_t end) {
  LayerNormGradRows(args, begin, end);
}

void LayerNormParamGradF32(const LayerNormArgs<float>& args, int64_t begin, int64_t end,
                           double* acc) {
  LayerNormParamGradRows(args, begin, end, acc);
}
void LayerNormParamGradF64(const LayerNormArgs<double>& args, int64_t begin, int64_t end,
                           double* acc) {
  LayerNormParamGradRows(args, begin, end, acc);
}

}  // namespace dagrad::kernels::DAGRAD_ISA
