// CUDA kernels of the unary family (ops/unary.cc): the unary math ops,
// relu_grad and cast. The math ops are the CPU's own functors, one kernel
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

// ---- cast ----------------------------------------------------------------------

// FloatToInt is true when In -> Out can fail (a float that no integer of
// Out holds: NaN, infinities, out of range).
template <typename In, typename Out>
inline constexpr bool kFloatToInt =
    std::is_floating_point_v<In> && std::is_integral_v<Out> && !std::is_same_v<Out, bool>;

// The CPU kernel's test: trunc(x) in [lowest, -lowest), in double.
template <typename In, typename Out>
struct CastOutOfRange {
  __device__ bool operator()(In x) const {
    const double v = trunc(static_cast<double>(x));
    return !(v >= lowest && v < -lowest);
  }
  double lowest = static_cast<double>(std::numeric_limits<Out>::lowest());
};

template <typename In, typename Out>
__global__ void CastImpl(const In* x, Out* y, int64_t n, CastOutOfRange<In, Out> bad) {
  DAGRAD_CUDA_LOOP(i, n) {
    if constexpr (kFloatToInt<In, Out>) {
      // Out-of-range elements fail the run (reported by the check); write
      // 0 rather than convert them, which C++ leaves undefined.
      y[i] = bad(x[i]) ? Out(0) : static_cast<Out>(x[i]);
    } else {
      y[i] = static_cast<Out>(x[i]);
    }
  }
}

template <typename In, typename Out>
absl::Status LaunchCast(const KernelContext& ctx) {
  const int64_t n = ctx.output.num_elements();
  if (n == 0) return absl::OkStatus();
  const In* x = ctx.in(0).as<In>();
  if constexpr (kFloatToInt<In, Out>) {
    const std::string target(DTypeName(DTypeOf<Out>::value));
    DAGRAD_RETURN_IF_ERROR(cuda::CheckElements(
        ctx, x, n, CastOutOfRange<In, Out>(), [target](const DeviceErrorDetail& d) {
          return absl::StrCat("cannot cast ", d.float_value, " (element ", d.position, ") to ",
                              target);
        }));
  }
  CastImpl<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
      x, ctx.output.as<Out>(), n, CastOutOfRange<In, Out>());
  return CheckLaunch("CastImpl");
}

absl::Status CastKernel(const KernelContext& ctx) {
  return DispatchAny(ctx.in(0).dtype, [&](auto in_tag) {
    return DispatchAny(ctx.output.dtype, [&](auto out_tag) {
      return LaunchCast<decltype(in_tag), decltype(out_tag)>(ctx);
    });
  });
}

}  // namespace

std::vector<CudaKernelEntry> CudaUnaryKernels() {
#define DAGRAD_UNARY_CUDA_KERNEL(name, Fn) {name, UnaryKernel<Fn>},
  return {DAGRAD_UNARY_MATH_OPS(DAGRAD_UNARY_CUDA_KERNEL)  //
          {"relu_grad", ActivationGradKernel<ReluBackwardFn>},
          {"cast", CastKernel}};
#undef DAGRAD_UNARY_CUDA_KERNEL
}

}  // namespace dagrad
