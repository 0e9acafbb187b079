// The CUDA kernel of cumsum (ops/cumsum.cc): a thread per line along the
// axis, each the CPU kernel's CumSumLine (ops/math/cumsum_math.h), so the
// two give the same bits.
// A line is serial: fine for the lines the op meets (a vocabulary's
// probabilities in top-p sampling, tens of thousands per line, one line
// per sequence), not a parallel scan.

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/cumsum.h"
#include "ops/math/cumsum_math.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

template <typename T>
__global__ void CumSumImpl(const T* x, T* y, CumSumLines l, bool exclusive, bool reverse) {
  DAGRAD_CUDA_LOOP(line, l.outer * l.inner) {
    const int64_t start = CumSumLineStart(line, l.n, l.inner);
    CumSumLine(x + start, y + start, l.n, l.inner, exclusive, reverse);
  }
}

absl::Status CumSumKernel(const KernelContext& ctx) {
  const Shape& shape = *ctx.in(0).shape;
  DAGRAD_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ctx.attrs().GetInt("axis"), shape.rank()));
  const CumSumLines l = CumSumLayout(shape, axis);
  const int64_t lines = l.outer * l.inner;
  if (lines == 0 || l.n == 0) return absl::OkStatus();
  return DispatchNumeric(ctx.in(0).dtype, "cumsum of bool", [&](auto tag) {
    using T = decltype(tag);
    CumSumImpl<T><<<GridFor(lines), kThreads, 0, CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.output.as<T>(), l, ctx.attrs().GetBool("exclusive"),
        ctx.attrs().GetBool("reverse"));
    return CheckLaunch("CumSumImpl");
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(cumsum, CumSumKernel);

}  // namespace dagrad
