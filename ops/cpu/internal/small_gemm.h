// ops/cpu/internal/small_gemm.h
//
// SmallGemm: C = alpha * A·B + beta * C for products too small for BLIS,
// whose per-call overhead (packing, thread set-up: ~5 us) dominates a
// 32x32x32 product: BLIS reaches 12 GFLOP/s there. The attention of a small
// model is thousands of such products per step. The kernel is the active
// ISA level's (ops/cpu/kernels/small_gemm_kernel.cc: B packed into a panel,
// then register blocks of C shaped for the level's register file); this
// wrapper supplies the panel, one per thread.
//
// Operands are given like Gemm's: pointers with (row, column) strides; C is
// row-major (row stride ldc, unit column stride).
//
//   // setup: SmallProduct
//   DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
//   if (IsSmallGemm(*kernels, m, n, k))
//     SmallGemm<float>(*kernels, m, n, k, 1, a, rsa, csa, b, rsb, csb, 0, c, n);

#ifndef DAGRAD_OPS_CPU_INTERNAL_SMALL_GEMM_H_
#define DAGRAD_OPS_CPU_INTERNAL_SMALL_GEMM_H_

#include <cstdint>

#include "ops/cpu/kernels/cpu_kernels.h"

namespace dagrad {

// IsSmallGemm is true when `kernels`' SmallGemm beats one-thread BLIS: up
// to the level's small_gemm_max_madds multiply-adds, with n and k not too
// long for the packed panel (Gemm splits such a product's rows over the
// threads above 2^18 multiply-adds).
inline bool IsSmallGemm(const CpuKernels& kernels, int64_t m, int64_t n, int64_t k) {
  return m * n * k <= kernels.small_gemm_max_madds && n <= 256 && k <= 256;
}

// SmallGemm runs `kernels`' small_gemm for T (float or double); requires
// IsSmallGemm(kernels, m, n, k).
template <typename T>
void SmallGemm(const CpuKernels& kernels, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t rsa, int64_t csa, const T* b, int64_t rsb, int64_t csb, T beta, T* c,
               int64_t ldc);

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_INTERNAL_SMALL_GEMM_H_
