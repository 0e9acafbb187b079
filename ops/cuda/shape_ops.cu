// CUDA kernels of the shape family (ops/shape_ops.cc; reshape is always a
// view, which the executor never runs, so it has none):
// permute, broadcast_to, concat, slice and unslice. They move bytes only,
// so each is instantiated per element size (1, 2, 4 or 8 bytes:
// DispatchBySize), not per dtype, and matches the CPU exactly.

#include <algorithm>

#include "engine/status_macros.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

// ---- permute, broadcast_to: a strided gather -------------------------------------

template <typename U>
__global__ void StridedCopyKernel(const U* x, U* y, int64_t n, cuda::Strided<1> s) {
  DAGRAD_CUDA_LOOP(i, n) {
    int64_t off[1];
    s.Offsets(i, off);
    y[i] = x[off[0]];
  }
}

// StridedCopy writes y[i] = x[offset of i through `strides`] for every
// element i of the output.
absl::Status StridedCopy(const KernelContext& ctx, const Dims& strides) {
  const int64_t n = ctx.output.num_elements();
  if (n == 0) return absl::OkStatus();
  DAGRAD_ASSIGN_OR_RETURN(const cuda::Strided<1> s,
                          cuda::MakeStrided<1>(*ctx.output.shape, {strides}));
  return DispatchBySize(ctx.output.dtype, [&](auto tag) {
    using U = decltype(tag);
    StridedCopyKernel<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
        static_cast<const U*>(ctx.in(0).data), static_cast<U*>(ctx.output.data), n, s);
    return CheckLaunch("StridedCopyKernel");
  });
}

absl::Status PermuteKernel(const KernelContext& ctx) {
  const std::vector<int64_t> perm = ctx.attrs().GetInts("perm");
  const Dims in_strides = RowMajorStrides(*ctx.in(0).shape);
  Dims strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[i] = in_strides[perm[i]];
  return StridedCopy(ctx, strides);
}

absl::Status BroadcastToKernel(const KernelContext& ctx) {
  return StridedCopy(ctx, BroadcastStrides(*ctx.in(0).shape, *ctx.output.shape));
}

// ---- concat ------------------------------------------------------------------

// Copies one input's rows (outer rows of `row` elements) into the output,
// whose rows are `out_row` elements long, at column `col`.
template <typename U>
__global__ void ConcatPieceKernel(const U* x, U* y, int64_t outer, int64_t row, int64_t out_row,
                                  int64_t col) {
  DAGRAD_CUDA_LOOP(i, outer * row) {
    const int64_t o = i / row, c = i % row;
    y[o * out_row + col + c] = x[i];
  }
}

absl::Status ConcatKernel(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ctx.attrs().GetInt("axis"), ctx.output.rank()));
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= ctx.output.dim(d);
  if (outer == 0) return absl::OkStatus();
  const int64_t out_row = ctx.output.num_elements() / outer;
  return DispatchBySize(ctx.output.dtype, [&](auto tag) {
    using U = decltype(tag);
    int64_t col = 0;
    for (const TensorRef& in : ctx.inputs) {
      const int64_t row = in.num_elements() / outer;
      if (row > 0) {
        ConcatPieceKernel<<<GridFor(outer * row), kThreads, 0, CudaContextOf(ctx).stream()>>>(
            static_cast<const U*>(in.data), static_cast<U*>(ctx.output.data), outer, row,
            out_row, col);
        DAGRAD_RETURN_IF_ERROR(CheckLaunch("ConcatPieceKernel"));
      }
      col += row;
    }
    return absl::OkStatus();
  });
}

// ---- slice / unslice -----------------------------------------------------------


// The sliced tensor is (outer, count, inner); element (o, i, j) sits at
// (o, start + i * step, j) of the full (outer, len, inner) one.
template <typename U, bool kToSlice>
__global__ void SliceCopyKernel(const U* src, U* dst, int64_t n, int64_t count, int64_t inner,
                                int64_t len, int64_t start, int64_t step) {
  DAGRAD_CUDA_LOOP(p, n) {
    const int64_t j = p % inner;
    const int64_t i = p / inner % count;
    const int64_t o = p / (inner * count);
    const int64_t f = (o * len + start + i * step) * inner + j;
    if constexpr (kToSlice) {
      dst[p] = src[f];
    } else {
      dst[f] = src[p];
    }
  }
}

template <bool kToSlice>
absl::Status SliceCopy(const KernelContext& ctx, const SliceSpec& s, const Shape& full) {
  const int64_t n = kToSlice ? ctx.output.num_elements() : ctx.in(0).num_elements();
  if (n == 0) return absl::OkStatus();
  int64_t inner = 1;
  for (int d = s.axis + 1; d < full.rank(); ++d) inner *= full[d];
  return DispatchBySize(ctx.output.dtype, [&](auto tag) {
    using U = decltype(tag);
    SliceCopyKernel<U, kToSlice><<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
        static_cast<const U*>(ctx.in(0).data), static_cast<U*>(ctx.output.data), n, s.count,
        inner, full[s.axis], s.start, s.step);
    return CheckLaunch("SliceCopyKernel");
  });
}

absl::Status SliceKernel(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const SliceSpec spec, ResolveSlice(ctx.attrs(), *ctx.in(0).shape));
  return SliceCopy<true>(ctx, spec, *ctx.in(0).shape);
}

absl::Status UnsliceKernel(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const SliceSpec spec, ResolveSlice(ctx.attrs(), *ctx.output.shape));
  if (ctx.output.nbytes() > 0) {
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(ctx.output.data, 0, ctx.output.nbytes(),
                                                CudaContextOf(ctx).stream()));
  }
  return SliceCopy<false>(ctx, spec, *ctx.output.shape);
}

}  // namespace

DAGRAD_CUDA_KERNEL(permute, PermuteKernel);
DAGRAD_CUDA_KERNEL(broadcast_to, BroadcastToKernel);
DAGRAD_CUDA_KERNEL(concat, ConcatKernel);
DAGRAD_CUDA_KERNEL(slice, SliceKernel);
DAGRAD_CUDA_KERNEL(unslice, UnsliceKernel);

}  // namespace dagrad
