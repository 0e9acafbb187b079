#include "ops/cuda/registry.h"

namespace dagrad {
namespace {

// RegisterAll hands every family's kernels to the CUDA device. It runs
// once, from the static initialiser below; the build links this file
// whole (the ops' CUDA archive is linked with WHOLE_ARCHIVE), since
// nothing refers to it by name.
bool RegisterAll() {
  for (auto family : {
           CudaUnaryKernels,
           CudaBinaryKernels,
           CudaReduceKernels,
           CudaShapeKernels,
           CudaMatMulKernels,
           CudaOptimKernels,
           CudaLayerNormKernels,
           CudaGatherKernels,
           CudaSelectKernels,
           CudaFillKernels,
           CudaSoftmaxKernels,
           CudaDropoutKernels,
           CudaAttentionKernels,
           CudaLossKernels,
           CudaGeluKernels,
           CudaSamplingKernels,
           CudaCollectiveKernels,
           CudaCastKernels,
           CudaSumOfSquaresKernels,
       }) {
    RegisterCudaKernels(family());
  }
  return true;
}

[[maybe_unused]] const bool registered = RegisterAll();

}  // namespace
}  // namespace dagrad
