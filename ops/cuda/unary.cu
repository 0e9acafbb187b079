// CUDA kernels of the unary family (ops/unary.cc): the unary math ops,
// relu_grad, gelu_grad and cast. Each functor is the CPU functor's
// expression with CUDA's math functions. Arithmetic-only ones (neg, scale,
// rsqrt, relu, pow with exponent 2) match the CPU's reference (baseline)
// kernels bit for bit, since neither side contracts into fused
// multiply-adds (tools/cmake/cuda.cmake); the others agree within a few
// ulps.

#include <limits>

#include "absl/strings/str_cat.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.3989422804014327;         // as the CPU kernel

#define DAGRAD_CUDA_STATELESS_FN(Name, expr)       \
  struct Name {                                    \
    explicit Name(const Attrs&) {}                 \
    template <typename T>                          \
    __device__ T operator()(T x) const {           \
      return expr;                                 \
    }                                              \
  }

DAGRAD_CUDA_STATELESS_FN(NegFn, -x);
DAGRAD_CUDA_STATELESS_FN(ExpFn, cuda::Exp(x));
DAGRAD_CUDA_STATELESS_FN(LogFn, cuda::Log(x));
DAGRAD_CUDA_STATELESS_FN(SqrtFn, cuda::Sqrt(x));
DAGRAD_CUDA_STATELESS_FN(RsqrtFn, T(1) / cuda::Sqrt(x));
DAGRAD_CUDA_STATELESS_FN(ReluFn, x > T(0) ? x : T(0));
DAGRAD_CUDA_STATELESS_FN(GeluFn, T(0.5) * x * (T(1) + cuda::Erf(x * T(kSqrtHalf))));
DAGRAD_CUDA_STATELESS_FN(TanhFn, cuda::Tanh(x));
DAGRAD_CUDA_STATELESS_FN(SigmoidFn, T(1) / (T(1) + cuda::Exp(-x)));
DAGRAD_CUDA_STATELESS_FN(SinFn, cuda::Sin(x));
DAGRAD_CUDA_STATELESS_FN(CosFn, cuda::Cos(x));
#undef DAGRAD_CUDA_STATELESS_FN

struct PowFn {
  explicit PowFn(const Attrs& a) : p(a.GetFloat("exponent")) {}
  template <typename T>
  __device__ T operator()(T x) const {
    return p == 2.0 ? x * x : cuda::Pow(x, static_cast<T>(p));
  }
  double p;
};

struct ScaleFn {
  explicit ScaleFn(const Attrs& a)
      : alpha(a.GetFloat("alpha", 1.0)), beta(a.GetFloat("beta", 0.0)) {}
  template <typename T>
  __device__ T operator()(T x) const {
    return static_cast<T>(alpha) * x + static_cast<T>(beta);
  }
  double alpha, beta;
};

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

// ---- relu_grad(x, g), gelu_grad(x, g) ------------------------------------------

template <typename T, bool kGelu>
__global__ void ActivationGradImpl(const T* x, const T* g, T* dx, int64_t n) {
  DAGRAD_CUDA_LOOP(i, n) {
    if constexpr (kGelu) {
      // gelu'(x) = Phi(x) + x phi(x)
      const T cdf = T(0.5) * (T(1) + cuda::Erf(x[i] * T(kSqrtHalf)));
      const T pdf = cuda::Exp(T(-0.5) * x[i] * x[i]) * T(kInvSqrt2Pi);
      dx[i] = g[i] * (cdf + x[i] * pdf);
    } else {
      dx[i] = x[i] > T(0) ? g[i] : T(0);
    }
  }
}

template <bool kGelu>
absl::Status ActivationGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = ctx.output.num_elements();
    if (n == 0) return absl::OkStatus();
    ActivationGradImpl<T, kGelu><<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
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
  return {
      {"neg", UnaryKernel<NegFn>},
      {"exp", UnaryKernel<ExpFn>},
      {"log", UnaryKernel<LogFn>},
      {"sqrt", UnaryKernel<SqrtFn>},
      {"rsqrt", UnaryKernel<RsqrtFn>},
      {"pow", UnaryKernel<PowFn>},
      {"scale", UnaryKernel<ScaleFn>},
      {"relu", UnaryKernel<ReluFn>},
      {"gelu", UnaryKernel<GeluFn>},
      {"tanh", UnaryKernel<TanhFn>},
      {"sigmoid", UnaryKernel<SigmoidFn>},
      {"sin", UnaryKernel<SinFn>},
      {"cos", UnaryKernel<CosFn>},
      {"relu_grad", ActivationGradKernel<false>},
      {"gelu_grad", ActivationGradKernel<true>},
      {"cast", CastKernel},
  };
}

}  // namespace dagrad
