// CUDA kernels of the loss family (ops/loss.cc): cross_entropy and
// cross_entropy_grad. Targets are checked on the device (the CPU's message
// for the first bad one) and turned into one int64 per row, -1 where the
// row is ignored. Each row's loss is a block's log-sum-exp; the mean and
// sum reduce the per-row losses in double in a fixed tree (the CPU adds
// them in row order), so the loss agrees to float32 rounding.

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

enum class LossReduction { kMean, kSum, kNone };

absl::StatusOr<LossReduction> ReductionOf(const Attrs& attrs) {
  const std::string name = attrs.GetStr("reduction", "mean");
  if (name == "mean") return LossReduction::kMean;
  if (name == "sum") return LossReduction::kSum;
  if (name == "none") return LossReduction::kNone;
  return absl::InvalidArgumentError(
      absl::StrCat("reduction must be mean, sum or none, got '", name, "'"));
}


template <typename I>
struct BadTarget {
  __device__ bool operator()(I v) const {
    const int64_t t = static_cast<int64_t>(v);
    return t != ignore && (t < 0 || t >= classes);
  }
  int64_t classes, ignore;
};

template <typename I>
__global__ void RowTargetsKernel(const I* targets, int64_t rows, int64_t classes, int64_t ignore,
                                 int64_t* out) {
  DAGRAD_CUDA_LOOP(r, rows) {
    const int64_t t = static_cast<int64_t>(targets[r]);
    out[r] = t != ignore && t >= 0 && t < classes ? t : -1;
  }
}

// RowTargets checks the targets and returns each row's class (-1: ignored,
// or bad, which fails the run) in a scratch buffer of `rows` int64.
absl::StatusOr<CudaBuffer> RowTargets(const KernelContext& ctx) {
  const TensorRef& targets = ctx.in(1);
  const int64_t rows = targets.num_elements();
  const int64_t classes = ctx.in(0).dim(ctx.in(0).rank() - 1);
  const int64_t ignore = ctx.attrs().GetInt("ignore_index", -100);
  CudaContext& cuda = CudaContextOf(ctx);
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer out, cuda.Scratch(std::max<int64_t>(rows, 1) * 8));
  const Shape shape = *targets.shape;
  DAGRAD_RETURN_IF_ERROR(DispatchIndex(targets.dtype, [&](auto tag) {
    using I = decltype(tag);
    DAGRAD_RETURN_IF_ERROR(cuda::CheckElements(
        ctx, targets.as<I>(), rows, BadTarget<I>{classes, ignore},
        [shape, classes, ignore](const DeviceErrorDetail& d) {
          return absl::StrCat("targets[", FormatIndex(d.position, shape), "] = ", d.int_value,
                              " is outside [0, ", classes, ") and is not ignore_index (", ignore,
                              ")");
        }));
    if (rows == 0) return absl::OkStatus();
    RowTargetsKernel<<<GridFor(rows), kThreads, 0, cuda.stream()>>>(targets.as<I>(), rows,
                                                                   classes, ignore,
                                                                   out.as<int64_t>());
    return CheckLaunch("RowTargetsKernel");
  }));
  return out;
}

// RowGapSum returns sum(m - x[k]) over x[0, n), in double, to every thread
// of the block. Contains __syncthreads: call it from every thread.
template <typename T>
__device__ double RowGapSum(const T* x, int64_t n, T m) {
  __shared__ double shared[32];
  double sum = 0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    sum += static_cast<double>(m) - static_cast<double>(x[k]);
  }
  return cuda::BlockReduce(sum, cuda::SumOp(), shared);
}

// loss[r] = sum(q · (m - x_r)) + log(sum(exp(x_r - m))), in double as on the
// CPU (ops/loss.cc's RowLoss: m - x is taken before the log is added, so a
// large max cannot absorb it), q = (1 - e)·onehot(target) + e/C; 0 when
// ignored.
template <typename T>
__global__ void RowLossKernel(const T* x, const int64_t* target, int64_t rows, int64_t classes,
                              double smoothing, double* loss) {
  __shared__ T shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t t = target[r];
    if (t < 0) {  // the same for the whole block
      if (threadIdx.x == 0) loss[r] = 0;
      continue;
    }
    const T* xr = x + r * classes;
    const cuda::ShiftedExpSum<T> s = cuda::RowShiftedExpSum(xr, classes, shared);
    const double log_sum = math::Log(s.sum);
    const double to_target = static_cast<double>(s.m) - static_cast<double>(xr[t]);
    if (smoothing == 0) {
      if (threadIdx.x == 0) loss[r] = to_target + log_sum;
      continue;
    }
    const double to_all = RowGapSum(xr, classes, s.m);
    if (threadIdx.x == 0) {
      loss[r] = (1 - smoothing) * to_target + smoothing * (to_all / classes) + log_sum;
    }
  }
}

// One block: the total loss and the number of rows not ignored.
template <typename T>
__global__ void TotalLossKernel(const double* loss, const int64_t* target, int64_t rows,
                                bool mean, T* y) {
  __shared__ double shared_sum[32];
  __shared__ int64_t shared_count[32];
  double total = 0;
  int64_t count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    total += loss[r];
    count += target[r] >= 0;
  }
  total = cuda::BlockReduce(total, cuda::SumOp(), shared_sum);
  count = cuda::BlockReduce(count, cuda::SumOp(), shared_count);
  if (threadIdx.x == 0) {
    if (mean) total = count ? total / static_cast<double>(count) : 0.0;
    y[0] = static_cast<T>(total);
  }
}

template <typename T>
__global__ void LossPerRowKernel(const double* loss, int64_t rows, T* y) {
  DAGRAD_CUDA_LOOP(r, rows) y[r] = static_cast<T>(loss[r]);
}

template <typename T>
absl::Status CrossEntropyTyped(const KernelContext& ctx, LossReduction reduction) {
  const double smoothing = ctx.attrs().GetFloat("label_smoothing", 0.0);  // checked: [0, 1]
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer target, RowTargets(ctx));
  CudaContext& cuda = CudaContextOf(ctx);
  cudaStream_t stream = cuda.stream();
  const int64_t rows = ctx.in(1).num_elements();
  const int64_t classes = ctx.in(0).dim(ctx.in(0).rank() - 1);
  T* y = ctx.output.as<T>();
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer loss, cuda.Scratch(std::max<int64_t>(rows, 1) * 8));
  if (rows > 0) {
    RowLossKernel<<<GridFor(rows, 1), cuda::RowThreads(classes), 0, stream>>>(
        ctx.in(0).as<T>(), target.as<int64_t>(), rows, classes, smoothing, loss.as<double>());
    DAGRAD_RETURN_IF_ERROR(CheckLaunch("RowLossKernel"));
  }
  if (reduction == LossReduction::kNone) {
    if (rows == 0) return absl::OkStatus();
    LossPerRowKernel<<<GridFor(rows), kThreads, 0, stream>>>(loss.as<double>(), rows, y);
    return CheckLaunch("LossPerRowKernel");
  }
  TotalLossKernel<<<1, 1024, 0, stream>>>(loss.as<double>(), target.as<int64_t>(), rows,
                                          reduction == LossReduction::kMean, y);
  return CheckLaunch("TotalLossKernel");
}

absl::Status CrossEntropyKernel(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const LossReduction reduction, ReductionOf(ctx.attrs()));
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    return CrossEntropyTyped<decltype(tag)>(ctx, reduction);
  });
}

// ---- cross_entropy_grad(logits, targets, g) ----------------------------------------

__global__ void CountRowsKernel(const int64_t* target, int64_t rows, int64_t* count) {
  __shared__ int64_t shared[32];
  int64_t c = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) c += target[r] >= 0;
  c = cuda::BlockReduce(c, cuda::SumOp(), shared);
  if (threadIdx.x == 0) *count = c;
}

// dlogits = (softmax(x) - q) * w, q = (1 - e)·onehot(target) + e/C, with
// w = g[r] (none), g[0] (sum) or g[0] / count (mean, in T as on the CPU);
// zero rows when ignored.
template <typename T>
__global__ void CrossEntropyGradImpl(const T* x, const int64_t* target, const T* g,
                                     const int64_t* count, int64_t rows, int64_t classes,
                                     LossReduction reduction, double smoothing, T* dx) {
  __shared__ T shared[32];
  T w_all = g[0];
  if (reduction == LossReduction::kMean) {
    w_all = *count ? static_cast<T>(g[0] / static_cast<T>(*count)) : T(0);
  }
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T* d = dx + r * classes;
    const int64_t t = target[r];
    if (t < 0) {
      for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) d[k] = T(0);
      continue;
    }
    const T* xr = x + r * classes;
    const T w = reduction == LossReduction::kNone ? g[r] : w_all;
    // As the CPU: exp(x - max) scaled by w / sum, so that the error does
    // not grow with the log-sum-exp, as exp(x - lse) rounded to T would.
    const cuda::ShiftedExpSum<T> s = cuda::RowShiftedExpSum(xr, classes, shared);
    const T scale = static_cast<T>(w / s.sum);
    const T spread = static_cast<T>(w * smoothing / static_cast<double>(classes));
    const T w_target = smoothing == 0 ? w : static_cast<T>(w * (1 - smoothing));
    // d may be x's buffer: each element is read, then written, by one thread.
    for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) {
      T v = math::Exp(xr[k] - s.m) * scale;
      if (smoothing != 0) v -= spread;
      if (k == t) v -= w_target;
      d[k] = v;
    }
  }
}

template <typename T>
absl::Status CrossEntropyGradTyped(const KernelContext& ctx, LossReduction reduction) {
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer target, RowTargets(ctx));
  CudaContext& cuda = CudaContextOf(ctx);
  cudaStream_t stream = cuda.stream();
  const int64_t rows = ctx.in(1).num_elements();
  const int64_t classes = ctx.in(0).dim(ctx.in(0).rank() - 1);
  if (rows == 0 || classes == 0) return absl::OkStatus();
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer count, cuda.Scratch(sizeof(int64_t)));
  CountRowsKernel<<<1, 1024, 0, stream>>>(target.as<int64_t>(), rows, count.as<int64_t>());
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("CountRowsKernel"));
  CrossEntropyGradImpl<<<GridFor(rows, 1), cuda::RowThreads(classes), 0, stream>>>(
      ctx.in(0).as<T>(), target.as<int64_t>(), ctx.in(2).as<T>(), count.as<int64_t>(), rows,
      classes, reduction, ctx.attrs().GetFloat("label_smoothing", 0.0), ctx.output.as<T>());
  return CheckLaunch("CrossEntropyGradImpl");
}

absl::Status CrossEntropyGradKernel(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const LossReduction reduction, ReductionOf(ctx.attrs()));
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    return CrossEntropyGradTyped<decltype(tag)>(ctx, reduction);
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(cross_entropy, CrossEntropyKernel);
DAGRAD_CUDA_KERNEL(cross_entropy_grad, CrossEntropyGradKernel);

}  // namespace dagrad
