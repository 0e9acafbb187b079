// SmallGemm's kernel for one ISA level (see ops/cpu/internal/small_gemm.h for when it is
// used). B is packed into a contiguous panel; then kRows rows of C at a time
// accumulate in registers (kRows x 2 vectors), each broadcast of A feeding
// two multiply-adds and each vector of B kRows of them.
//
// kRows is the level's register budget: accumulators + 2 vectors of B + a
// broadcast must fit the register file, or the loop spills and runs at a
// fraction of the speed (the old 8 x 2 block of 64-byte vectors was 32 ymm
// registers on AVX2, which has 16: ~3 GFLOP/s on 32^3 products).
//   avx512 (32 zmm): 8 x 2 = 16 accumulators (131 GFLOP/s on 32^3, one
//                    Zen 5 core; 4 rows reached 103);
//   avx2 (16 ymm):   6 x 2 = 12, BLIS's haswell shape (6 x 16 floats);
//   baseline (16 xmm, no FMA: a product and a sum per step, so one more
//                    register for the product): 4 x 2 = 8;
//   aarch64 (32 q):  8 x 2 = 16.

#include <cstring>
#include <type_traits>

#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/cpu/kernels/level.h"
#include "ops/cpu/kernels/simd.h"

namespace dagrad::kernels::DAGRAD_ISA {
namespace {

#if defined(__AVX512F__) || (defined(__aarch64__) && defined(__ARM_NEON))
constexpr int kRows = 8;
#elif defined(__AVX2__)
constexpr int kRows = 6;
#else
constexpr int kRows = 4;
#endif

// Computes rows [i, i + R) and columns [j, j + C * lanes) of alpha * A·B from
// `panel` (B as k rows of `stride` elements, whole vectors: packed and
// zero-padded, or B itself), and writes the first `cols` of those columns
// to C (with beta * C when beta != 0).
template <typename T, int R, int C>
void Block(const SmallGemmArgs<T>& g, const T* panel, int64_t i, int64_t j, int64_t cols,
           int64_t stride) {
  using V = Simd<T>;
  constexpr int W = V::kLanes;
  typename V::Reg acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < C; ++q) acc[r][q] = V::Zero();
  }
  const T* a = g.a + i * g.rsa;
  for (int64_t p = 0; p < g.k; ++p) {
    typename V::Reg bv[C];
    for (int q = 0; q < C; ++q) bv[q] = V::Load(panel + p * stride + j + q * W);
    for (int r = 0; r < R; ++r) {
      const typename V::Reg av = V::Set1(a[r * g.rsa + p * g.csa]);
      for (int q = 0; q < C; ++q) acc[r][q] = V::MulAdd(av, bv[q], acc[r][q]);
    }
  }
  const typename V::Reg alpha = V::Set1(g.alpha);
  if (g.beta == T(0) && cols == C * W) {
    // Whole vectors straight to C: no staging copy (a memcpy call per row).
    for (int r = 0; r < R; ++r) {
      T* cr = g.c + (i + r) * g.ldc + j;
      for (int q = 0; q < C; ++q) V::Store(cr + q * W, V::Mul(alpha, acc[r][q]));
    }
    return;
  }
  for (int r = 0; r < R; ++r) {
    T out[C * W];
    for (int q = 0; q < C; ++q) V::Store(out + q * W, V::Mul(alpha, acc[r][q]));
    T* cr = g.c + (i + r) * g.ldc + j;
    if (g.beta == T(0)) {
      std::memcpy(cr, out, cols * sizeof(T));
    } else {
      for (int64_t l = 0; l < cols; ++l) cr[l] = out[l] + g.beta * cr[l];
    }
  }
}

// RowTail runs the last `rows` (< kRows) rows as one block of that height.
template <typename T, int R, int C>
void RowTail(const SmallGemmArgs<T>& g, const T* panel, int64_t i, int64_t rows, int64_t j,
             int64_t cols, int64_t stride) {
  if constexpr (R > 0) {
    if (rows == R) {
      Block<T, R, C>(g, panel, i, j, cols, stride);
    } else {
      RowTail<T, R - 1, C>(g, panel, i, rows, j, cols, stride);
    }
  }
}

template <typename T, int C>
void Columns(const SmallGemmArgs<T>& g, const T* panel, int64_t j, int64_t cols,
             int64_t stride) {
  int64_t i = 0;
  for (; i + kRows <= g.m; i += kRows) Block<T, kRows, C>(g, panel, i, j, cols, stride);
  RowTail<T, kRows - 1, C>(g, panel, i, g.m - i, j, cols, stride);
}

#if defined(__AVX2__)
// Transpose8x8 writes the 8 x 8 floats at src (row stride lds) transposed
// to dst (row stride ldd): 24 shuffles instead of 64 scalar moves.
void Transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int h = 0; h < 8; h += 4) {
    r[h] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

// PackTransposed packs a B whose columns are contiguous (rsb == 1, q·kᵀ's
// kᵀ): element (p, j) at b[j * csb + p]. Float blocks of 8 x 8 go through
// vector transposes where the level has them (a third of a 32^3 product's
// time went to the scalar gather); the rest moves one element at a time.
template <typename T>
void PackTransposed(const SmallGemmArgs<T>& g, int64_t stride) {
  int64_t j0 = 0;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>) {
    for (; j0 + 8 <= g.n; j0 += 8) {
      int64_t p = 0;
      for (; p + 8 <= g.k; p += 8) {
        Transpose8x8(g.b + j0 * g.csb + p, g.csb, g.panel + p * stride + j0, stride);
      }
      for (; p < g.k; ++p) {
        for (int64_t j = j0; j < j0 + 8; ++j) g.panel[p * stride + j] = g.b[j * g.csb + p];
      }
    }
  }
#endif
  for (int64_t j = j0; j < g.n; ++j) {
    for (int64_t p = 0; p < g.k; ++p) g.panel[p * stride + j] = g.b[j * g.csb + p];
  }
}

// PackB packs B (k x n, any strides) into rows of `stride` elements, zero
// beyond column n.
template <typename T>
void PackB(const SmallGemmArgs<T>& g, int64_t stride) {
  if (g.rsb == 1 && g.csb != 1) PackTransposed(g, stride);
  for (int64_t p = 0; p < g.k; ++p) {
    T* row = g.panel + p * stride;
    const T* src = g.b + p * g.rsb;
    if (g.csb == 1) {
      std::memcpy(row, src, g.n * sizeof(T));
    } else if (g.rsb != 1) {
      for (int64_t j = 0; j < g.n; ++j) row[j] = src[j * g.csb];
    }
    for (int64_t j = g.n; j < stride; ++j) row[j] = T(0);
  }
}

template <typename T>
void SmallGemm(const SmallGemmArgs<T>& g) {
  constexpr int W = Simd<T>::kLanes;
  constexpr int64_t kPad = 64 / sizeof(T);
  // A B stored by rows of whole vectors (attention's p·v, dS·k) is read in
  // place: the vectors the blocks load are already contiguous, and packing
  // would only copy them (a tenth of a small attention product's time).
  const bool in_place = g.csb == 1 && g.n % W == 0;
  const int64_t stride = in_place ? g.rsb : (g.n + kPad - 1) / kPad * kPad;
  if (!in_place) PackB(g, stride);
  const T* panel = in_place ? g.b : g.panel;
  int64_t j = 0;
  for (; j + 2 * W <= g.n; j += 2 * W) Columns<T, 2>(g, panel, j, 2 * W, stride);
  for (; j < g.n; j += W) Columns<T, 1>(g, panel, j, g.n - j < W ? g.n - j : W, stride);
}

}  // namespace

void SmallGemmF32(const SmallGemmArgs<float>& args) { SmallGemm(args); }
void SmallGemmF64(const SmallGemmArgs<double>& args) { SmallGemm(args); }

}  // namespace dagrad::kernels::DAGRAD_ISA
