// Whether this binary's CUDA kernels can run on a GPU: they are compiled for
// CMAKE_CUDA_ARCHITECTURES (sm_90 machine code and compute_90 PTX by
// default), and a GPU of an older architecture has no image to run.

#include "engine/cuda/kernel_image.h"

namespace dagrad {
namespace {

__global__ void ProbeKernel() {}

}  // namespace

cudaError_t ProbeKernelImage() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, ProbeKernel);
}

const char* BuiltCudaArchitectures() { return DAGRAD_CUDA_ARCHITECTURES; }

}  // namespace dagrad
