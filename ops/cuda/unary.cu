// CUDA kernels of the unary family (ops/unary.cc): the unary math ops and
// relu_grad. The math ops are the CPU's own functors, one kernel
// each for every line of DAGRAD_UNARY_MATH_OPS (ops/elementwise.h), so a
// new one needs no line here. Arithmetic-only ones (neg, scale, rsqrt, relu,
// relu_grad, pow with exponents 2, 3, -1, -2, +-0.5) match the CPU's
// reference (baseline) kernels bit for bit, since neither side contracts
// into fused multiply-adds (tools/cmake/cuda.cmake); the others agree within
// a few ulps.

#include <limits>

#include "absl/strings/str_cat.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

template <typename T, typename Fn>
__global__ void UnaryKernelImpl(const T* x, T* y, int64_t n, Fn fn) {
  DAGRAD_CUDA_LOOP(i, n) y[i] = fn(x[i]);
}

template <typename T, typename Fn>
absl::Status LaunchUnary(const KernelContext& ctx, Fn fn) {
  const int64_t n = ctx.output.num_elements();
  if (n == 0) return absl::OkStatus();
  UnaryKernelImpl<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
      ctx.in(0).as<T>(), ctx.output.as<T>(), n, fn);
  return CheckLaunch("UnaryKernelImpl");
}

template <typename Fn>
absl::Status UnaryKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    return LaunchUnary<decltype(tag)>(ctx, Fn(ctx.attrs()));
  });
}

// ---- relu_grad(x, g) -----------------------------------------------------------

template <typename T, typename Fn>
__global__ void ActivationGradImpl(const T* x, const T* g, T* dx, int64_t n) {
  DAGRAD_CUDA_LOOP(i, n) dx[i] = Fn()(x[i], g[i]);
}

template <typename Fn>
absl::Status ActivationGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = ctx.output.num_elements();
    if (n == 0) return absl::OkStatus();
    ActivationGradImpl<T, Fn><<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.in(1).as<T>(), ctx.output.as<T>(), n);
    return CheckLaunch("ActivationGradImpl");
  });
}

}  // namespace

#define DAGRAD_UNARY_CUDA_KERNEL(symbol, Fn) DAGRAD_CUDA_KERNEL(symbol, UnaryKernel<Fn>);
DAGRAD_UNARY_MATH_OPS(DAGRAD_UNARY_CUDA_KERNEL)
#undef DAGRAD_UNARY_CUDA_KERNEL
DAGRAD_CUDA_KERNEL(relu_grad, ActivationGradKernel<ReluBackwardFn>);

}  // namespace dagrad
