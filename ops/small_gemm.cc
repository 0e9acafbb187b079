#include "ops/small_gemm.h"

#include <algorithm>
#include <cstring>

namespace dagrad {
namespace {

// One 64-byte vector: 16 floats or 8 doubles (an AVX-512 register; GCC
// splits it on narrower machines). GCC ignores vector_size on a dependent
// alias, hence the concrete typedefs.
typedef float Vec16f __attribute__((vector_size(64)));
typedef double Vec8d __attribute__((vector_size(64)));
template <typename T>
struct VecOf;
template <>
struct VecOf<float> {
  using type = Vec16f;
};
template <>
struct VecOf<double> {
  using type = Vec8d;
};
template <typename T>
using Vec = typename VecOf<T>::type;
template <typename T>
constexpr int kLanes = 64 / sizeof(T);

// Rows of C per register block: 8 rows x 2 vectors is 16 accumulators, so
// each broadcast of A feeds two FMAs and each vector of B eight (4 rows
// reached 103 GFLOP/s on 32^3 products, 8 rows 131, on one Zen 5 core).
constexpr int kRows = 8;
constexpr int64_t kMaxPanelBytes = 256 * 256 * 8;

// Computes rows [i, i + R) and columns [j, j + C * lanes) of alpha * A·B from
// the packed panel (k rows of `stride` elements, zero-padded), and writes the
// first `cols` of those columns to C (with beta * C when beta != 0).
template <typename T, int R, int C>
inline void Block(int64_t i, int64_t j, int64_t cols, int64_t k, T alpha, const T* a,
                  int64_t rsa, int64_t csa, const T* panel, int64_t stride, T beta, T* c,
                  int64_t ldc) {
  constexpr int W = kLanes<T>;
  Vec<T> acc[R][C] = {};
  for (int64_t p = 0; p < k; ++p) {
    Vec<T> bv[C];
    std::memcpy(bv, panel + p * stride + j, sizeof(bv));
    for (int r = 0; r < R; ++r) {
      const T av = a[(i + r) * rsa + p * csa];
      for (int q = 0; q < C; ++q) acc[r][q] += av * bv[q];
    }
  }
  for (int r = 0; r < R; ++r) {
    T out[C * W];
    for (int q = 0; q < C; ++q) {
      const Vec<T> v = alpha * acc[r][q];
      std::memcpy(out + q * W, &v, sizeof(v));
    }
    T* cr = c + (i + r) * ldc + j;
    if (beta == T(0)) {
      std::memcpy(cr, out, cols * sizeof(T));
    } else {
      for (int64_t l = 0; l < cols; ++l) cr[l] = out[l] + beta * cr[l];
    }
  }
}

template <typename T, int C>
void Columns(int64_t m, int64_t j, int64_t cols, int64_t k, T alpha, const T* a, int64_t rsa,
             int64_t csa, const T* panel, int64_t stride, T beta, T* c, int64_t ldc) {
  int64_t i = 0;
  for (; i + kRows <= m; i += kRows) {
    Block<T, kRows, C>(i, j, cols, k, alpha, a, rsa, csa, panel, stride, beta, c, ldc);
  }
  for (; i + kRows / 2 <= m; i += kRows / 2) {
    Block<T, kRows / 2, C>(i, j, cols, k, alpha, a, rsa, csa, panel, stride, beta, c, ldc);
  }
  for (; i < m; ++i) Block<T, 1, C>(i, j, cols, k, alpha, a, rsa, csa, panel, stride, beta, c, ldc);
}

}  // namespace

template <typename T>
void SmallGemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa, int64_t csa,
               const T* b, int64_t rsb, int64_t csb, T beta, T* c, int64_t ldc) {
  constexpr int W = kLanes<T>;
  // Pack B (k x n, any strides) into rows padded to a multiple of the vector.
  const int64_t stride = (n + W - 1) / W * W;
  alignas(64) thread_local unsigned char storage[kMaxPanelBytes + 64];
  T* panel = reinterpret_cast<T*>(storage);
  for (int64_t p = 0; p < k; ++p) {
    T* row = panel + p * stride;
    for (int64_t j = 0; j < n; ++j) row[j] = b[p * rsb + j * csb];
    for (int64_t j = n; j < stride; ++j) row[j] = T(0);
  }
  int64_t j = 0;
  for (; j + 2 * W <= stride; j += 2 * W) {
    Columns<T, 2>(m, j, std::min<int64_t>(2 * W, n - j), k, alpha, a, rsa, csa, panel, stride,
                  beta, c, ldc);
  }
  if (j < stride) {
    Columns<T, 1>(m, j, n - j, k, alpha, a, rsa, csa, panel, stride, beta, c, ldc);
  }
}

template void SmallGemm<float>(int64_t, int64_t, int64_t, float, const float*, int64_t, int64_t,
                               const float*, int64_t, int64_t, float, float*, int64_t);
template void SmallGemm<double>(int64_t, int64_t, int64_t, double, const double*, int64_t,
                                int64_t, const double*, int64_t, int64_t, double, double*,
                                int64_t);

}  // namespace dagrad
