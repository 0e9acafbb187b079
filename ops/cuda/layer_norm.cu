// CUDA kernels of the layer_norm family (ops/layer_norm.cc): layer_norm and
// layer_norm_grad, one block per row of the last axis. Like the CPU
// kernels they take each row's mean and variance in double with two passes
// and recompute them in the backward kernel; the sums are combined in
// another order, so results agree to float32 rounding.
//
// Both ops may run in place (the output over x): every read of x for a
// row's sums precedes the block reductions, and the final pass reads x[i]
// before the same thread writes y[i].

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

struct Moments {
  double mean, rstd;
};

// RowMoments returns the row's mean and 1 / sqrt(biased variance + eps).
template <typename T>
__device__ Moments RowMoments(const T* x, int64_t d, double eps, double* shared) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) s += static_cast<double>(x[i]);
  const double mean = cuda::BlockReduce(s, cuda::SumOp(), shared) / static_cast<double>(d);
  double ss = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const double dev = x[i] - mean;
    ss += dev * dev;
  }
  const double var = cuda::BlockReduce(ss, cuda::SumOp(), shared) / static_cast<double>(d);
  return {mean, 1.0 / sqrt(var + eps)};
}

template <typename T>
__global__ void LayerNormKernelImpl(const T* x, const T* gamma, const T* beta, T* y,
                                    int64_t rows, int64_t d, double eps) {
  __shared__ double shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    const Moments m = RowMoments(xr, d, eps, shared);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      // In double first, as the CPU: a float32 mean would cost precision.
      T v = static_cast<T>((xr[i] - m.mean) * m.rstd);
      if (gamma) v *= gamma[i];
      if (beta) v += beta[i];
      yr[i] = v;
    }
  }
}

// dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)), gy = g * gamma.
template <typename T>
__global__ void LayerNormGradKernelImpl(const T* x, const T* gamma, const T* g, T* dx,
                                        int64_t rows, int64_t d, double eps) {
  __shared__ double shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    const T* gr = g + r * d;
    T* dxr = dx + r * d;
    const Moments m = RowMoments(xr, d, eps, shared);
    auto gy = [&](int64_t i) -> double {
      return gamma ? static_cast<double>(gr[i]) * gamma[i] : static_cast<double>(gr[i]);
    };
    double s_gy = 0, s_gy_xhat = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      s_gy += gy(i);
      s_gy_xhat += gy(i) * ((xr[i] - m.mean) * m.rstd);
    }
    const double mean_gy = cuda::BlockReduce(s_gy, cuda::SumOp(), shared) / d;
    const double mean_gy_xhat = cuda::BlockReduce(s_gy_xhat, cuda::SumOp(), shared) / d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const double xhat = (xr[i] - m.mean) * m.rstd;
      dxr[i] = static_cast<T>(m.rstd * (gy(i) - mean_gy - xhat * mean_gy_xhat));
    }
  }
}


absl::Status LayerNormKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto [rows, d] = RowsOf(*ctx.in(0).shape);
    if (rows == 0) return absl::OkStatus();
    LayerNormKernelImpl<<<cuda::GridFor(rows, 1), cuda::RowThreads(d), 0,
                          CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.has(1) ? ctx.in(1).as<T>() : nullptr,
        ctx.has(2) ? ctx.in(2).as<T>() : nullptr, ctx.output.as<T>(), rows, d,
        ctx.attrs().GetFloat("eps"));
    return CheckLaunch("LayerNormKernelImpl");
  });
}

absl::Status LayerNormGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto [rows, d] = RowsOf(*ctx.in(0).shape);
    if (rows == 0) return absl::OkStatus();
    LayerNormGradKernelImpl<<<cuda::GridFor(rows, 1), cuda::RowThreads(d), 0,
                              CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.has(1) ? ctx.in(1).as<T>() : nullptr, ctx.in(2).as<T>(),
        ctx.output.as<T>(), rows, d, ctx.attrs().GetFloat("eps"));
    return CheckLaunch("LayerNormGradKernelImpl");
  });
}

}  // namespace

std::vector<CudaKernelEntry> CudaLayerNormKernels() {
  return {{"layer_norm", LayerNormKernel}, {"layer_norm_grad", LayerNormGradKernel}};
}

}  // namespace dagrad
