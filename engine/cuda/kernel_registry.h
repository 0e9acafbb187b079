// engine/cuda/kernel_registry.h
//
// The CUDA device's kernels, keyed by OpDef. The engine knows no op: the
// ops layer registers its CUDA kernels here, against their OpDefs, when the
// program starts (ops/cuda/registry.h), and the CUDA device looks them up
// (Device::KernelFor). Only built with the CUDA backend (DAGRAD_WITH_CUDA);
// the header has no CUDA types.
//
//   RegisterCudaKernel(kRelu, ReluKernel);
//   Kernel k = CudaKernelFor(kRelu);   // null when none is registered

#ifndef DAGRAD_ENGINE_CUDA_KERNEL_REGISTRY_H_
#define DAGRAD_ENGINE_CUDA_KERNEL_REGISTRY_H_

#include "engine/op.h"

namespace dagrad {

// RegisterCudaKernel adds `op`'s kernel to the table; `op` must outlive the
// program. An op registered twice keeps its first kernel. Safe to call
// during static initialisation.
void RegisterCudaKernel(const OpDef& op, Kernel kernel);

// CudaKernelFor returns the CUDA kernel registered for `op`, or null.
Kernel CudaKernelFor(const OpDef& op);

// CudaKernelCount returns the number of ops with a registered CUDA kernel.
int CudaKernelCount();

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_CUDA_KERNEL_REGISTRY_H_
