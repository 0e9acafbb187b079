// CUDA kernels of fill and arange (ops/fill.cc). The planner usually folds
// both into constants on the host; these run when folding is off. Values
// convert exactly as on the CPU (the attribute's double to the dtype).

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
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
__global__ void ArangeImpl(T* y, int64_t n, double start, double step) {
  DAGRAD_CUDA_LOOP(i, n) y[i] = static_cast<T>(start + static_cast<double>(i) * step);
}

absl::Status FillKernel(const KernelContext& ctx) {
  const double value = ctx.attrs().GetFloat("value");
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = ctx.output.num_elements();
    if (n == 0) return absl::OkStatus();
    // Converted on the host, as the CPU kernel converts it.
    FillImpl<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(ctx.output.as<T>(), n,
                                                                       static_cast<T>(value));
    return CheckLaunch("FillImpl");
  });
}

absl::Status ArangeKernel(const KernelContext& ctx) {
  const double start = ctx.attrs().GetFloat("start"), step = ctx.attrs().GetFloat("step");
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = ctx.output.num_elements();
    if (n == 0) return absl::OkStatus();
    ArangeImpl<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(ctx.output.as<T>(), n,
                                                                         start, step);
    return CheckLaunch("ArangeImpl");
  });
}

}  // namespace

std::vector<CudaKernelEntry> CudaFillKernels() {
  return {{"fill", FillKernel}, {"arange", ArangeKernel}};
}

}  // namespace dagrad
