// ops/cpu/kernels/level.h
//
// The kernels of the ISA level being compiled (namespace
// dagrad::kernels::DAGRAD_ISA), for that level's Table() in
// kernel_table.cc. Each is documented at its CpuKernels entry.

#ifndef DAGRAD_OPS_CPU_KERNELS_LEVEL_H_
#define DAGRAD_OPS_CPU_KERNELS_LEVEL_H_

#include <cstdint>

#include "ops/cpu/kernels/cpu_kernels.h"

namespace dagrad::kernels::DAGRAD_ISA {

// kSmallGemmMaxMadds: up to this many multiply-adds SmallGemm beats one BLIS
// call of the same level on one thread (each side at the level's kernel
// set; one Zen 5 core, CPU time). avx2 / haswell, GFLOP/s for q·kᵀ-shaped
// (B transposed) and p·v-shaped products: 64^3 102 / 57 and 103 / 75;
// 128 x 128 x 32: 102 / 43; 256 x 256 x 64 (2^22): 101 / 72 and 106 / 105.
// avx512 / skx: 189 / 54 at 64^3, 177 / 146 and 203 / 134 at 2^22. So 2^22
// at both (n and k stay <= 256, IsSmallGemm). baseline / penryn: ahead up
// to 2^19 (34 / 31 at 128 x 128 x 32), level at 96^3, behind at 2^22
// (30 / 38). A lone product that BLIS could spread over several threads
// goes to SmallGemm only up to 2^18 (ops/cpu/cpu_runtime.cc).
#if defined(__AVX2__)
inline constexpr int64_t kSmallGemmMaxMadds = int64_t{1} << 22;
#else
inline constexpr int64_t kSmallGemmMaxMadds = int64_t{1} << 19;
#endif

void SmallGemmF32(const SmallGemmArgs<float>& args);
void SmallGemmF64(const SmallGemmArgs<double>& args);
// GemmBf16 is compiled at the avx512 level only, with -mavx512bf16
// (ops/cpu/kernels/gemm_bf16_kernel.cc), where DAGRAD_HAVE_BF16_KERNEL says so.
void GemmBf16(const GemmBf16Args& args, int64_t row_begin, int64_t row_end, int64_t col_begin,
              int64_t col_end);
void PhiloxBits(uint64_t seed, uint32_t stream, uint32_t step, uint64_t first, uint32_t* out);
void DropoutF32(const DropoutArgs<float>& args, int64_t begin, int64_t end);
void DropoutF64(const DropoutArgs<double>& args, int64_t begin, int64_t end);
double ExpShiftSumF32(const float* x, float* y, int64_t n, float m);
void LayerNormF32(const LayerNormArgs<float>& args, int64_t begin, int64_t end);
void LayerNormF64(const LayerNormArgs<double>& args, int64_t begin, int64_t end);
void LayerNormGradF32(const LayerNormArgs<float>& args, int64_t begin, int64_t end);
void LayerNormGradF64(const LayerNormArgs<double>& args, int64_t begin, int64_t end);
void LayerNormParamGradF32(const LayerNormArgs<float>& args, int64_t begin, int64_t end,
                           double* acc);
void LayerNormParamGradF64(const LayerNormArgs<double>& args, int64_t begin, int64_t end,
                           double* acc);
void SumColumnsF32(const float* in, int64_t rows, int64_t stride, int64_t len, double* acc);
void SoftmaxGradF32(const float* g, const float* y, float* dx, int64_t rows, int64_t n);
void GeluF32(const GeluArgs& args, int64_t begin, int64_t end);
void GeluGradF32(const GeluArgs& args, int64_t begin, int64_t end);
void TanhF32(const float* x, float* y, int64_t n);
void SigmoidF32(const float* x, float* y, int64_t n);
void AttentionSoftmaxF32(const AttentionBlock<float>& a, float* m, double* l, float* alpha);
void AttentionSoftmaxF64(const AttentionBlock<double>& a, double* m, double* l, double* alpha);
void AttentionGradF32(const AttentionBlock<float>& a, const float* m, const float* stat,
                      bool probs, const float* d, float* dp);
void AttentionGradF64(const AttentionBlock<double>& a, const double* m, const double* stat,
                      bool probs, const double* d, double* dp);

}  // namespace dagrad::kernels::DAGRAD_ISA

#endif  // DAGRAD_OPS_CPU_KERNELS_LEVEL_H_
