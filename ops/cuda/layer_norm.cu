// CUDA kernels of the layer_norm family (ops/layer_norm.cc): layer_norm and
// layer_norm_grad, one block per row of the last axis, and
// layer_norm_param_grad, which stores each row's moments and then sums
// columns. Like the CPU kernels they take each row's mean and variance in
// double with two passes and recompute them in the backward kernels; the
// sums are combined in another order, so results agree to float32 rounding.
//
// layer_norm and layer_norm_grad may run in place (the output over x):
// every read of x for a row's sums precedes the block reductions, and the
// final pass reads x[i] before the same thread writes y[i].

#include <type_traits>

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
  double mean = cuda::BlockReduce(s, cuda::SumOp(), shared) / static_cast<double>(d);
  if constexpr (std::is_same_v<T, double>) {  // as the CPU's MomentsOfRows: the sum rounds
    double drift = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) drift += x[i] - mean;
    mean += cuda::BlockReduce(drift, cuda::SumOp(), shared) / static_cast<double>(d);
  }
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

// RowMomentsKernel stores each row's mean and rstd.
template <typename T>
__global__ void RowMomentsKernel(const T* x, int64_t rows, int64_t d, double eps,
                                 Moments* moments) {
  __shared__ double shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Moments m = RowMoments(x + r * d, d, eps, shared);
    if (threadIdx.x == 0) moments[r] = m;
  }
}

// A block sums kColumns columns, kRowLanes threads per column each taking
// every kRowLanes-th row; the lanes are then added in order.
constexpr int kColumns = 32, kRowLanes = 8;

// out[j] = sum over rows of g * xhat, out[d + j] = sum over rows of g; a
// block takes tiles of kColumns columns with a grid stride.
template <typename T>
__global__ void ParamGradColumnsKernel(const T* x, const T* g, const Moments* moments,
                                       int64_t rows, int64_t d, T* out) {
  __shared__ double sums[2][kRowLanes][kColumns];
  for (int64_t tile = blockIdx.x; tile * kColumns < d; tile += gridDim.x) {
    const int64_t j = tile * kColumns + threadIdx.x;
    double s_gxhat = 0, s_g = 0;
    for (int64_t r = threadIdx.y; j < d && r < rows; r += kRowLanes) {
      const double gi = g[r * d + j];
      s_gxhat += gi * ((x[r * d + j] - moments[r].mean) * moments[r].rstd);
      s_g += gi;
    }
    __syncthreads();  // the previous tile's sums are read
    sums[0][threadIdx.y][threadIdx.x] = s_gxhat;
    sums[1][threadIdx.y][threadIdx.x] = s_g;
    __syncthreads();
    if (threadIdx.y < 2 && j < d) {
      double total = 0;
      for (int lane = 0; lane < kRowLanes; ++lane) total += sums[threadIdx.y][lane][threadIdx.x];
      out[threadIdx.y * d + j] = static_cast<T>(total);
    }
  }
}

absl::Status LayerNormKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto [rows, d] = RowsOf(*ctx.in(0).shape);
    if (ctx.output.num_elements() == 0) return absl::OkStatus();  // rows of nothing
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
    if (ctx.output.num_elements() == 0) return absl::OkStatus();
    LayerNormGradKernelImpl<<<cuda::GridFor(rows, 1), cuda::RowThreads(d), 0,
                              CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.has(1) ? ctx.in(1).as<T>() : nullptr, ctx.in(2).as<T>(),
        ctx.output.as<T>(), rows, d, ctx.attrs().GetFloat("eps"));
    return CheckLaunch("LayerNormGradKernelImpl");
  });
}

absl::Status LayerNormParamGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const auto [rows, d] = RowsOf(*ctx.in(0).shape);
    if (d == 0) return absl::OkStatus();
    CudaContext& cuda = CudaContextOf(ctx);
    const T* x = ctx.in(0).as<T>();
    DAGRAD_ASSIGN_OR_RETURN(CudaBuffer moments,
                            cuda.Scratch(std::max<int64_t>(rows, 1) * sizeof(Moments)));
    if (rows > 0) {
      RowMomentsKernel<<<cuda::GridFor(rows, 1), cuda::RowThreads(d), 0, cuda.stream()>>>(
          x, rows, d, ctx.attrs().GetFloat("eps"), moments.as<Moments>());
      DAGRAD_RETURN_IF_ERROR(CheckLaunch("RowMomentsKernel"));
    }
    ParamGradColumnsKernel<<<cuda::GridFor(d, kColumns), dim3(kColumns, kRowLanes), 0,
                             cuda.stream()>>>(x, ctx.in(1).as<T>(), moments.as<Moments>(), rows,
                                              d, ctx.output.as<T>());
    return CheckLaunch("ParamGradColumnsKernel");
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(layer_norm, LayerNormKernel);
DAGRAD_CUDA_KERNEL(layer_norm_grad, LayerNormGradKernel);
DAGRAD_CUDA_KERNEL(layer_norm_param_grad, LayerNormParamGradKernel);

}  // namespace dagrad
