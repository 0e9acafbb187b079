// ops/kernels/level.h
//
// The kernels of the ISA level being compiled (namespace
// dagrad::kernels::DAGRAD_ISA), for that level's Table() in
// kernel_table.cc. Each is documented at its CpuKernels entry.

#ifndef DAGRAD_OPS_KERNELS_LEVEL_H_
#define DAGRAD_OPS_KERNELS_LEVEL_H_

#include <cstdint>

#include "ops/kernels/cpu_kernels.h"

namespace dagrad::kernels::DAGRAD_ISA {

// kSmallGemmMaxMadds: up to this many multiply-adds SmallGemm beats one BLIS
// call of the same level (kernel_bench's matmul_batched, one thread, each
// side at the level's kernel set). BLIS pays its packing and call overhead
// on every 64^3 product: haswell 26 GFLOP/s against the avx2 SmallGemm's 82,
// skx 48 against the avx512 one's 148, so 64^3 = 2^18 stays here. baseline
// (penryn): 2^17, not measured beyond.
#if defined(__AVX2__)
inline constexpr int64_t kSmallGemmMaxMadds = int64_t{1} << 18;
#else
inline constexpr int64_t kSmallGemmMaxMadds = int64_t{1} << 17;
#endif

void SmallGemmF32(const SmallGemmArgs<float>& args);
void SmallGemmF64(const SmallGemmArgs<double>& args);
void PhiloxBits(uint64_t seed, uint32_t stream, uint32_t step, uint64_t first, uint32_t* out);
void DropoutF32(const DropoutArgs<float>& args, int64_t begin, int64_t end);
void DropoutF64(const DropoutArgs<double>& args, int64_t begin, int64_t end);
double ExpShiftSumF32(const float* x, float* y, int64_t n, float m);
void LayerNormF32(const LayerNormArgs<float>& args, int64_t begin, int64_t end);
void LayerNormF64(const LayerNormArgs<double>& args, int64_t begin, int64_t end);
void LayerNormGradF32(const LayerNormArgs<float>& args, int64_t begin, int64_t end);
void LayerNormGradF64(const LayerNormArgs<double>& args, int64_t begin, int64_t end);

}  // namespace dagrad::kernels::DAGRAD_ISA

#endif  // DAGRAD_OPS_KERNELS_LEVEL_H_
