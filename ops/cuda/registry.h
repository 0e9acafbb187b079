// ops/cuda/registry.h
//
// The CUDA kernels of the ops, by op name. Each op family's
// ops/cuda/<family>.cu ends with its list (CudaUnaryKernels(), ...);
// registry.cc registers every list with the CUDA device
// (engine/cuda/kernel_registry.h) when the program starts, and
// tests/cuda_test.cc checks that every op in AllOps() has a kernel there,
// which needs no GPU. Only built with the CUDA backend (DAGRAD_WITH_CUDA).
//
//   std::vector<CudaKernelEntry> unary = CudaUnaryKernels();

#ifndef DAGRAD_OPS_CUDA_REGISTRY_H_
#define DAGRAD_OPS_CUDA_REGISTRY_H_

#include <vector>

#include "engine/cuda/kernel_registry.h"

namespace dagrad {

// Per-family lists, defined in each family's .cu.
std::vector<CudaKernelEntry> CudaUnaryKernels();
std::vector<CudaKernelEntry> CudaBinaryKernels();
std::vector<CudaKernelEntry> CudaReduceKernels();
std::vector<CudaKernelEntry> CudaShapeKernels();
std::vector<CudaKernelEntry> CudaMatMulKernels();
std::vector<CudaKernelEntry> CudaOptimKernels();
std::vector<CudaKernelEntry> CudaLayerNormKernels();
std::vector<CudaKernelEntry> CudaGatherKernels();
std::vector<CudaKernelEntry> CudaSelectKernels();
std::vector<CudaKernelEntry> CudaFillKernels();
std::vector<CudaKernelEntry> CudaSoftmaxKernels();
std::vector<CudaKernelEntry> CudaDropoutKernels();
std::vector<CudaKernelEntry> CudaAttentionKernels();
std::vector<CudaKernelEntry> CudaLossKernels();
std::vector<CudaKernelEntry> CudaGeluKernels();
std::vector<CudaKernelEntry> CudaSamplingKernels();
std::vector<CudaKernelEntry> CudaCollectiveKernels();
std::vector<CudaKernelEntry> CudaCastKernels();
std::vector<CudaKernelEntry> CudaSumOfSquaresKernels();

}  // namespace dagrad

#endif  // DAGRAD_OPS_CUDA_REGISTRY_H_
