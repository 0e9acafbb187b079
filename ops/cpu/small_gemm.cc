#include "ops/cpu/internal/small_gemm.h"

#include <type_traits>

namespace dagrad {

template <typename T>
void SmallGemm(const CpuKernels& kernels, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t rsa, int64_t csa, const T* b, int64_t rsb, int64_t csb, T beta, T* c,
               int64_t ldc) {
  // The packed B: k <= 256 rows of n <= 256 elements padded to 64 bytes.
  constexpr int64_t kMaxPanelBytes = 256 * 256 * 8;
  alignas(64) thread_local unsigned char storage[kMaxPanelBytes];
  const SmallGemmArgs<T> args = {m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, ldc,
                                 reinterpret_cast<T*>(storage)};
  if constexpr (std::is_same_v<T, float>) {
    kernels.small_gemm_f32(args);
  } else {
    kernels.small_gemm_f64(args);
  }
}

template void SmallGemm<float>(const CpuKernels&, int64_t, int64_t, int64_t, float, const float*,
                               int64_t, int64_t, const float*, int64_t, int64_t, float, float*,
                               int64_t);
template void SmallGemm<double>(const CpuKernels&, int64_t, int64_t, int64_t, double,
                                const double*, int64_t, int64_t, const double*, int64_t, int64_t,
                                double, double*, int64_t);

}  // namespace dagrad
