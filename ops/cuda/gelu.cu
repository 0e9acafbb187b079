// CUDA kernels of GELU (ops/gelu.cc): gelu and gelu_grad, both forms, with
// the float64 CPU kernel's functors (ops/math/gelu_math.h: CUDA's erf, exp and
// tanh). They agree with the CPU's vectorised float32 kernels within a few
// ulps (tests/autodiff/gelu_test.cc states the bound).

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/math/gelu_math.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

template <typename T>
__global__ void GeluImpl(const T* x, T* y, int64_t n, GeluFn fn) {
  DAGRAD_CUDA_LOOP(i, n) y[i] = fn(x[i]);
}

template <typename T>
__global__ void GeluGradImpl(const T* x, const T* g, T* dx, int64_t n,
                             GeluBackwardFn fn) {
  DAGRAD_CUDA_LOOP(i, n) dx[i] = fn(x[i], g[i]);
}

absl::Status GeluKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = ctx.output.num_elements();
    if (n == 0) return absl::OkStatus();
    GeluImpl<T><<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.output.as<T>(), n, GeluFn(ctx.attrs()));
    return CheckLaunch("GeluImpl");
  });
}

absl::Status GeluGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = ctx.output.num_elements();
    if (n == 0) return absl::OkStatus();
    GeluGradImpl<T><<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.in(1).as<T>(), ctx.output.as<T>(), n,
        GeluBackwardFn(ctx.attrs()));
    return CheckLaunch("GeluGradImpl");
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(gelu, GeluKernel);
DAGRAD_CUDA_KERNEL(gelu_grad, GeluGradKernel);

}  // namespace dagrad
