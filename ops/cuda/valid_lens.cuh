// ops/cuda/valid_lens.cuh
//
// The valid lengths of a masked softmax on the device, shared by the CUDA
// kernels of masked softmax (softmax.cu) and fused attention
// (attention.cu): checked on the device with the CPU's message
// (ReadValidLens, ops/softmax.h) and copied to int64. Included by .cu
// files only.
//
//   CudaBuffer lens;
//   DAGRAD_RETURN_IF_ERROR(cuda::PrepareValidLens(ctx, kValidLens, k, lens));
//   MyKernel<<<...>>>(lens.as<int64_t>(), ...);

#ifndef DAGRAD_OPS_CUDA_VALID_LENS_CUH_
#define DAGRAD_OPS_CUDA_VALID_LENS_CUH_

#include <algorithm>
#include <string>

#include "ops/cuda/kernel_util.cuh"
#include "ops/op_util.h"

namespace dagrad::cuda {

// ValidLensToInt64 copies the lengths, clamped into [0, K] (bad ones fail
// the run; clamping keeps the kernels inside the row meanwhile).
template <typename I>
__global__ void ValidLensToInt64(const I* lens, int64_t n, int64_t k, int64_t* out) {
  DAGRAD_CUDA_LOOP(i, n) {
    const int64_t v = static_cast<int64_t>(lens[i]);
    out[i] = v < 0 ? 0 : v > k ? k : v;
  }
}

template <typename I>
struct LenOutOfRange {
  __device__ bool operator()(I v) const { return v < 0 || static_cast<int64_t>(v) > k; }
  int64_t k;
};

// PrepareValidLens checks input `input` of the kernel, valid lengths (B)
// or (B, Q), against [0, k] on the device (a bad one fails the run with
// the CPU's message) and returns them as int64 in `buffer`.
inline absl::Status PrepareValidLens(const KernelContext& ctx, int input, int64_t k,
                                     CudaBuffer& buffer) {
  const TensorRef& lens = ctx.in(input);
  const int64_t n = lens.num_elements();
  CudaContext& cuda = CudaContextOf(ctx);
  DAGRAD_ASSIGN_OR_RETURN(buffer, cuda.Scratch(std::max<int64_t>(n, 1) * sizeof(int64_t)));
  const int64_t cols = lens.rank() == 2 ? lens.dim(1) : 0;
  return DispatchIndex(lens.dtype, [&](auto tag) {
    using I = decltype(tag);
    DAGRAD_RETURN_IF_ERROR(CheckElements(
        ctx, lens.as<I>(), n, LenOutOfRange<I>{k}, [k, cols](const DeviceErrorDetail& d) {
          const std::string pos = cols == 0 ? absl::StrCat(d.position)
                                            : absl::StrCat(d.position / cols, ", ",
                                                           d.position % cols);
          return absl::StrCat("valid_lens[", pos, "] = ", d.int_value, " is outside [0, ", k,
                              "] (K = ", k, ", the size of the scores' last axis)");
        }));
    if (n == 0) return absl::OkStatus();
    ValidLensToInt64<<<GridFor(n), kThreads, 0, cuda.stream()>>>(lens.as<I>(), n, k,
                                                               buffer.as<int64_t>());
    return CheckLaunch("ValidLensToInt64");
  });
}

}  // namespace dagrad::cuda

#endif  // DAGRAD_OPS_CUDA_VALID_LENS_CUH_
