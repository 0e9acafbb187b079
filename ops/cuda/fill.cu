// CUDA kernels of fill and arange (ops/fill.cc). The planner usually folds
// both into constants on the host; these run when folding is off. Values
// are computed as on the CPU, by ops/fill.h's FillElement and ArangeFn.

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/fill.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

template <typename T>
__global__ void FillImpl(T* y, int64_t n, T v) {
  DAGRAD_CUDA_LOOP(i, n) y[i] = v;
}

template <typename T>
__global__ void ArangeImpl(T* y, int64_t n, ArangeFn fn) {
  DAGRAD_CUDA_LOOP(i, n) y[i] = fn.At<T>(i);
}

absl::Status FillKernel(const KernelContext& ctx) {
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = ctx.output.num_elements();
    if (n == 0) return absl::OkStatus();
    // Converted on the host, as the CPU kernel converts it.
    FillImpl<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(ctx.output.as<T>(), n,
                                                                       FillElement<T>(ctx.attrs()));
    return CheckLaunch("FillImpl");
  });
}

absl::Status ArangeKernel(const KernelContext& ctx) {
  const ArangeFn fn(ctx.attrs());
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = ctx.output.num_elements();
    if (n == 0) return absl::OkStatus();
    ArangeImpl<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(ctx.output.as<T>(), n,
                                                                         fn);
    return CheckLaunch("ArangeImpl");
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(fill, FillKernel);
DAGRAD_CUDA_KERNEL(arange, ArangeKernel);

}  // namespace dagrad
