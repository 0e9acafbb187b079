// Float sums that accumulate in double, for one ISA level: the column sums
// of a reduction over leading axes (a bias's gradient) and softmax's
// backward rows. Before these were compiled per level they ran at the
// x86-64 baseline (two doubles per SSE2 instruction): the column sums were
// 3% of the toy training step. Every sum keeps a fixed order per output, so
// each level is bit-identical to the baseline.

#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/cpu/kernels/level.h"
// SumLanes has internal linkage (vector_math.h says why).
#include "ops/cpu/internal/vector_math.h"

namespace dagrad::kernels::DAGRAD_ISA {

void SumColumnsF32(const float* in, int64_t rows, int64_t stride, int64_t len, double* acc) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float *s0 = in + r * stride, *s1 = s0 + stride, *s2 = s1 + stride, *s3 = s2 + stride;
    for (int64_t j = 0; j < len; ++j) {
      acc[j] += (static_cast<double>(s0[j]) + s1[j]) + (static_cast<double>(s2[j]) + s3[j]);
    }
  }
  for (; r < rows; ++r) {
    const float* src = in + r * stride;
    for (int64_t j = 0; j < len; ++j) acc[j] += src[j];
  }
}

void SoftmaxGradF32(const float* g, const float* y, float* dx, int64_t rows, int64_t n) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* gr = g + row * n;
    const float* yr = y + row * n;
    float* d = dx + row * n;
    const float dot = static_cast<float>(
        SumLanes<16>(n, [&](int64_t k) { return static_cast<double>(gr[k]) * yr[k]; }));
    for (int64_t k = 0; k < n; ++k) d[k] = yr[k] * (gr[k] - dot);
  }
}

}  // namespace dagrad::kernels::DAGRAD_ISA
