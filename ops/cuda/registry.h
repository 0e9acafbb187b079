// ops/cuda/registry.h
//
// The CUDA kernels, by op name. Each op family's ops/cuda/<family>.cu ends
// with its list (CudaUnaryKernels(), ...); registry.cc joins the lists. The
// CUDA device looks kernels up here (Device::KernelFor), and
// tests/cuda_test.cc checks that every op in AllOps() has an entry, which
// needs no GPU. Only built with the CUDA backend (DAGRAD_WITH_CUDA).
//
//   Kernel k = CudaKernelFor("matmul");   // null when the op has none

#ifndef DAGRAD_OPS_CUDA_REGISTRY_H_
#define DAGRAD_OPS_CUDA_REGISTRY_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "engine/op.h"

namespace dagrad {

struct CudaKernelEntry {
  absl::string_view op;  // OpDef::name
  Kernel kernel;
};

// CudaKernelFor returns the CUDA kernel of the op called `op_name`, or null.
Kernel CudaKernelFor(absl::string_view op_name);

// CudaKernelCount returns the number of ops with a CUDA kernel.
int CudaKernelCount();

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
std::vector<CudaKernelEntry> CudaLossKernels();

}  // namespace dagrad

#endif  // DAGRAD_OPS_CUDA_REGISTRY_H_
