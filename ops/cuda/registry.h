// ops/cuda/registry.h
//
// The CUDA kernels of the ops register themselves, each in its family's
// ops/cuda/<family>.cu, against the op's OpDef, with the CUDA device
// (engine/cuda/kernel_registry.h) when the program starts; the archive is
// linked whole (tools/cmake/layers.cmake). tests/models/cuda_test.cc checks that
// every op in AllOps() has a kernel there, which needs no GPU. Only built
// with the CUDA backend (DAGRAD_WITH_CUDA).
//
//   DAGRAD_CUDA_KERNEL(softmax, MaskedSoftmaxKernel);

#ifndef DAGRAD_OPS_CUDA_REGISTRY_H_
#define DAGRAD_OPS_CUDA_REGISTRY_H_

#include "engine/cuda/kernel_registry.h"
#include "engine/op.h"

// DAGRAD_CUDA_KERNEL(symbol, kernel); in namespace dagrad registers `kernel`
// for the op that DAGRAD_REGISTER_OP named op_defs::symbol (ops/registry.h).
#define DAGRAD_CUDA_KERNEL(symbol, ...)                           \
  namespace op_defs {                                             \
  extern const OpDef& symbol;                                     \
  }                                                               \
  [[maybe_unused]] const bool dagrad_cuda_kernel_##symbol =       \
      (::dagrad::RegisterCudaKernel(op_defs::symbol, __VA_ARGS__), true)

#endif  // DAGRAD_OPS_CUDA_REGISTRY_H_
