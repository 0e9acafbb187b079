// CUDA kernels of the softmax family (ops/softmax.cc): masked softmax (keep
// mask, valid lengths, causal limit, additive bias and scale fused, as on
// the CPU), softmax_grad and log_softmax. One block per row of the last
// axis; each pass re-reads the row (from cache) instead of holding it, so
// any row length works.
//
// Per element the arithmetic is the CPU's (z = scale * x + bias, exp(z - m)
// times 1 / sum); the row's max propagates NaN as the CPU's does (MaxOp),
// so a row with a NaN score is NaN, as in torch. Row sums (of exponentials, and softmax_grad's sum of
// g * y) accumulate in double, as every reduction here, in another order
// than the CPU's, so results agree to float32 rounding. A fully masked row
// is zeros. All three may run in place: a row is written
// only after the block's reductions over it, each element by the thread
// that read it.

#include <algorithm>
#include <string>

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/cuda/valid_lens.cuh"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

enum SoftmaxInput { kScores = 0, kKeep = 1, kValidLens = 2, kBias = 3 };

struct SoftmaxArgs {
  int64_t rows, k;
  int64_t q_size, rows_per_b;
  bool causal;
  int64_t offset;
  const int64_t* lens;  // null, or (B) / (B, Q) lengths checked in [0, K]
  bool lens_2d;
  const bool* keep;     // null, or broadcast through keep_rows / keep_last
  cuda::Strided<2> lead;  // row -> offsets of keep (0) and bias (1)
  int64_t keep_last, bias_last;  // their strides along the last axis
};

template <typename T>
__global__ void MaskedSoftmaxImpl(const T* x, const T* bias, T* out, SoftmaxArgs a, T scale) {
  __shared__ T shared[32];
  __shared__ cuda::Acc<T> shared_sum[32];
  const T neg_inf = -cuda::Infinity<T>();
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const int64_t q = row % a.q_size;
    int64_t n = a.k;  // the unmasked prefix; the rest is the tail
    if (a.lens) {
      const int64_t b = row / a.rows_per_b;
      n = std::min(n, a.lens[a.lens_2d ? b * a.q_size + q : b]);
    }
    if (a.causal) {
      n = std::min(n, a.offset >= a.k ? a.k : std::max<int64_t>(0, q + a.offset + 1));
    }
    int64_t off[2] = {0, 0};
    a.lead.Offsets(row, off);
    const bool* kr = a.keep ? a.keep + off[0] : nullptr;
    const T* br = bias ? bias + off[1] : nullptr;
    if (kr && a.keep_last == 0 && !kr[0]) n = 0;
    const T* xr = x + row * a.k;
    auto z = [&](int64_t k) -> T {
      T v = br ? scale * xr[k] + br[k * a.bias_last] : scale * xr[k];
      if (kr && a.keep_last != 0 && !kr[k]) v = neg_inf;
      return v;
    };
    T m = neg_inf;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) m = cuda::MaxOp()(m, z(k));
    m = cuda::BlockReduce(m, cuda::MaxOp(), shared);
    if (m == neg_inf) n = 0;  // every position masked: the row is zeros
    cuda::Acc<T> sum = 0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += math::Exp(z(k) - m);
    sum = cuda::BlockReduce(sum, cuda::SumOp(), shared_sum);
    const T inv = static_cast<T>(1.0 / sum);
    T* y = out + row * a.k;
    for (int64_t k = threadIdx.x; k < a.k; k += blockDim.x) {
      y[k] = k < n ? math::Exp(z(k) - m) * inv : T(0);
    }
  }
}

template <typename T>
absl::Status MaskedSoftmaxTyped(const KernelContext& ctx) {
  const Shape& s = *ctx.in(kScores).shape;
  const int rank = s.rank();
  SoftmaxArgs a{};
  a.k = s[rank - 1];
  a.rows = 1;
  for (int d = 0; d + 1 < rank; ++d) a.rows *= s[d];
  a.q_size = rank >= 2 ? s[rank - 2] : 1;
  a.rows_per_b = rank >= 2 && s[0] > 0 ? a.rows / s[0] : a.rows;
  a.causal = ctx.attrs().GetBool("causal");
  a.offset = ctx.attrs().GetInt("causal_offset");
  // No elements: rows of nothing, which a block per row would walk anyway.
  if (ctx.output.num_elements() == 0) return absl::OkStatus();
  CudaBuffer lens;
  if (ctx.has(kValidLens)) {
    DAGRAD_RETURN_IF_ERROR(cuda::PrepareValidLens(ctx, kValidLens, a.k, lens));
    a.lens = lens.as<int64_t>();
    a.lens_2d = ctx.in(kValidLens).rank() == 2;
  }
  // Strides of keep and bias over the rows (all axes but the last) and
  // along the last axis.
  const Shape lead_shape(absl::Span<const int64_t>(s.dims().data(), rank - 1));
  Dims keep_strides(rank, 0), bias_strides(rank, 0);
  if (ctx.has(kKeep)) {
    keep_strides = BroadcastStrides(*ctx.in(kKeep).shape, s);
    a.keep = ctx.in(kKeep).as<bool>();
    a.keep_last = keep_strides[rank - 1];
  }
  if (ctx.has(kBias)) {
    bias_strides = BroadcastStrides(*ctx.in(kBias).shape, s);
    a.bias_last = bias_strides[rank - 1];
  }
  keep_strides.pop_back();
  bias_strides.pop_back();
  DAGRAD_ASSIGN_OR_RETURN(a.lead, cuda::MakeStrided<2>(lead_shape, {keep_strides, bias_strides}));
  const T scale = static_cast<T>(ctx.attrs().GetFloat("scale", 1.0));
  MaskedSoftmaxImpl<<<GridFor(a.rows, 1), cuda::RowThreads(a.k), 0,
                      CudaContextOf(ctx).stream()>>>(
      ctx.in(kScores).as<T>(), ctx.has(kBias) ? ctx.in(kBias).as<T>() : nullptr,
      ctx.output.as<T>(), a, scale);
  return CheckLaunch("MaskedSoftmaxImpl");
}

absl::Status MaskedSoftmaxKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype,
                       [&](auto tag) { return MaskedSoftmaxTyped<decltype(tag)>(ctx); });
}

// ---- log_softmax ---------------------------------------------------------------

template <typename T>
__global__ void LogSoftmaxImpl(const T* x, T* out, int64_t rows, int64_t k) {
  __shared__ T shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * k;
    // As the CPU: (x - m) - log(sum).
    const cuda::ShiftedExpSum<T> s = cuda::RowShiftedExpSum(xr, k, shared);
    const T log_sum = static_cast<T>(math::Log(s.sum));
    T* y = out + row * k;
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) y[i] = (xr[i] - s.m) - log_sum;
  }
}

// ---- softmax_grad(g, y) = y * (g - sum(g * y)) -----------------------------------

template <typename T>
__global__ void SoftmaxGradImpl(const T* g, const T* y, T* dx, int64_t rows, int64_t k) {
  __shared__ cuda::Acc<T> shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* gr = g + row * k;
    const T* yr = y + row * k;
    cuda::Acc<T> sum = 0;
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) sum += cuda::Acc<T>(gr[i]) * yr[i];
    const T dot = static_cast<T>(cuda::BlockReduce(sum, cuda::SumOp(), shared));
    T* d = dx + row * k;
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) d[i] = yr[i] * (gr[i] - dot);
  }
}

// Rows of the last axis: the product of the other dims (1 for a vector).
int64_t LeadingRows(const Shape& s) {
  int64_t rows = 1;
  for (int d = 0; d + 1 < s.rank(); ++d) rows *= s[d];
  return rows;
}

absl::Status LogSoftmaxKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const Shape& s = *ctx.in(0).shape;
    const int64_t rows = LeadingRows(s), k = s[s.rank() - 1];
    if (ctx.output.num_elements() == 0) return absl::OkStatus();
    LogSoftmaxImpl<<<GridFor(rows, 1), cuda::RowThreads(k), 0, CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.output.as<T>(), rows, k);
    return CheckLaunch("LogSoftmaxImpl");
  });
}

absl::Status SoftmaxGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const Shape& s = *ctx.in(0).shape;
    const int64_t rows = LeadingRows(s), k = s[s.rank() - 1];
    if (ctx.output.num_elements() == 0) return absl::OkStatus();
    SoftmaxGradImpl<<<GridFor(rows, 1), cuda::RowThreads(k), 0, CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.in(1).as<T>(), ctx.output.as<T>(), rows, k);
    return CheckLaunch("SoftmaxGradImpl");
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(softmax, MaskedSoftmaxKernel);
DAGRAD_CUDA_KERNEL(softmax_grad, SoftmaxGradKernel);
DAGRAD_CUDA_KERNEL(log_softmax, LogSoftmaxKernel);

}  // namespace dagrad
