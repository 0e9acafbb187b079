// ops/cuda/attention_tiles.cuh
//
// What fused attention's CUDA kernels (attention.cu: the forward;
// attention_grad.cu: the backward) share: tiles of kTile queries or keys
// of one head in shared memory, the products of tiles (tensor cores in
// TF32 when the device allows TF32, else plain fused multiply-adds), and
// the per-element rules — the masked logit, the dropout factor — that are
// the CPU kernel's (ops/attention_cpu.cc), element for element. Included
// by .cu files only.
//
// A block of kBlockThreads threads takes one tile task at a time (a
// grid-stride loop over the tasks), every thread through the same
// __syncthreads, so tasks never diverge inside a block.

#ifndef DAGRAD_OPS_CUDA_ATTENTION_TILES_CUH_
#define DAGRAD_OPS_CUDA_ATTENTION_TILES_CUH_

#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "engine/philox.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/internal/attention_layout.h"

namespace dagrad {

// AttentionGradCuda is attention_grad's CUDA kernel (attention_grad.cu).
absl::Status AttentionGradCuda(const KernelContext& ctx);

namespace cuda {

inline constexpr int kTile = 32;  // queries or keys per tile: one per lane of a warp
inline constexpr int kBlockThreads = 128;
inline constexpr int kWarps = kBlockThreads / 32;

// AttnArgs is what every fused attention kernel reads.
template <typename T>
struct AttnArgs {
  AttentionLayout a;
  int dp = 0;  // the head size padded to 16: a tile row's length in shared memory
  const T* q = nullptr;  // inputs 0-2 (packed: all three input 0)
  const T* k = nullptr;
  const T* v = nullptr;
  const bool* keep = nullptr;
  const T* bias = nullptr;
  const int64_t* lens = nullptr;  // int64 copies, null when absent
  // Dropout (ops/dropout.h); the step is read from device memory so that a
  // recorded run replays with its own (engine/cuda/cuda_context.h).
  bool dropout = false;
  uint64_t seed = 0;
  uint32_t stream = 0;
  const uint64_t* step = nullptr;
  uint64_t first = 0;
  uint32_t threshold = 0;
  T drop_scale = T(1);
  T* out = nullptr;          // forward: the merged output
  const T* o = nullptr;      // backward: the forward's output
  const T* dout = nullptr;   // and its gradient
  T* grad = nullptr;         // attention_grad's flat output
  T* row_max = nullptr;      // backward scratch (B, H, T): each row's max m,
  T* log_l = nullptr;        // log of its sum of exp(z - m),
  T* dsum = nullptr;         // and D = rowsum(dO ∘ O)
};

// LoadTile copies rows [l0, l0 + kTile) of head h of batch b (of L) into
// dst (kTile x dp), zeros past L and past Dh.
template <typename T>
__device__ void LoadTile(T* dst, int dp, const T* src, const HeadsOperand& op, int64_t b,
                         int64_t h, int64_t l0, int64_t L, int64_t Dh) {
  for (int i = threadIdx.x; i < kTile * dp; i += blockDim.x) {
    const int64_t l = l0 + i / dp, c = i % dp;
    dst[i] = l < L && c < Dh ? src[op.At(b, h, l) + c] : T(0);
  }
}

// Logit is the CPU's masked logit of query t and key s: scale * q·k + bias,
// -inf where a keep mask masks or s is at or past the row's limit.
template <typename T>
__device__ T Logit(const AttnArgs<T>& g, T qk, int64_t b, int64_t h, int64_t t, int64_t s,
                   int64_t limit) {
  const AttentionLayout& a = g.a;
  if (s >= limit) return -Infinity<T>();
  T z = static_cast<T>(a.scale) * qk;
  if (a.bias.has) z += g.bias[a.bias.At(b, h, t) + s * a.bias.s];
  if (a.keep.has && !g.keep[a.keep.At(b, h, t) + s * a.keep.s]) z = -Infinity<T>();
  return z;
}

// DropFactor is weight (b, h, t, s)'s dropout factor: drop_scale when kept,
// 0 when dropped, 1 without dropout (the bits of Dropout's element
// ((b H + h) T + t) S + s on the node's stream).
template <typename T>
__device__ T DropFactor(const AttnArgs<T>& g, uint32_t step, int64_t b, int64_t h, int64_t t,
                        int64_t s) {
  if (!g.dropout) return T(1);
  const RandomStream rs{g.seed, g.stream, step};
  const uint64_t index = g.first + static_cast<uint64_t>(g.a.WeightsRow(b, h, t) + s);
  return (rs.Bits(index) >> 8) >= g.threshold ? g.drop_scale : T(0);
}

// RunStep is the run's dropout step (0 without dropout: nothing to read).
template <typename T>
__device__ uint32_t RunStep(const AttnArgs<T>& g) {
  return g.dropout ? static_cast<uint32_t>(*g.step) : 0u;
}

// WarpAll combines the 32 lanes' values and returns the result to each.
template <typename T, typename Op>
__device__ T WarpAll(T v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

// ProductFma computes C (m x n) = A·B, or C += A·B when `accumulate`, for
// tiles in shared memory: A(i, p) at a[i * lda + p] (a[p * lda + i] when
// TA), B(p, j) at b[p * ldb + j] (b[j * ldb + p] when TB), C row-major.
template <bool TA, bool TB, typename T>
__device__ void ProductFma(T* c, int ldc, const T* a, int lda, const T* b, int ldb, int m, int n,
                           int k, bool accumulate) {
  for (int idx = threadIdx.x; idx < m * n; idx += blockDim.x) {
    const int i = idx / n, j = idx % n;
    T acc = accumulate ? c[i * ldc + j] : T(0);
    for (int p = 0; p < k; ++p) {
      acc = fma(TA ? a[p * lda + i] : a[i * lda + p], TB ? b[j * ldb + p] : b[p * ldb + j], acc);
    }
    c[i * ldc + j] = acc;
  }
}

// ProductTf32 is ProductFma on tensor cores, inputs rounded to TF32 and
// sums in float: m, n multiples of 16, k of 8, the leading dimensions
// multiples of 8 and the tiles 32-byte aligned (kTile and dp are).
template <bool TA, bool TB>
__device__ void ProductTf32(float* c, int ldc, const float* a, int lda, const float* b, int ldb,
                            int m, int n, int k, bool accumulate) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  namespace wmma = nvcuda::wmma;
  using LayoutA = std::conditional_t<TA, wmma::col_major, wmma::row_major>;
  using LayoutB = std::conditional_t<TB, wmma::col_major, wmma::row_major>;
  const int tiles_n = n / 16;
  for (int tile = threadIdx.x / 32; tile < (m / 16) * tiles_n; tile += blockDim.x / 32) {
    const int ti = tile / tiles_n * 16, tj = tile % tiles_n * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    if (accumulate) {
      wmma::load_matrix_sync(acc, c + ti * ldc + tj, ldc, wmma::mem_row_major);
    } else {
      wmma::fill_fragment(acc, 0.0f);
    }
    for (int p = 0; p < k; p += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, LayoutA> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, LayoutB> fb;
      wmma::load_matrix_sync(fa, TA ? a + p * lda + ti : a + ti * lda + p, lda);
      wmma::load_matrix_sync(fb, TB ? b + tj * ldb + p : b + p * ldb + tj, ldb);
      for (int e = 0; e < fa.num_elements; ++e) fa.x[e] = wmma::__float_to_tf32(fa.x[e]);
      for (int e = 0; e < fb.num_elements; ++e) fb.x[e] = wmma::__float_to_tf32(fb.x[e]);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + ti * ldc + tj, acc, ldc, wmma::mem_row_major);
  }
#else
  ProductFma<TA, TB>(c, ldc, a, lda, b, ldb, m, n, k, accumulate);
#endif
}

// Product is ProductTf32 for float when kTf32, else ProductFma. Every
// thread of the block calls it; the caller synchronises after.
template <bool TA, bool TB, bool kTf32, typename T>
__device__ void Product(T* c, int ldc, const T* a, int lda, const T* b, int ldb, int m, int n,
                        int k, bool accumulate) {
  if constexpr (kTf32 && std::is_same_v<T, float>) {
    ProductTf32<TA, TB>(c, ldc, a, lda, b, ldb, m, n, k, accumulate);
  } else {
    ProductFma<TA, TB>(c, ldc, a, lda, b, ldb, m, n, k, accumulate);
  }
}

// TileLimits sets limit[r] for rows [t0, t0 + kTile) of batch b (0 past T)
// and returns the tile's largest to every thread. Contains __syncthreads.
template <typename T>
__device__ int64_t TileLimits(const AttnArgs<T>& g, int64_t b, int64_t t0, int64_t* limit,
                              int64_t* tile_limit) {
  // The previous call's *tile_limit may still be being read: KeyGradsKernel
  // skips a query tile with no barrier between this call and the last, and
  // a warp reading the new limit for the old tile would take the other
  // branch, so the block's __syncthreads would no longer match.
  __syncthreads();
  if (threadIdx.x < 32) {
    const int64_t t = t0 + threadIdx.x;
    const int64_t own = t < g.a.T ? g.a.Limit(b, t, g.lens) : 0;
    limit[threadIdx.x] = own;
    const int64_t most = WarpAll(own, [](int64_t x, int64_t y) { return x > y ? x : y; });
    if (threadIdx.x == 0) *tile_limit = most;
  }
  __syncthreads();
  return *tile_limit;
}

// CheckSharedMemory returns Unimplemented when `bytes` of shared memory per
// block exceed what this GPU gives one block, naming the head size.
absl::Status CheckSharedMemory(size_t bytes, int64_t Dh, DType dtype);

// SharedBytes is the shared memory of a kernel with `head_tiles` tiles of
// the head (kTile x dp), `score_tiles` tiles of scores (kTile x kTile),
// `stats` pairs of row statistics (a maximum in T, a sum in Acc<T>) and
// kTile + 1 int64 key limits, laid out in that order.
template <typename T>
size_t SharedBytes(int head_tiles, int score_tiles, int stats, int dp) {
  return (head_tiles * kTile * dp + score_tiles * kTile * kTile + stats * kTile) * sizeof(T) +
         stats * kTile * sizeof(Acc<T>) + (kTile + 1) * sizeof(int64_t);
}

// PrepareLaunch checks that `kernel`'s `bytes` of shared memory fit
// (CheckSharedMemory) and lets it take them: above 48 KiB a block must ask.
template <typename Kernel>
absl::Status PrepareLaunch(const KernelContext& ctx, Kernel kernel, size_t bytes, int64_t Dh) {
  DAGRAD_RETURN_IF_ERROR(CheckSharedMemory(bytes, Dh, ctx.output.dtype));
  if (bytes <= 48 * 1024) return absl::OkStatus();
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return absl::OkStatus();
}

// MakeAttnArgs reads a node's layout, inputs, valid lengths (copied to
// `lens`, checked as the CPU checks them) and dropout settings.
template <typename T>
absl::StatusOr<AttnArgs<T>> MakeAttnArgs(const KernelContext& ctx, CudaBuffer& lens);

}  // namespace cuda
}  // namespace dagrad

#endif  // DAGRAD_OPS_CUDA_ATTENTION_TILES_CUH_
