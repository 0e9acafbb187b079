// ops/cuda/kernel_util.cuh
//
// What the CUDA kernels of ops/cuda/ share: launch geometry and grid-stride
// loops, strided (broadcast, permuted) indexing with merged dimensions,
// deterministic warp and block reductions, device-side error reports, and
// per-dtype math overloads. Included by .cu files only.
//
//   template <typename T>
//   __global__ void Twice(const T* x, T* y, int64_t n) {
//     DAGRAD_CUDA_LOOP(i, n) y[i] = x[i] + x[i];
//   }
//   Twice<<<GridFor(n), kThreads, 0, cuda.stream()>>>(x, y, n);
//   DAGRAD_RETURN_IF_ERROR(CheckLaunch("Twice"));
//
// Reductions combine values in a fixed tree that depends only on the block
// size, never on timing, so every kernel here is deterministic: the same
// inputs give the same bits on every run.

#ifndef DAGRAD_OPS_CUDA_KERNEL_UTIL_CUH_
#define DAGRAD_OPS_CUDA_KERNEL_UTIL_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_context.h"
#include "engine/op.h"
#include "engine/shape.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"
#include "ops/math/minmax.h"

namespace dagrad::cuda {

inline constexpr int kThreads = 256;
// Strided kernels take at most this many dimensions after merging; more is
// an Unimplemented error (it takes a broadcast pattern that alternates
// across nine or more axes).
inline constexpr int kMaxRank = 8;

// GridFor returns the blocks for n items at one per thread, capped: kernels
// loop with a grid stride, so the cap only bounds the launch.
inline unsigned GridFor(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, int64_t{1} << 20));
}

#define DAGRAD_CUDA_LOOP(i, n)                                                         \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// ---- strided indexing --------------------------------------------------------

// Strided maps a flat index of an output of `rank` dims to element offsets
// into N inputs, each read through its own strides (0 where broadcast).
template <int N>
struct Strided {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};

  __device__ void Offsets(int64_t i, int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t idx = i % dims[d];
      i /= dims[d];
      for (int k = 0; k < N; ++k) off[k] += idx * strides[k][d];
    }
  }
};

// MakeStrided merges adjacent dims that every input walks contiguously
// (and drops dims of size 1), so (B, T, E) + (E,) becomes a 2-d loop.
// Unimplemented when more than kMaxRank dims remain.
template <int N>
absl::StatusOr<Strided<N>> MakeStrided(const Shape& out, const std::array<Dims, N>& strides) {
  Strided<N> s;
  // Built innermost first, reversed at the end.
  int64_t dims[64];
  int64_t st[N][64];
  int rank = 0;
  for (int d = out.rank() - 1; d >= 0; --d) {
    const int64_t n = out[d];
    if (n == 1) continue;
    bool merge = rank > 0;
    for (int k = 0; merge && k < N; ++k) merge = strides[k][d] == st[k][rank - 1] * dims[rank - 1];
    if (merge) {
      dims[rank - 1] *= n;
      continue;
    }
    if (rank == 64 || rank == kMaxRank) {
      return absl::UnimplementedError(absl::StrCat(
          "CUDA strided kernels take at most ", kMaxRank, " dims after merging; output ",
          out.ToString(), " needs more"));
    }
    dims[rank] = n;
    for (int k = 0; k < N; ++k) st[k][rank] = strides[k][d];
    ++rank;
  }
  s.rank = rank;
  for (int d = 0; d < rank; ++d) {
    s.dims[d] = dims[rank - 1 - d];
    for (int k = 0; k < N; ++k) s.strides[k][d] = st[k][rank - 1 - d];
  }
  return s;
}

// ---- reductions ------------------------------------------------------------

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
// MaxOp is PropagatingMax (ops/math/minmax.h), the max of the reductions:
// a NaN anywhere makes the result NaN, as torch.amax.
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return PropagatingMax(a, b);
  }
};

// WarpReduce combines the 32 lanes' values; lane 0 holds the result.
template <typename T, typename Op>
__device__ T WarpReduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

// BlockReduce combines the values of every thread of the block and returns
// the result to all of them. `shared` holds 32 T. blockDim.x must be a
// multiple of 32. Contains __syncthreads: call it from every thread.
template <typename T, typename Op>
__device__ T BlockReduce(T v, Op op, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  v = WarpReduce(v, op);
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? shared[lane] : v;
    // Lanes past `warps` keep their own value, which is never combined
    // (only lanes < warps are); reading shared[0] there instead would race
    // with lane 0's write below, which no barrier separates from it.
    for (int offset = 16; offset > 0; offset /= 2) {
      const T other = __shfl_down_sync(0xffffffffu, w, offset);
      if (lane + offset < warps) w = op(w, other);
    }
    if (lane == 0) shared[0] = w;
  }
  __syncthreads();
  return shared[0];
}

// RowThreads picks a block size for a kernel that gives each row of n
// elements to one block: enough threads to cover the row, 32 to 256.
inline int RowThreads(int64_t n) {
  int threads = 32;
  while (threads < 256 && threads < n) threads *= 2;
  return threads;
}

// ---- device-side error reports ----------------------------------------------

// ReportBadElement records that element `position` of the data checked at
// `site` is bad. The first site to report (in stream order) keeps the
// record; within it the smallest position wins.
__device__ inline void ReportBadElement(DeviceErrorRecord* record, int site, int64_t position) {
  const int prev = atomicCAS(&record->site, kNoErrorSite, site);
  if (prev == kNoErrorSite || prev == site) {
    atomicMin(&record->position, static_cast<unsigned long long>(position));
  }
}

// CaptureErrorValue copies the bad element into the record, once the check
// that found it has finished (launch it right after, with one thread).
template <typename V>
__global__ void CaptureErrorValue(DeviceErrorRecord* record, int site, const V* values) {
  if (record->site != site || record->has_value == 1 || record->position == kNoErrorPosition) {
    return;
  }
  const V v = values[record->position];
  if constexpr (std::is_integral_v<V>) record->int_value = static_cast<long long>(v);
  record->float_value = ConvertElement<double>(v);
  record->has_value = 1;
}

// CheckElementsKernel reports every i < n with bad(values[i]).
template <typename V, typename Bad>
__global__ void CheckElementsKernel(const V* values, int64_t n, Bad bad,
                                    DeviceErrorRecord* record, int site) {
  DAGRAD_CUDA_LOOP(i, n) {
    if (bad(values[i])) ReportBadElement(record, site, i);
  }
}

// CheckElements queues a check of values[0, n) with the functor `bad`; the
// first bad element (lowest index) fails the run with `format`'s message.
template <typename V, typename Bad>
absl::Status CheckElements(const KernelContext& ctx, const V* values, int64_t n, Bad bad,
                           DeviceErrorFormatter format) {
  if (n == 0) return absl::OkStatus();
  CudaContext& cuda = CudaContextOf(ctx);
  const int site = cuda.AddErrorSite(ctx.node, std::move(format));
  CheckElementsKernel<<<GridFor(n), kThreads, 0, cuda.stream()>>>(values, n, bad,
                                                                  cuda.error_record(), site);
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("CheckElementsKernel"));
  CaptureErrorValue<<<1, 1, 0, cuda.stream()>>>(cuda.error_record(), site, values);
  return CheckLaunch("CaptureErrorValue");
}

// The math functions on either float type are math::Exp, ... in
// ops/elementwise.h, shared with the CPU.

template <typename T>
__device__ inline T Infinity() {
  if constexpr (std::is_same_v<T, float>) {
    return __int_as_float(0x7f800000);
  } else {
    return __longlong_as_double(0x7ff0000000000000ll);
  }
}

// Accumulator types as the CPU kernels use them: double for floats, int64
// for integers.
template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// ShiftedExpSum is a row's maximum m and the sum of exp(x[k] - m).
template <typename T>
struct ShiftedExpSum {
  T m;
  Acc<T> sum;
};

// RowShiftedExpSum returns the ShiftedExpSum of x[0, n) to every thread of
// the block; the sum accumulates in Acc<T> (double). `shared` holds 32 T.
// Contains __syncthreads: call it from every thread.
template <typename T>
__device__ ShiftedExpSum<T> RowShiftedExpSum(const T* x, int64_t n, T* shared) {
  __shared__ Acc<T> shared_sum[32];
  T m = -Infinity<T>();
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) m = MaxOp()(m, x[k]);
  m = BlockReduce(m, MaxOp(), shared);
  Acc<T> sum = 0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += math::Exp(x[k] - m);
  return {m, BlockReduce(sum, SumOp(), shared_sum)};
}

}  // namespace dagrad::cuda

#endif  // DAGRAD_OPS_CUDA_KERNEL_UTIL_CUH_
