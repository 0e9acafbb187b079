// engine/cuda/kernel_registry.h
//
// The CUDA device's kernels, by op name. The engine knows no op: the ops
// layer registers its CUDA kernels here when the program starts
// (ops/cuda/registry.cc), and the CUDA device looks them up
// (Device::KernelFor). Only built with the CUDA backend (DAGRAD_WITH_CUDA);
// the header has no CUDA types.
//
//   RegisterCudaKernels({{"relu", ReluKernel}, {"add", AddKernel}});
//   Kernel k = CudaKernelFor("relu");   // null when none is registered

#ifndef DAGRAD_ENGINE_CUDA_KERNEL_REGISTRY_H_
#define DAGRAD_ENGINE_CUDA_KERNEL_REGISTRY_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/op.h"

namespace dagrad {

struct CudaKernelEntry {
  absl::string_view op;  // OpDef::name; must outlive the program (a literal)
  Kernel kernel;
};

// RegisterCudaKernels adds `entries` to the table. An op registered twice
// keeps its first kernel. Safe to call during static initialisation.
void RegisterCudaKernels(absl::Span<const CudaKernelEntry> entries);

// CudaKernelFor returns the CUDA kernel registered for the op called
// `op_name`, or null.
Kernel CudaKernelFor(absl::string_view op_name);

// CudaKernelCount returns the number of ops with a registered CUDA kernel.
int CudaKernelCount();

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_CUDA_KERNEL_REGISTRY_H_
