// CUDA kernels of the gather family (ops/gather.cc): gather (and so
// embedding) and scatter_add, both seeing their tensors as (outer, n,
// inner) around the indexed axis with K indices.
//
// Indices are checked on the device; the first one outside [0, n) (for
// gather_from_end, [-n, n)) fails the run with the CPU kernel's message.
// Kernels never touch memory outside the tensor through a bad index:
// gather reads row ix + n for an ix in [-n, 0) and writes 0 for one past
// that, scatter_add skips it.
//
// scatter_add is deterministic without float atomics: a stable radix sort
// (CUB) groups the positions of equal indices in increasing order, and
// each output element adds its updates in that order, starting from 0 —
// the CPU kernel's order, so the result is bit-identical to it. A heavily
// repeated index (a padding token) makes its threads loop longer.

#include <cub/device/device_radix_sort.cuh>

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "engine/status_macros.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

int64_t Product(const Shape& s, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= s[i];
  return n;
}


template <typename I>
struct OutOfRange {
  __device__ bool operator()(I v) const {
    return static_cast<int64_t>(v) < lowest || static_cast<int64_t>(v) >= n;
  }
  int64_t lowest, n;
};

// CheckIndices queues the check of every index against [lowest, n),
// reporting as the CPU's CheckIndices; `range_of` says what n is.
template <typename I>
absl::Status CheckIndices(const KernelContext& ctx, const I* idx, const Shape& shape,
                          int64_t lowest, int64_t n, std::string range_of) {
  return cuda::CheckElements(
      ctx, idx, shape.num_elements(), OutOfRange<I>{lowest, n},
      [shape, lowest, n, range_of = std::move(range_of)](const DeviceErrorDetail& d) {
        return absl::StrCat("indices[", FormatIndex(d.position, shape), "] = ", d.int_value,
                            " is out of range [", lowest, ", ", n, ") for ", range_of,
                            " (indices ", shape.ToString(), ")");
      });
}

// ---- gather --------------------------------------------------------------------

template <typename U, typename I>
__global__ void GatherKernelImpl(const U* src, const I* idx, U* y, int64_t total, int64_t k,
                                 int64_t n, int64_t inner) {
  DAGRAD_CUDA_LOOP(e, total) {
    const int64_t r = e / inner, j = e % inner;
    int64_t ix = static_cast<int64_t>(idx[r % k]);
    if (ix < 0) ix += n;  // from_end's; for gather, a read in range of a run that fails
    y[e] = ix >= 0 && ix < n ? src[(r / k * n + ix) * inner + j] : U(0);
  }
}

absl::Status GatherKernel(const KernelContext& ctx) {
  const Shape& p = *ctx.in(0).shape;
  const Shape& idx_shape = *ctx.in(1).shape;
  DAGRAD_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ctx.attrs().GetInt("axis"), p.rank()));
  const int64_t n = p[axis], inner = Product(p, axis + 1, p.rank());
  const int64_t k = idx_shape.num_elements();
  return DispatchIndex(ctx.in(1).dtype, [&](auto index_tag) {
    using I = decltype(index_tag);
    const I* idx = ctx.in(1).as<I>();
    const int64_t lowest = ctx.attrs().GetBool("from_end") ? -n : 0;
    DAGRAD_RETURN_IF_ERROR(CheckIndices(ctx, idx, idx_shape, lowest, n,
                                        absl::StrCat("axis ", axis, " of params ", p.ToString())));
    const int64_t total = ctx.output.num_elements();
    if (total == 0) return absl::OkStatus();
    // Gather moves bytes: one instantiation per element size.
    auto launch = [&](auto tag) {
      using U = decltype(tag);
      GatherKernelImpl<<<GridFor(total), kThreads, 0, CudaContextOf(ctx).stream()>>>(
          static_cast<const U*>(ctx.in(0).data), idx, static_cast<U*>(ctx.output.data), total, k,
          n, inner);
      return CheckLaunch("GatherKernelImpl");
    };
    return DispatchBySize(ctx.output.dtype, launch);
  });
}

// ---- scatter_add ---------------------------------------------------------------

// Sort keys: the index, or n (sorted last, never summed) when it is bad.
template <typename I>
__global__ void SortKeysKernel(const I* idx, int64_t k, int64_t n, uint32_t* keys,
                               int32_t* positions) {
  DAGRAD_CUDA_LOOP(i, k) {
    const int64_t v = static_cast<int64_t>(idx[i]);
    keys[i] = v >= 0 && v < n ? static_cast<uint32_t>(v) : static_cast<uint32_t>(n);
    positions[i] = static_cast<int32_t>(i);
  }
}

// start[r] = the first sorted position whose key is >= r, for r in [0, n].
__global__ void SegmentStartsKernel(const uint32_t* sorted, int64_t k, int64_t n,
                                    int64_t* start) {
  DAGRAD_CUDA_LOOP(r, n + 1) {
    int64_t lo = 0, hi = k;
    while (lo < hi) {
      const int64_t m = (lo + hi) / 2;
      if (static_cast<int64_t>(sorted[m]) < r) {
        lo = m + 1;
      } else {
        hi = m;
      }
    }
    start[r] = lo;
  }
}

// y[o, r, j] = 0 + upd[o, p0, j] + upd[o, p1, j] + ... over the positions
// p0 < p1 < ... whose index is r, summed in double and rounded once, as on
// the CPU (ops/gather.cc).
template <typename T>
__global__ void ScatterAddKernelImpl(const T* upd, const int32_t* positions, const int64_t* start,
                                     T* y, int64_t total, int64_t n, int64_t k, int64_t inner) {
  DAGRAD_CUDA_LOOP(e, total) {
    const int64_t j = e % inner, r = e / inner % n, o = e / (inner * n);
    cuda::Acc<T> acc = 0;
    for (int64_t s = start[r]; s < start[r + 1]; ++s) acc += upd[(o * k + positions[s]) * inner + j];
    y[e] = static_cast<T>(acc);
  }
}

template <typename T, typename I>
absl::Status ScatterAddTyped(const KernelContext& ctx, const I* idx, int64_t k, int64_t n,
                             int64_t inner) {
  CudaContext& cuda = CudaContextOf(ctx);
  cudaStream_t stream = cuda.stream();
  T* y = ctx.output.as<T>();
  const int64_t total = ctx.output.num_elements();
  if (total == 0) return absl::OkStatus();
  if (k == 0) {
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(y, 0, ctx.output.nbytes(), stream));
    return absl::OkStatus();
  }
  if (k > std::numeric_limits<int32_t>::max() || n >= std::numeric_limits<uint32_t>::max()) {
    return absl::UnimplementedError(absl::StrCat(
        "CUDA scatter_add sorts 32-bit keys and positions: ", k, " indices into ", n, " rows"));
  }
  int end_bit = 1;
  while (end_bit < 32 && (uint64_t{1} << end_bit) <= static_cast<uint64_t>(n)) ++end_bit;
  size_t sort_bytes = 0;
  DAGRAD_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), k, 0, end_bit,
      stream));
  // keys, sorted keys, positions, sorted positions, segment starts, CUB's
  // temporary storage: one scratch block, 256-byte aligned pieces.
  auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t keys_bytes = align(k * sizeof(uint32_t));
  const size_t starts_bytes = align((n + 1) * sizeof(int64_t));
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer scratch,
                          cuda.Scratch(4 * keys_bytes + starts_bytes + align(sort_bytes)));
  char* base = scratch.as<char>();
  auto* keys = reinterpret_cast<uint32_t*>(base);
  auto* sorted_keys = reinterpret_cast<uint32_t*>(base + keys_bytes);
  auto* positions = reinterpret_cast<int32_t*>(base + 2 * keys_bytes);
  auto* sorted_positions = reinterpret_cast<int32_t*>(base + 3 * keys_bytes);
  auto* starts = reinterpret_cast<int64_t*>(base + 4 * keys_bytes);
  void* sort_temp = base + 4 * keys_bytes + starts_bytes;

  SortKeysKernel<<<GridFor(k), kThreads, 0, stream>>>(idx, k, n, keys, positions);
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("SortKeysKernel"));
  DAGRAD_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, keys,
                                                              sorted_keys, positions,
                                                              sorted_positions, k, 0, end_bit,
                                                              stream));
  SegmentStartsKernel<<<GridFor(n + 1), kThreads, 0, stream>>>(sorted_keys, k, n, starts);
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("SegmentStartsKernel"));
  ScatterAddKernelImpl<<<GridFor(total), kThreads, 0, stream>>>(
      ctx.in(1).as<T>(), sorted_positions, starts, y, total, n, k, inner);
  return CheckLaunch("ScatterAddKernelImpl");
}

absl::Status ScatterAddKernel(const KernelContext& ctx) {
  const Shape& idx_shape = *ctx.in(0).shape;
  const Shape& out = *ctx.output.shape;
  const int axis = static_cast<int>(ctx.attrs().GetInt("axis"));
  const int64_t n = out[axis], inner = Product(out, axis + 1, out.rank());
  const int64_t k = idx_shape.num_elements();
  return DispatchIndex(ctx.in(0).dtype, [&](auto index_tag) {
    using I = decltype(index_tag);
    const I* idx = ctx.in(0).as<I>();
    DAGRAD_RETURN_IF_ERROR(CheckIndices(
        ctx, idx, idx_shape, 0, n, absl::StrCat("axis ", axis, " of the output ", out.ToString())));
    return DispatchFloat(ctx.output.dtype, [&](auto tag) {
      return ScatterAddTyped<decltype(tag), I>(ctx, idx, k, n, inner);
    });
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(gather, GatherKernel);
DAGRAD_CUDA_KERNEL(scatter_add, ScatterAddKernel);

}  // namespace dagrad
