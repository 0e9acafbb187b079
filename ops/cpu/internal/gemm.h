// ops/cpu/internal/gemm.h
//
// The one matrix-product entry point every CPU kernel uses: Gemm, and
// GemmBFloat16 for bfloat16 operands. Internal to the library (not
// installed): a program multiplies matrices with MatMul (ops/matmul.h).

#ifndef DAGRAD_OPS_CPU_INTERNAL_GEMM_H_
#define DAGRAD_OPS_CPU_INTERNAL_GEMM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/bfloat16.h"
#include "ops/cpu/kernels/cpu_kernels.h"

namespace dagrad {

// Gemm computes C = alpha * A·B + beta * C for an m×k A, a k×n B and an m×n
// C, each given by a pointer and (row, column) element strides, so that
// transposed or strided operands need no copy. T is float or double.
// Products too small for BLIS's overhead go to SmallGemm (ops/cpu/internal/small_gemm.h);
// one row (m == 1: a generated token's step) to BLIS's gemv, single-threaded,
// which reads B once where gemm would pack it and fill a micro-tile of rows.
// Returns the status of ConfigureCpu.
// `one_thread` runs BLIS on the calling thread only, for callers that
// spread independent products over the threads themselves.
template <typename T>
absl::Status Gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t rsa, int64_t csa, const T* b, int64_t rsb, int64_t csb,
                  T beta, T* c, int64_t rsc, int64_t csc, bool one_thread = false);

// GemmBFloat16 is Gemm for bfloat16 operands: C = alpha * A·B + beta * C
// with A and B bfloat16 (engine/bfloat16.h) and C float32, accumulated in
// float32 — the product mixed precision trains with. Where the CPU has
// AVX512_BF16 and the kernel level is avx512 (ActiveBf16Products,
// ops/cpu/internal/cpu_isa.h), its kernel multiplies the bfloat16 pairs natively
// (vdpbf16ps) on operands packed by pairs of k; elsewhere A (in panels of
// rows) and B are widened to float32 and multiplied by Gemm<float>. The
// products of two bfloat16 are exact in float32, so the two differ only in
// summation order: each is within 2 (k + 2) eps (|alpha| |A|·|B| + |beta
// C|) of the exact product, eps = 2^-24 (tests/ops/gemm_bf16_test.cc), and the
// native kernel counts subnormal inputs and results as zero. Each element of C is
// summed over k in one fixed order: the same bits on any thread count.
// beta == 0 reads no C. Returns the status of ConfigureCpu.
//
//   // setup: Bf16Product
//   DAGRAD_RETURN_IF_ERROR(GemmBFloat16(m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n, 1));
absl::Status GemmBFloat16(int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a,
                          int64_t rsa, int64_t csa, const BFloat16* b, int64_t rsb, int64_t csb,
                          float beta, float* c, int64_t rsc, int64_t csc,
                          bool one_thread = false);

// GemmBFloat16On is GemmBFloat16 with the kernel given: a table's
// gemm_bf16 (which the CPU must run: CpuHasAvx512Bf16), or null for the
// widened product, so that a test or a bench runs both in one process.
//
//   // setup: Bf16Product
//   DAGRAD_RETURN_IF_ERROR(GemmBFloat16On(nullptr, m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n, 1));
absl::Status GemmBFloat16On(GemmBf16Fn gemm, int64_t m, int64_t n, int64_t k, float alpha,
                            const BFloat16* a, int64_t rsa, int64_t csa, const BFloat16* b,
                            int64_t rsb, int64_t csb, float beta, float* c, int64_t rsc,
                            int64_t csc, bool one_thread = false);

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_INTERNAL_GEMM_H_
