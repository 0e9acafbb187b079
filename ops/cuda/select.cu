// CUDA kernel of where(cond, a, b) (ops/select.cc), broadcasting like the
// CPU kernel; bit-identical to it. Moves bytes, so one instantiation per
// element size.

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

template <typename U>
__global__ void WhereSameShape(const bool* cond, const U* a, const U* b, U* y, int64_t n) {
  DAGRAD_CUDA_LOOP(i, n) y[i] = cond[i] ? a[i] : b[i];
}

template <typename U>
__global__ void WhereBroadcast(const bool* cond, const U* a, const U* b, U* y, int64_t n,
                               cuda::Strided<3> s) {
  DAGRAD_CUDA_LOOP(i, n) {
    int64_t off[3];
    s.Offsets(i, off);
    y[i] = cond[off[0]] ? a[off[1]] : b[off[2]];
  }
}

template <typename U>
absl::Status LaunchWhere(const KernelContext& ctx) {
  const Shape& out = *ctx.output.shape;
  const int64_t n = out.num_elements();
  if (n == 0) return absl::OkStatus();
  cudaStream_t stream = CudaContextOf(ctx).stream();
  const bool* cond = ctx.in(0).as<bool>();
  const U* a = static_cast<const U*>(ctx.in(1).data);
  const U* b = static_cast<const U*>(ctx.in(2).data);
  U* y = static_cast<U*>(ctx.output.data);
  if (*ctx.in(0).shape == out && *ctx.in(1).shape == out && *ctx.in(2).shape == out) {
    WhereSameShape<<<GridFor(n), kThreads, 0, stream>>>(cond, a, b, y, n);
    return CheckLaunch("WhereSameShape");
  }
  DAGRAD_ASSIGN_OR_RETURN(const cuda::Strided<3> s,
                          cuda::MakeStrided<3>(out, {BroadcastStrides(*ctx.in(0).shape, out),
                                                     BroadcastStrides(*ctx.in(1).shape, out),
                                                     BroadcastStrides(*ctx.in(2).shape, out)}));
  WhereBroadcast<<<GridFor(n), kThreads, 0, stream>>>(cond, a, b, y, n, s);
  return CheckLaunch("WhereBroadcast");
}

absl::Status WhereKernel(const KernelContext& ctx) {
  return DispatchBySize(ctx.output.dtype,
                        [&](auto tag) { return LaunchWhere<decltype(tag)>(ctx); });
}

}  // namespace

DAGRAD_CUDA_KERNEL(where, WhereKernel);

}  // namespace dagrad
