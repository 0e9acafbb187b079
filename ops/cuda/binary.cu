// CUDA kernels of the binary family (ops/binary.cc): arithmetic,
// comparisons and logic with numpy broadcasting. Equal shapes take a flat
// loop; otherwise each output element finds its inputs through merged
// strides (kernel_util.cuh). The functors are the CPU's own, one kernel
// for every line of the lists in ops/elementwise.h (DAGRAD_BINARY_ARITH_OPS,
// ...), so a new op needs no line here; results match the CPU bit for bit,
// but for those through CUDA's libm (pow_tensor's powf, atan2f), within a
// few ulps of glibc's.

#include "absl/strings/str_cat.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

template <typename In, typename Out, typename Fn>
__global__ void BinarySameShape(const In* a, const In* b, Out* y, int64_t n, Fn fn) {
  DAGRAD_CUDA_LOOP(i, n) y[i] = fn(a[i], b[i]);
}

template <typename In, typename Out, typename Fn>
__global__ void BinaryBroadcast(const In* a, const In* b, Out* y, int64_t n,
                                cuda::Strided<2> s, Fn fn) {
  DAGRAD_CUDA_LOOP(i, n) {
    int64_t off[2];
    s.Offsets(i, off);
    y[i] = fn(a[off[0]], b[off[1]]);
  }
}

template <typename In, typename Out, typename Fn>
absl::Status LaunchBinary(const KernelContext& ctx, Fn fn) {
  const Shape& out = *ctx.output.shape;
  const int64_t n = out.num_elements();
  if (n == 0) return absl::OkStatus();
  cudaStream_t stream = CudaContextOf(ctx).stream();
  const In* a = ctx.in(0).as<In>();
  const In* b = ctx.in(1).as<In>();
  Out* y = ctx.output.as<Out>();
  if (*ctx.in(0).shape == out && *ctx.in(1).shape == out) {
    BinarySameShape<<<GridFor(n), kThreads, 0, stream>>>(a, b, y, n, fn);
    return CheckLaunch("BinarySameShape");
  }
  DAGRAD_ASSIGN_OR_RETURN(
      const cuda::Strided<2> s,
      cuda::MakeStrided<2>(out, {BroadcastStrides(*ctx.in(0).shape, out),
                                 BroadcastStrides(*ctx.in(1).shape, out)}));
  BinaryBroadcast<<<GridFor(n), kThreads, 0, stream>>>(a, b, y, n, s, fn);
  return CheckLaunch("BinaryBroadcast");
}

template <typename T>
struct IsZero {
  __device__ bool operator()(T v) const { return v == T(0); }
};

template <typename Fn>
absl::Status ArithKernel(const KernelContext& ctx) {
  const auto launch = [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && std::is_same_v<Fn, DivFn>) {
      // As the CPU's: an empty output divides nothing.
      if (ctx.output.num_elements() == 0) return absl::OkStatus();
      DAGRAD_RETURN_IF_ERROR(cuda::CheckElements(
          ctx, ctx.in(1).as<T>(), ctx.in(1).num_elements(), IsZero<T>(),
          [](const DeviceErrorDetail& d) {
            return absl::StrCat("integer division by zero (divisor element ", d.position, ")");
          }));
    }
    return LaunchBinary<T, T>(ctx, Fn());
  };
  if constexpr (kFloatOnly<Fn>) {
    return DispatchFloat(ctx.output.dtype, launch);
  } else {
    return DispatchNumeric(ctx.output.dtype, "arithmetic on bool", launch);
  }
}

template <typename Fn>
absl::Status CompareKernel(const KernelContext& ctx) {
  return DispatchAny(ctx.in(0).dtype, [&](auto tag) {
    return LaunchBinary<decltype(tag), bool>(ctx, Fn());
  });
}

template <typename Fn>
absl::Status LogicKernel(const KernelContext& ctx) {
  return LaunchBinary<bool, bool>(ctx, Fn());
}

__global__ void NotImpl(const bool* x, bool* y, int64_t n) {
  DAGRAD_CUDA_LOOP(i, n) y[i] = !x[i];
}

absl::Status NotKernel(const KernelContext& ctx) {
  const int64_t n = ctx.output.num_elements();
  if (n == 0) return absl::OkStatus();
  NotImpl<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
      ctx.in(0).as<bool>(), ctx.output.as<bool>(), n);
  return CheckLaunch("NotImpl");
}

}  // namespace

#define DAGRAD_ARITH_CUDA_KERNEL(symbol, Fn) DAGRAD_CUDA_KERNEL(symbol, ArithKernel<Fn>);
DAGRAD_BINARY_ARITH_OPS(DAGRAD_ARITH_CUDA_KERNEL)
#undef DAGRAD_ARITH_CUDA_KERNEL
#define DAGRAD_COMPARE_CUDA_KERNEL(symbol, Fn) DAGRAD_CUDA_KERNEL(symbol, CompareKernel<Fn>);
DAGRAD_BINARY_COMPARE_OPS(DAGRAD_COMPARE_CUDA_KERNEL)
#undef DAGRAD_COMPARE_CUDA_KERNEL
#define DAGRAD_LOGIC_CUDA_KERNEL(symbol, Fn) DAGRAD_CUDA_KERNEL(symbol, LogicKernel<Fn>);
DAGRAD_BINARY_LOGIC_OPS(DAGRAD_LOGIC_CUDA_KERNEL)
#undef DAGRAD_LOGIC_CUDA_KERNEL
DAGRAD_CUDA_KERNEL(logical_not, NotKernel);

}  // namespace dagrad
