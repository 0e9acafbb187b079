// Row kernels of softmax and layer norm for one ISA level: plain loops the
// compiler vectorises at the level's width (4, 8 or 16 floats). None fuses
// a multiply-add, and every sum has a fixed order (independent partial sums
// in lanes, combined in order), so each level's result is bit-identical to
// the baseline's; the levels differ only in speed.

#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/cpu/kernels/level.h"
#include "ops/cpu/kernels/simd.h"
#include "ops/cpu/kernels/vec_exp.h"
// VectorExp and SumLanes have internal linkage (vector_math.h says why).
#include "ops/cpu/internal/vector_math.h"

#include <cmath>
#include <type_traits>

namespace dagrad::kernels::DAGRAD_ISA {
namespace {

// Sixteen partial sums: a full AVX-512 pair of double vectors, and the same
// order on every level.
constexpr int kLanes = 16;

// ExpShifted writes exp(in[k] - m) to out[k] for k < len, m at least every
// in[k] (ExpShiftSum's contract). A tail shorter than a register goes
// through one padded register too (the rows of causal and length masks end
// anywhere): ExpShiftedVec gives each lane VectorExp's bits.
void ExpShifted(const float* in, float* out, int64_t len, float m) {
  ForEachVec(in, nullptr, out, 0, len, [m](VecF x, VecF) { return ExpShiftedVec(x - m); });
}

struct Moments {
  double mean, rstd;  // rstd = 1 / sqrt(biased variance + eps)
};

// SumsOfRows sets s[r] = f(r, 0) + ... + f(r, n - 1) for kRows rows, each
// in SumLanes<kLanes>'s order (so a row's sum has the same bits whichever
// group it is in). A row's lanes are summed as SumLanes does, then the
// kRows chains of kLanes dependent adds that combine them run side by side
// instead of one after another.
template <int kRows, typename F>
void SumsOfRows(int64_t n, F&& f, double* s) {
  double lane[kRows][kLanes];
  for (int r = 0; r < kRows; ++r) {
    double* acc = lane[r];
    for (int l = 0; l < kLanes; ++l) acc[l] = 0;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) acc[l] += f(r, i + l);
    }
    s[r] = 0;
    for (; i < n; ++i) s[r] += f(r, i);
  }
  for (int l = 0; l < kLanes; ++l) {
    for (int r = 0; r < kRows; ++r) s[r] += lane[r][l];
  }
}

// MomentsOfRows sets m[r] for kRows rows of n elements from x. Two passes
// in double (mean, then squared deviations): no cancellation of E[x^2] -
// E[x]^2 on rows with a large mean.
template <int kRows, typename T>
void MomentsOfRows(const T* x, int64_t n, double eps, Moments* m) {
  double mean[kRows], var[kRows];
  SumsOfRows<kRows>(n, [&](int r, int64_t i) { return static_cast<double>(x[r * n + i]); }, mean);
  for (int r = 0; r < kRows; ++r) mean[r] /= n;
  if constexpr (std::is_same_v<T, double>) {
    // A float64 row's sum rounds (a float32 row's rarely does): a constant
    // row of 3.3e22 had a mean an ulp off, every deviation that ulp, and
    // xhat +-1 for 0. Adding the mean deviation back puts it on the constant.
    double drift[kRows];
    SumsOfRows<kRows>(n, [&](int r, int64_t i) { return x[r * n + i] - mean[r]; }, drift);
    for (int r = 0; r < kRows; ++r) mean[r] += drift[r] / n;
  }
  SumsOfRows<kRows>(
      n,
      [&](int r, int64_t i) {
        const double d = x[r * n + i] - mean[r];
        return d * d;
      },
      var);
  for (int r = 0; r < kRows; ++r) m[r] = {mean[r], 1.0 / std::sqrt(var[r] / n + eps)};
}

// InGroups calls group(rows, r) for rows [begin, end): rows is
// std::integral_constant<int, 4> for each group of four rows from r, then
// <int, 1> for each row left.
template <typename Group>
void InGroups(int64_t begin, int64_t end, Group&& group) {
  constexpr int kGroup = 4;
  int64_t r = begin;
  for (; r + kGroup <= end; r += kGroup) group(std::integral_constant<int, kGroup>(), r);
  for (; r < end; ++r) group(std::integral_constant<int, 1>(), r);
}

// ForEachRow calls row(r, moments of row r) for rows [begin, end) of x (d
// elements each), taking the moments of a group of rows before calling row
// for any of them. row(r) may overwrite row r of x: it is read for its
// moments first, and again only by row(r).
template <typename T, typename Row>
void ForEachRow(const T* x, int64_t d, double eps, int64_t begin, int64_t end, Row&& row) {
  InGroups(begin, end, [&](auto rows, int64_t r) {
    constexpr int kRows = decltype(rows)::value;
    Moments m[kRows];
    MomentsOfRows<kRows>(x + r * d, d, eps, m);
    for (int k = 0; k < kRows; ++k) row(r + k, m[k]);
  });
}

template <typename T>
void LayerNormRows(const LayerNormArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t d = a.d;
  const T* gamma = a.gamma;
  const T* beta = a.beta;
  ForEachRow(a.x, d, a.eps, begin, end, [&](int64_t r, const Moments& m) {
    const T* x = a.x + r * d;
    T* y = a.y + r * d;
    // In double: rounding the mean to T first would cost up to half an ulp
    // of the mean, which on a row far from 0 is many ulps of xhat.
    for (int64_t i = 0; i < d; ++i) y[i] = static_cast<T>((x[i] - m.mean) * m.rstd);
    if (gamma) {
      for (int64_t i = 0; i < d; ++i) y[i] *= gamma[i];
    }
    if (beta) {
      for (int64_t i = 0; i < d; ++i) y[i] += beta[i];
    }
  });
}

// dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)), gy = g * gamma, a
// group of rows at a time (InGroups), their sums side by side.
template <typename T>
void LayerNormGradRows(const LayerNormArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t d = a.d;
  const T* gamma = a.gamma;
  InGroups(begin, end, [&](auto rows, int64_t r0) {
    constexpr int kRows = decltype(rows)::value;
    const T* x = a.x + r0 * d;
    const T* g = a.g + r0 * d;
    T* dx = a.y + r0 * d;
    Moments m[kRows];
    MomentsOfRows<kRows>(x, d, a.eps, m);
    auto gy = [&](int r, int64_t i) -> double {
      const double gi = g[r * d + i];
      return gamma ? gi * gamma[i] : gi;
    };
    auto xhat = [&](int r, int64_t i) { return (x[r * d + i] - m[r].mean) * m[r].rstd; };
    double sum_gy[kRows], sum_gy_xhat[kRows];
    SumsOfRows<kRows>(d, gy, sum_gy);
    SumsOfRows<kRows>(d, [&](int r, int64_t i) { return gy(r, i) * xhat(r, i); }, sum_gy_xhat);
    // Row r's x and g are read before its dx is written: dx may be x's buffer.
    for (int r = 0; r < kRows; ++r) {
      const double mean_gy = sum_gy[r] / d, mean_gy_xhat = sum_gy_xhat[r] / d;
      for (int64_t i = 0; i < d; ++i) {
        dx[r * d + i] =
            static_cast<T>(m[r].rstd * (gy(r, i) - mean_gy - xhat(r, i) * mean_gy_xhat));
      }
    }
  });
}

// The column sums of dgamma and dbeta: acc[i] += g * xhat, acc[d + i] += g.
template <typename T>
void LayerNormParamGradRows(const LayerNormArgs<T>& a, int64_t begin, int64_t end,
                            double* __restrict acc) {
  const int64_t d = a.d;
  double* __restrict dgamma = acc;
  double* __restrict dbeta = acc + d;
  ForEachRow(a.x, d, a.eps, begin, end, [&](int64_t r, const Moments& m) {
    const T* x = a.x + r * d;
    const T* g = a.g + r * d;
    for (int64_t i = 0; i < d; ++i) {
      const double gi = g[i];
      dgamma[i] += gi * ((x[i] - m.mean) * m.rstd);
      dbeta[i] += gi;
    }
  });
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
