// GemmBFloat16 (ops/cpu_runtime.h): bfloat16 operands widened to float32
// block by block, multiplied by sgemm.

#include <algorithm>
#include <memory>

#include "ops/cpu_runtime.h"
#include "ops/parallel.h"

namespace dagrad {
namespace {

// A's panels hold at most this many float32 elements (4 MB): enough rows
// for sgemm to run at full speed, and a bounded copy for any m.
constexpr int64_t kPanelElements = int64_t{1} << 20;

// Widen copies the (rows, cols) matrix at `src`, element (i, j) at
// src[i * rs + j * cs], to row-major float32 at `dst`, exactly; over the
// threads unless `one_thread`.
void Widen(const BFloat16* src, int64_t rs, int64_t cs, int64_t rows, int64_t cols, float* dst,
           bool one_thread) {
  auto widen_rows = [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = BFloat16ToFloat(src[i * rs + j * cs]);
    }
  };
  if (one_thread) {
    widen_rows(0, rows);
  } else {
    ParallelFor(rows, RowGrain(cols), widen_rows);
  }
}

}  // namespace

absl::Status GemmBFloat16(int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a,
                          int64_t rsa, int64_t csa, const BFloat16* b, int64_t rsb, int64_t csb,
                          float beta, float* c, int64_t rsc, int64_t csc, bool one_thread) {
  if (absl::Status st = ConfigureCpu(); !st.ok()) return st;
  const int64_t panel = std::max<int64_t>(1, kPanelElements / std::max<int64_t>(k, 1));
  // Uninitialised: every element is written before it is read.
  const auto wide_b = std::make_unique_for_overwrite<float[]>(k * n);
  const auto wide_a = std::make_unique_for_overwrite<float[]>(std::min(m, panel) * k);
  Widen(b, rsb, csb, k, n, wide_b.get(), one_thread);
  for (int64_t row = 0; row < m; row += panel) {
    const int64_t rows = std::min(panel, m - row);
    Widen(a + row * rsa, rsa, csa, rows, k, wide_a.get(), one_thread);
    if (absl::Status st = Gemm<float>(rows, n, k, alpha, wide_a.get(), k, 1, wide_b.get(), n, 1,
                                      beta, c + row * rsc, rsc, csc, one_thread);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace dagrad
