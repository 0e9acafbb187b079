// engine/cuda/kernel_image.h
//
// ProbeKernelImage asks the runtime for a kernel of this binary on the
// current device: cudaSuccess when dagrad's kernels have an image the GPU
// can run, else the error (cudaErrorNoKernelImageForDevice,
// cudaErrorInvalidDeviceFunction) every launch would hit.
//
//   if (ProbeKernelImage() != cudaSuccess) { /* rebuild for this GPU */ }

#ifndef DAGRAD_ENGINE_CUDA_KERNEL_IMAGE_H_
#define DAGRAD_ENGINE_CUDA_KERNEL_IMAGE_H_

#include <cuda_runtime.h>

namespace dagrad {

cudaError_t ProbeKernelImage();

// BuiltCudaArchitectures returns CMAKE_CUDA_ARCHITECTURES as built, e.g. "90".
const char* BuiltCudaArchitectures();

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_CUDA_KERNEL_IMAGE_H_
