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
