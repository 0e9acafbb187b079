// GemmBf16 (ops/cpu/kernels/cpu_kernels.h): bfloat16 products by AVX512_BF16's
// vdpbf16ps, which multiplies 16 lanes of bfloat16 pairs and adds both
// products to float32 accumulators. Compiled at the avx512 level only, with
// -mavx512bf16 (tools/cmake/isa_kernels.cmake).
//
// The micro-kernel holds a tile of kGemmBf16Rows x kGemmBf16Cols (6 x 64)
// of C in 24 zmm accumulators over the whole of k: per pair of k, four
// vectors of B's panel and six broadcasts of A's pairs feed 24 vdpbf16ps,
// each 32 multiply-adds (BLIS's skx sgemm tile is 32 x 12 floats, 24
// accumulators of 16 lanes, each fma 16). Row panels go in groups of
// kGroupPanels, so that a group of A stays in L2 while each panel of B
// passes through it once.

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/cpu/kernels/level.h"

namespace dagrad::kernels::DAGRAD_ISA {
namespace {

constexpr int kRows = kGemmBf16Rows;
constexpr int kVectors = kGemmBf16Cols / 16;
// 16 panels of 96 rows: 96 KB of A at k = 512.
constexpr int64_t kGroupPanels = 16;

// Tile accumulates A's panel `a` times B's panel `b` over `pairs` pairs.
inline void Tile(const uint32_t* a, const uint32_t* b, int64_t pairs,
                 __m512 (&acc)[kRows][kVectors]) {
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t q = 0; q < pairs; ++q) {
    __m512bh bv[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      bv[v] = (__m512bh)_mm512_loadu_si512(b + q * kGemmBf16Cols + 16 * v);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512bh av =
          (__m512bh)_mm512_set1_epi32(static_cast<int>(a[q * kRows + r]));
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v)
        acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
}

// Store writes alpha * acc (+ beta * C) to the rows of C from i0 and the
// columns from j0 that lie inside (m, n).
inline void Store(const GemmBf16Args& g, const __m512 (&acc)[kRows][kVectors],
                  int64_t i0, int64_t j0) {
  const int64_t rows = std::min<int64_t>(kRows, g.m - i0);
  const __m512 alpha = _mm512_set1_ps(g.alpha), beta = _mm512_set1_ps(g.beta);
  for (int64_t r = 0; r < rows; ++r) {
    float* c = g.c + (i0 + r) * g.rsc;
    for (int v = 0; v < kVectors && j0 + 16 * v < g.n; ++v) {
      const int64_t j = j0 + 16 * v;
      const int lanes = static_cast<int>(std::min<int64_t>(16, g.n - j));
      __m512 out = _mm512_mul_ps(alpha, acc[r][v]);
      if (g.csc == 1) {
        const __mmask16 mask =
            static_cast<__mmask16>((uint32_t{1} << lanes) - 1);
        if (g.beta != 0.0f)
          out = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(mask, c + j), out);
        _mm512_mask_storeu_ps(c + j, mask, out);
        continue;
      }
      alignas(64) float lane[16];
      _mm512_store_ps(lane, out);
      for (int l = 0; l < lanes; ++l) {
        float& y = c[(j + l) * g.csc];
        y = g.beta == 0.0f ? lane[l] : std::fma(g.beta, y, lane[l]);
      }
    }
  }
}

}  // namespace

void GemmBf16(const GemmBf16Args& g, int64_t row_begin, int64_t row_end,
              int64_t col_begin, int64_t col_end) {
  for (int64_t group = row_begin; group < row_end; group += kGroupPanels) {
    const int64_t group_end = std::min(row_end, group + kGroupPanels);
    for (int64_t j = col_begin; j < col_end; ++j) {
      const uint32_t* b = g.b + j * g.pairs * kGemmBf16Cols;
      for (int64_t p = group; p < group_end; ++p) {
        __m512 acc[kRows][kVectors];
        Tile(g.a + p * g.pairs * kRows, b, g.pairs, acc);
        Store(g, acc, p * kRows, j * kGemmBf16Cols);
      }
    }
  }
}

}  // namespace dagrad::kernels::DAGRAD_ISA
