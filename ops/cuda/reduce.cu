// CUDA kernels of the reduce family (ops/reduce.cc): sum, mean and max over
// any set of axes, deterministic (no atomics: fixed trees and fixed chunks).
//
// As on the CPU, the input is seen as (outer, mid, inner) when the reduced
// axes are contiguous:
//   inner == 1 (last axes, or everything): a block per output row, or,
//     for a few very long rows, blocks per chunk of a row and a second pass;
//   inner > 1 (leading or middle axes, e.g. a bias gradient summed over
//     (B, T)): 32-column tiles read coalesced, mid cut into contiguous
//     slices, each walked by one block, whose partials a second pass
//     combines in slice order (any length of mid);
// and otherwise one thread per output walks the reduced axes (an odometer,
// as the CPU's general path). Float sums accumulate in double and integer
// sums in int64 with wrap-around addition (WrapAdd), as on the CPU; the
// order differs, so float results agree to float32 rounding, not bit for
// bit. Max is NaN where any reduced element is NaN, as torch.amax.

#include <limits>

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/math/int_math.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::Acc;
using cuda::GridFor;
using cuda::kThreads;

enum class Reduction { kSum, kMean, kMax };

// Identity of max, as the CPU's: -inf for floats (so rows of -inf, and
// empty rows, reduce to -inf), lowest() for integers.
template <typename T>
__device__ T MaxIdentity() {
  if constexpr (std::is_floating_point_v<T>) {
    return -cuda::Infinity<T>();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

// What a thread accumulates: Acc<T> for sums, T for max.
template <typename T, Reduction R>
using Partial = std::conditional_t<R == Reduction::kMax, T, Acc<T>>;

template <typename T, Reduction R>
__device__ Partial<T, R> Identity() {
  if constexpr (R == Reduction::kMax) {
    return MaxIdentity<T>();
  } else {
    return Partial<T, R>(0);
  }
}

// CombineOp merges two partials: MaxOp (NaN wins) or WrapAdd (integer sums
// wrap around instead of overflowing, which would be undefined).
template <Reduction R>
struct CombineOp {
  template <typename P>
  __device__ P operator()(P a, P b) const {
    if constexpr (R == Reduction::kMax) {
      return cuda::MaxOp()(a, b);
    } else {
      return WrapAdd(a, b);
    }
  }
};

template <typename T, Reduction R>
__device__ Partial<T, R> Combine(Partial<T, R> a, Partial<T, R> b) {
  return CombineOp<R>()(a, b);
}

// Finish turns a row's partial into the output value: a mean divides by
// mid, as the CPU does (not a product with 1/mid: other bits). The mean of no elements is NaN, as the CPU's
// (torch.mean).
template <typename T, Reduction R>
__device__ T Finish(Partial<T, R> p, int64_t mid) {
  if constexpr (R == Reduction::kMax) {
    return mid == 0 ? MaxIdentity<T>() : p;
  } else if constexpr (R == Reduction::kMean) {
    return static_cast<T>(mid == 0 ? std::numeric_limits<double>::quiet_NaN()
                                   : static_cast<double>(p) / static_cast<double>(mid));
  } else {
    return static_cast<T>(p);
  }
}

// ---- inner == 1: a block per row ----------------------------------------------

// Each of `rows` rows of `len` values (T, or partials from
// ReduceRowChunksKernel) is combined by one block; `mid` is the count of
// elements the row stands for (for the mean and the empty max).
template <typename T, Reduction R, typename In>
__global__ void ReduceRowsKernel(const In* x, T* y, int64_t rows, int64_t len, int64_t mid) {
  using P = Partial<T, R>;
  __shared__ P shared[32];
  for (int64_t o = blockIdx.x; o < rows; o += gridDim.x) {
    const In* row = x + o * len;
    P acc = Identity<T, R>();
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) acc = Combine<T, R>(acc, P(row[i]));
    acc = cuda::BlockReduce(acc, CombineOp<R>(), shared);
    if (threadIdx.x == 0) y[o] = Finish<T, R>(acc, mid);
  }
}

// Few long rows (a full reduction, a gradient norm) would leave most of the
// GPU idle with a block per row: rows longer than 2 * kRowChunk, when there
// are fewer than kFewRows of them, are cut into chunks of kRowChunk
// elements, each reduced by its own block to a partial; a second pass
// combines each row's partials in order. Both passes depend only on the
// shape, so the result is still deterministic.
constexpr int64_t kRowChunk = 16384;
constexpr int64_t kFewRows = 512;

template <typename T, Reduction R>
__global__ void ReduceRowChunksKernel(const T* x, Partial<T, R>* partial, int64_t rows,
                                      int64_t mid, int64_t chunks) {
  using P = Partial<T, R>;
  __shared__ P shared[32];
  const int64_t c = blockIdx.x;
  const int64_t begin = c * kRowChunk, end = std::min(mid, begin + kRowChunk);
  for (int64_t o = blockIdx.y; o < rows; o += gridDim.y) {
    const T* row = x + o * mid;
    P acc = Identity<T, R>();
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      acc = Combine<T, R>(acc, P(row[i]));
    }
    acc = cuda::BlockReduce(acc, CombineOp<R>(), shared);
    if (threadIdx.x == 0) partial[o * chunks + c] = acc;
  }
}

// ---- inner > 1: column tiles, mid in slices ----------------------------------

constexpr int kTileColumns = 32;
constexpr int kTileRows = 8;
constexpr int64_t kMaxGridY = 65535;
// mid is cut into slices, one block each per column tile and outer row:
// enough of them for about kTargetBlocks blocks in all (few columns would
// otherwise leave most of the GPU idle), none shorter than kMinSliceRows.
// So the grid's z extent stays under its limit, and the partials stay
// under kTargetBlocks * 32 values (1 MiB), however long mid is.
constexpr int64_t kTargetBlocks = 4096;
constexpr int64_t kMinSliceRows = 128;
static_assert(kTargetBlocks <= 65535, "slices are gridDim.z");

// ColumnSlices is `count` slices of `rows` rows (the last may be shorter).
struct ColumnSlices {
  int64_t count, rows;
};
ColumnSlices SliceColumns(int64_t mid, int64_t blocks_per_slice) {
  const int64_t most = std::max<int64_t>(1, (mid + kMinSliceRows - 1) / kMinSliceRows);
  const int64_t wanted = std::max<int64_t>(1, kTargetBlocks / blocks_per_slice);
  const int64_t count = std::min(most, wanted);
  const int64_t rows = std::max<int64_t>(1, (mid + count - 1) / count);
  return {std::max<int64_t>(1, (mid + rows - 1) / rows), rows};  // one slice when mid is 0
}

// Grid: x over column tiles, y over outer (strided), z over slices of
// `slice_rows` rows of mid, each block walking its whole slice. With one
// slice the result goes to y; with several, each slice's partial goes to
// partial[slice][o][j] for ReduceSlicesKernel.
template <typename T, Reduction R>
__global__ void ReduceColumnsKernel(const T* x, T* y, Partial<T, R>* partial, int64_t outer,
                                    int64_t mid, int64_t inner, int64_t slice_rows) {
  using P = Partial<T, R>;
  __shared__ P tile[kTileRows][kTileColumns];
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kTileColumns + threadIdx.x;
  const int64_t slice = blockIdx.z;
  const int64_t m0 = slice * slice_rows;
  const int64_t m1 = std::min(mid, m0 + slice_rows);
  for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    P acc = Identity<T, R>();
    if (j < inner) {
      const T* col = x + o * mid * inner + j;
      for (int64_t m = m0 + threadIdx.y; m < m1; m += kTileRows) {
        acc = Combine<T, R>(acc, P(col[m * inner]));
      }
    }
    tile[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < inner) {
      for (int r = 1; r < kTileRows; ++r) acc = Combine<T, R>(acc, tile[r][threadIdx.x]);
      if (gridDim.z == 1) {
        y[o * inner + j] = Finish<T, R>(acc, mid);
      } else {
        partial[(slice * outer + o) * inner + j] = acc;
      }
    }
    __syncthreads();
  }
}

template <typename T, Reduction R>
__global__ void ReduceSlicesKernel(const Partial<T, R>* partial, T* y, int64_t slices,
                                   int64_t outputs, int64_t mid) {
  DAGRAD_CUDA_LOOP(i, outputs) {
    Partial<T, R> acc = partial[i];
    for (int64_t c = 1; c < slices; ++c) acc = Combine<T, R>(acc, partial[c * outputs + i]);
    y[i] = Finish<T, R>(acc, mid);
  }
}

// ---- reduced axes not contiguous: the CPU's odometer -------------------------

struct GeneralShape {
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_dims[cuda::kMaxRank], kept_strides[cuda::kMaxRank];
  int64_t reduced_dims[cuda::kMaxRank], reduced_strides[cuda::kMaxRank];
  int64_t count = 1;  // elements per output
};

// Exactly the CPU's ReduceGeneral per output: max from MaxIdentity, sums in
// Acc<T> in the same order (wrapping for integers), mean as sum / count
// (NaN for no elements).
template <typename T, Reduction R>
__global__ void ReduceGeneralKernel(const T* x, T* y, int64_t outputs, GeneralShape s) {
  DAGRAD_CUDA_LOOP(o, outputs) {
    int64_t base = 0, rem = o;
    for (int d = s.kept_rank - 1; d >= 0; --d) {
      base += rem % s.kept_dims[d] * s.kept_strides[d];
      rem /= s.kept_dims[d];
    }
    Acc<T> sum = 0;
    T m = MaxIdentity<T>();
    int64_t idx[cuda::kMaxRank] = {};
    for (int64_t n = 0; n < s.count; ++n) {
      int64_t off = base;
      for (int a = 0; a < s.reduced_rank; ++a) off += idx[a] * s.reduced_strides[a];
      if constexpr (R == Reduction::kMax) {
        m = cuda::MaxOp()(m, x[off]);
      } else {
        sum = WrapAdd<Acc<T>>(sum, x[off]);
      }
      for (int a = s.reduced_rank - 1; a >= 0; --a) {
        if (++idx[a] < s.reduced_dims[a]) break;
        idx[a] = 0;
      }
    }
    if constexpr (R == Reduction::kMax) {
      y[o] = m;
    } else if constexpr (R == Reduction::kMean) {
      y[o] = static_cast<T>(s.count ? sum / static_cast<double>(s.count)
                                    : std::numeric_limits<double>::quiet_NaN());
    } else {
      y[o] = static_cast<T>(sum);
    }
  }
}

template <typename T, Reduction R>
absl::Status LaunchGeneral(const T* x, T* y, int64_t outputs, const Shape& in,
                           const std::vector<int>& axes, cudaStream_t stream) {
  GeneralShape s;
  const Dims strides = RowMajorStrides(in);
  for (int i = 0; i < in.rank(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    int& rank = reduced ? s.reduced_rank : s.kept_rank;
    if (rank == cuda::kMaxRank) {
      return absl::UnimplementedError(absl::StrCat(
          "CUDA reductions over non-contiguous axes take at most ", cuda::kMaxRank,
          " reduced and kept axes; input ", in.ToString()));
    }
    (reduced ? s.reduced_dims : s.kept_dims)[rank] = in[i];
    (reduced ? s.reduced_strides : s.kept_strides)[rank] = strides[i];
    ++rank;
    if (reduced) s.count *= in[i];
  }
  ReduceGeneralKernel<T, R><<<GridFor(outputs), kThreads, 0, stream>>>(x, y, outputs, s);
  return CheckLaunch("ReduceGeneralKernel");
}

// Reduces each of `outer` rows of `mid` elements (inner == 1).
template <typename T, Reduction R>
absl::Status LaunchRows(const T* x, T* y, int64_t outer, int64_t mid, CudaContext& cuda) {
  using P = Partial<T, R>;
  cudaStream_t stream = cuda.stream();
  if (mid <= 2 * kRowChunk || outer >= kFewRows) {
    ReduceRowsKernel<T, R, T><<<GridFor(outer, 1), cuda::RowThreads(mid), 0, stream>>>(
        x, y, outer, mid, mid);
    return CheckLaunch("ReduceRowsKernel");
  }
  const int64_t chunks = (mid + kRowChunk - 1) / kRowChunk;
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer partial, cuda.Scratch(outer * chunks * sizeof(P)));
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(outer));
  ReduceRowChunksKernel<T, R><<<grid, kThreads, 0, stream>>>(x, partial.as<P>(), outer, mid,
                                                              chunks);
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("ReduceRowChunksKernel"));
  ReduceRowsKernel<T, R, P><<<GridFor(outer, 1), cuda::RowThreads(chunks), 0, stream>>>(
      partial.as<P>(), y, outer, chunks, mid);
  return CheckLaunch("ReduceRowsKernel");
}

// Reduces (outer, mid, inner) over mid (inner > 1).
template <typename T, Reduction R>
absl::Status LaunchColumns(const T* x, T* y, int64_t outer, int64_t mid, int64_t inner,
                           CudaContext& cuda) {
  using P = Partial<T, R>;
  cudaStream_t stream = cuda.stream();
  const int64_t tiles = (inner + kTileColumns - 1) / kTileColumns;
  const int64_t outer_blocks = std::min(outer, kMaxGridY);
  const ColumnSlices slices = SliceColumns(mid, tiles * outer_blocks);
  const dim3 block(kTileColumns, kTileRows);
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(outer_blocks),
                  static_cast<unsigned>(slices.count));
  if (slices.count == 1) {
    ReduceColumnsKernel<T, R><<<grid, block, 0, stream>>>(x, y, nullptr, outer, mid, inner,
                                                          slices.rows);
    return CheckLaunch("ReduceColumnsKernel");
  }
  const int64_t outputs = outer * inner;
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer partial, cuda.Scratch(slices.count * outputs * sizeof(P)));
  ReduceColumnsKernel<T, R><<<grid, block, 0, stream>>>(x, y, partial.as<P>(), outer, mid,
                                                        inner, slices.rows);
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("ReduceColumnsKernel"));
  ReduceSlicesKernel<T, R><<<GridFor(outputs), kThreads, 0, stream>>>(
      partial.as<P>(), y, slices.count, outputs, mid);
  return CheckLaunch("ReduceSlicesKernel");
}

template <typename T, Reduction R>
absl::Status ReduceTyped(const KernelContext& ctx, const std::vector<int>& axes) {
  const Shape& in = *ctx.in(0).shape;
  const T* x = ctx.in(0).as<T>();
  T* y = ctx.output.as<T>();
  const int64_t outputs = ctx.output.num_elements();
  if (outputs == 0) return absl::OkStatus();
  CudaContext& cuda = CudaContextOf(ctx);
  const bool contiguous =
      axes.empty() || axes.back() - axes.front() + 1 == static_cast<int>(axes.size());
  if (!contiguous) return LaunchGeneral<T, R>(x, y, outputs, in, axes, cuda.stream());
  int64_t outer = 1, mid = 1, inner = 1;
  for (int i = 0; i < in.rank(); ++i) {
    if (!axes.empty() && i < axes.front()) {
      outer *= in[i];
    } else if (!axes.empty() && i > axes.back()) {
      inner *= in[i];
    } else {
      mid *= in[i];
    }
  }
  if (inner == 1) return LaunchRows<T, R>(x, y, outer, mid, cuda);
  return LaunchColumns<T, R>(x, y, outer, mid, inner, cuda);
}

template <Reduction R>
absl::Status ReduceKernel(const KernelContext& ctx) {
  auto axes = NormalizeAxes(ctx.attrs().GetInts("axes"), ctx.in(0).rank());
  if (!axes.ok()) return axes.status();
  return DispatchNumeric(ctx.output.dtype, "reduce of bool",
                         [&](auto tag) { return ReduceTyped<decltype(tag), R>(ctx, *axes); });
}

}  // namespace

DAGRAD_CUDA_KERNEL(sum, ReduceKernel<Reduction::kSum>);
DAGRAD_CUDA_KERNEL(mean, ReduceKernel<Reduction::kMean>);
DAGRAD_CUDA_KERNEL(max, ReduceKernel<Reduction::kMax>);

}  // namespace dagrad
