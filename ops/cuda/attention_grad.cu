// CUDA kernels of fused attention's backward pass (attention_grad,
// ops/attention.cc), flash-style and deterministic: no atomics, so every
// gradient element is written by one block that sums in a fixed order.
//   1. RowStats, per tile of queries: each row's max m and log l, its
//      logsumexp in two parts (the forward kept none: an op has one
//      output, engine/op.h), and D = rowsum(dO ∘ O);
//   2. KeyGrads, per tile of keys: over every query tile, P = exp((z - m)
//      - log l) (as precise as the forward's exp(z - m) / l, where one
//      rounded logsumexp would be |m| ulps off),
//      dP = dO·Vᵀ, dS = P ∘ (k dP - D) (k the dropout factor), and
//      dV += (k P)ᵀ dO, dK += scale · dSᵀ Q, kept in shared memory;
//   3. QueryGrads, per tile of queries: the same P and dS again, dQ +=
//      scale · dS K, and dbias = dS where the bias takes a gradient.
// Recomputing P in both 2 and 3 is what makes both race-free. The output
// is cleared first, for the dbias entries of keys no query sees.

#include <type_traits>

#include "ops/cuda/attention_tiles.cuh"
#include "ops/op_util.h"

namespace dagrad {
namespace cuda {
namespace {

// RowIndex is row t of head h of batch b in the (B, H, T) scratch.
__device__ inline int64_t RowIndex(const AttentionLayout& a, int64_t b, int64_t h, int64_t t) {
  return (b * a.H + h) * a.T + t;
}

// StatsStep folds the tile's scores into each row's running maximum and
// sum; a warp per row, a lane per key.
template <typename T>
__device__ void StatsStep(const AttnArgs<T>& g, int64_t b, int64_t h, int64_t t0, int64_t s0,
                          const T* ss, T* m, Acc<T>* l, const int64_t* limit) {
  const int lane = threadIdx.x % 32;
  for (int r = threadIdx.x / 32; r < kTile; r += kWarps) {
    const int64_t t = t0 + r;
    const T z = t < g.a.T ? Logit(g, ss[r * kTile + lane], b, h, t, s0 + lane, limit[r])
                          : -Infinity<T>();
    const T m_old = m[r];
    const T m_new = MaxOp()(m_old, WarpAll(z, MaxOp()));
    if (m_new == -Infinity<T>()) continue;  // uniform in the warp
    const Acc<T> sum = WarpAll(static_cast<Acc<T>>(math::Exp(z - m_new)), SumOp());
    if (lane == 0) {
      l[r] = l[r] * (m_old == -Infinity<T>() ? T(0) : math::Exp(m_old - m_new)) + sum;
      m[r] = m_new;
    }
  }
}

// WriteStats writes each row's max and log l (0 and +inf for a row with no
// kept key, so that its P is 0) and D.
template <typename T>
__device__ void WriteStats(const AttnArgs<T>& g, int64_t b, int64_t h, int64_t t0, const T* m,
                           const Acc<T>* l) {
  const int lane = threadIdx.x % 32;
  for (int r = threadIdx.x / 32; r < kTile; r += kWarps) {
    const int64_t t = t0 + r;
    if (t >= g.a.T) continue;
    const int64_t at = g.a.out.At(b, h, t);
    Acc<T> dot = 0;
    for (int64_t d = lane; d < g.a.Dh; d += 32) dot += Acc<T>(g.dout[at + d]) * g.o[at + d];
    dot = WarpAll(dot, SumOp());
    if (lane != 0) continue;
    const int64_t row = RowIndex(g.a, b, h, t);
    g.row_max[row] = l[r] == 0 ? T(0) : m[r];
    g.log_l[row] = l[r] == 0 ? Infinity<T>() : static_cast<T>(math::Log(l[r]));
    g.dsum[row] = static_cast<T>(dot);
  }
}

template <typename T, bool kTf32>
__global__ void __launch_bounds__(kBlockThreads) RowStatsKernel(AttnArgs<T> g) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int dp = g.dp;
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = qs + kTile * dp;
  T* ss = ks + kTile * dp;
  T* m = ss + kTile * kTile;
  Acc<T>* l = reinterpret_cast<Acc<T>*>(m + kTile);
  int64_t* limit = reinterpret_cast<int64_t*>(l + kTile);
  const AttentionLayout& a = g.a;
  const int64_t tiles = (a.T + kTile - 1) / kTile;
  for (int64_t task = blockIdx.x; task < a.B * a.H * tiles; task += gridDim.x) {
    const int64_t t0 = task % tiles * kTile, h = task / tiles % a.H, b = task / tiles / a.H;
    LoadTile(qs, dp, g.q, a.q, b, h, t0, a.T, a.Dh);
    if (threadIdx.x < kTile) {
      m[threadIdx.x] = -Infinity<T>();
      l[threadIdx.x] = 0;
    }
    const int64_t keys = TileLimits(g, b, t0, limit, limit + kTile);  // synchronises
    for (int64_t s0 = 0; s0 < keys; s0 += kTile) {
      LoadTile(ks, dp, g.k, a.k, b, h, s0, a.S, a.Dh);
      __syncthreads();
      Product<false, true, kTf32>(ss, kTile, qs, dp, ks, dp, kTile, kTile, dp, false);
      __syncthreads();
      StatsStep(g, b, h, t0, s0, ss, m, l, limit);
      __syncthreads();
    }
    WriteStats(g, b, h, t0, m, l);
    __syncthreads();
  }
}

// GradElements turns a tile's scores ss (rows [t0, +kTile) x keys [s0,
// +kTile)) into the dropped weights k·P and its dP dps into scale · dS,
// writing dS to dbias when `dbias` and the bias takes a gradient.
template <typename T>
__device__ void GradElements(const AttnArgs<T>& g, uint32_t step, int64_t b, int64_t h,
                             int64_t t0, int64_t s0, T* ss, T* dps, bool dbias) {
  const AttentionLayout& a = g.a;
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x) {
    const int64_t t = t0 + i / kTile, s = s0 + i % kTile;
    T pd = T(0), ds = T(0);
    if (t < a.T && s < a.S) {
      const int64_t row = RowIndex(a, b, h, t);
      const T z = Logit(g, ss[i], b, h, t, s, a.Limit(b, t, g.lens));
      const T p = math::Exp((z - g.row_max[row]) - g.log_l[row]);
      const T keep = DropFactor(g, step, b, h, t, s);
      pd = p * keep;
      ds = p * (dps[i] * keep - g.dsum[row]);
      if (dbias && a.bias_grad) g.grad[a.dbias_offset + a.WeightsRow(b, h, t) + s] = ds;
    }
    ss[i] = pd;
    dps[i] = static_cast<T>(a.scale) * ds;
  }
}

// ScoreTiles computes S = Q Kᵀ into ss and dP = dO Vᵀ into dps, then the
// gradient elements. Contains __syncthreads.
template <typename T, bool kTf32>
__device__ void ScoreTiles(const AttnArgs<T>& g, uint32_t step, int64_t b, int64_t h,
                           int64_t t0, int64_t s0, const T* qs, const T* dos, const T* ks,
                           const T* vs, T* ss, T* dps, bool dbias) {
  const int dp = g.dp;
  Product<false, true, kTf32>(ss, kTile, qs, dp, ks, dp, kTile, kTile, dp, false);
  Product<false, true, kTf32>(dps, kTile, dos, dp, vs, dp, kTile, kTile, dp, false);
  __syncthreads();
  GradElements(g, step, b, h, t0, s0, ss, dps, dbias);
  __syncthreads();
}

// StoreRows writes rows [l0, +kTile) (of L) of a tile into head h of batch
// b of an operand's gradient.
template <typename T>
__device__ void StoreRows(T* dst, const HeadsOperand& op, const T* tile, int dp, int64_t b,
                          int64_t h, int64_t l0, int64_t L, int64_t Dh) {
  for (int64_t i = threadIdx.x; i < kTile * Dh; i += blockDim.x) {
    const int64_t r = i / Dh, d = i % Dh;
    if (l0 + r < L) dst[op.At(b, h, l0 + r) + d] = tile[r * dp + d];
  }
}

template <typename T, bool kTf32>
__global__ void __launch_bounds__(kBlockThreads) KeyGradsKernel(AttnArgs<T> g) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int dp = g.dp, tile = kTile * dp;
  T* ks = reinterpret_cast<T*>(smem);
  T *vs = ks + tile, *dks = vs + tile, *dvs = dks + tile, *qs = dvs + tile, *dos = qs + tile;
  T *ss = dos + tile, *dps = ss + kTile * kTile;
  int64_t* limit = reinterpret_cast<int64_t*>(dps + kTile * kTile);
  const AttentionLayout& a = g.a;
  const uint32_t step = RunStep(g);
  const int64_t tiles = (a.S + kTile - 1) / kTile;
  for (int64_t task = blockIdx.x; task < a.B * a.H * tiles; task += gridDim.x) {
    const int64_t s0 = task % tiles * kTile, h = task / tiles % a.H, b = task / tiles / a.H;
    LoadTile(ks, dp, g.k, a.k, b, h, s0, a.S, a.Dh);
    LoadTile(vs, dp, g.v, a.v, b, h, s0, a.S, a.Dh);
    for (int i = threadIdx.x; i < tile; i += blockDim.x) dks[i] = dvs[i] = T(0);
    for (int64_t t0 = 0; t0 < a.T; t0 += kTile) {
      // Query tiles whose rows all stop before s0 see none of these keys.
      if (TileLimits(g, b, t0, limit, limit + kTile) <= s0) continue;  // synchronises
      LoadTile(qs, dp, g.q, a.q, b, h, t0, a.T, a.Dh);
      LoadTile(dos, dp, g.dout, a.out, b, h, t0, a.T, a.Dh);
      __syncthreads();
      ScoreTiles<T, kTf32>(g, step, b, h, t0, s0, qs, dos, ks, vs, ss, dps, false);
      Product<true, false, kTf32>(dvs, dp, ss, kTile, dos, dp, kTile, dp, kTile, true);
      Product<true, false, kTf32>(dks, dp, dps, kTile, qs, dp, kTile, dp, kTile, true);
      __syncthreads();
    }
    StoreRows(g.grad + a.dk_offset, a.k, dks, dp, b, h, s0, a.S, a.Dh);
    StoreRows(g.grad + a.dv_offset, a.v, dvs, dp, b, h, s0, a.S, a.Dh);
    __syncthreads();
  }
}

template <typename T, bool kTf32>
__global__ void __launch_bounds__(kBlockThreads) QueryGradsKernel(AttnArgs<T> g) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int dp = g.dp, tile = kTile * dp;
  T* qs = reinterpret_cast<T*>(smem);
  T *dos = qs + tile, *dqs = dos + tile, *ks = dqs + tile, *vs = ks + tile;
  T *ss = vs + tile, *dps = ss + kTile * kTile;
  int64_t* limit = reinterpret_cast<int64_t*>(dps + kTile * kTile);
  const AttentionLayout& a = g.a;
  const uint32_t step = RunStep(g);
  const int64_t tiles = (a.T + kTile - 1) / kTile;
  for (int64_t task = blockIdx.x; task < a.B * a.H * tiles; task += gridDim.x) {
    const int64_t t0 = task % tiles * kTile, h = task / tiles % a.H, b = task / tiles / a.H;
    LoadTile(qs, dp, g.q, a.q, b, h, t0, a.T, a.Dh);
    LoadTile(dos, dp, g.dout, a.out, b, h, t0, a.T, a.Dh);
    for (int i = threadIdx.x; i < tile; i += blockDim.x) dqs[i] = T(0);
    const int64_t keys = TileLimits(g, b, t0, limit, limit + kTile);  // synchronises
    for (int64_t s0 = 0; s0 < keys; s0 += kTile) {
      LoadTile(ks, dp, g.k, a.k, b, h, s0, a.S, a.Dh);
      LoadTile(vs, dp, g.v, a.v, b, h, s0, a.S, a.Dh);
      __syncthreads();
      ScoreTiles<T, kTf32>(g, step, b, h, t0, s0, qs, dos, ks, vs, ss, dps, true);
      Product<false, false, kTf32>(dqs, dp, dps, kTile, ks, dp, kTile, dp, kTile, true);
      __syncthreads();
    }
    StoreRows(g.grad, a.q, dqs, dp, b, h, t0, a.T, a.Dh);
    __syncthreads();
  }
}


template <typename T, bool kTf32>
absl::Status LaunchBackward(const KernelContext& ctx, AttnArgs<T> g) {
  const AttentionLayout& a = g.a;
  CudaContext& cuda = CudaContextOf(ctx);
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer stats, cuda.Scratch(3 * a.B * a.H * a.T * sizeof(T)));
  g.row_max = stats.as<T>();
  g.log_l = g.row_max + a.B * a.H * a.T;
  g.dsum = g.log_l + a.B * a.H * a.T;
  const int64_t row_tasks = a.B * a.H * ((a.T + kTile - 1) / kTile);
  const int64_t key_tasks = a.B * a.H * ((a.S + kTile - 1) / kTile);
  const size_t stats_bytes = SharedBytes<T>(2, 1, 1, g.dp);
  const size_t key_bytes = SharedBytes<T>(6, 2, 0, g.dp);
  const size_t query_bytes = SharedBytes<T>(5, 2, 0, g.dp);
  DAGRAD_RETURN_IF_ERROR(PrepareLaunch(ctx, RowStatsKernel<T, kTf32>, stats_bytes, a.Dh));
  DAGRAD_RETURN_IF_ERROR(PrepareLaunch(ctx, KeyGradsKernel<T, kTf32>, key_bytes, a.Dh));
  DAGRAD_RETURN_IF_ERROR(PrepareLaunch(ctx, QueryGradsKernel<T, kTf32>, query_bytes, a.Dh));
  const cudaStream_t stream = cuda.stream();
  RowStatsKernel<T, kTf32><<<GridFor(row_tasks, 1), kBlockThreads, stats_bytes, stream>>>(g);
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("RowStatsKernel"));
  KeyGradsKernel<T, kTf32><<<GridFor(key_tasks, 1), kBlockThreads, key_bytes, stream>>>(g);
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("KeyGradsKernel"));
  QueryGradsKernel<T, kTf32><<<GridFor(row_tasks, 1), kBlockThreads, query_bytes, stream>>>(g);
  return CheckLaunch("QueryGradsKernel");
}

}  // namespace
}  // namespace cuda

absl::Status AttentionGradCuda(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    CudaBuffer lens;  // checks the valid lengths even for an empty output, as the CPU
    DAGRAD_ASSIGN_OR_RETURN(cuda::AttnArgs<T> g, cuda::MakeAttnArgs<T>(ctx, lens));
    if (ctx.output.num_elements() == 0) return absl::OkStatus();
    g.o = ctx.in(kAttnOut).as<T>();
    g.dout = ctx.in(kAttnDOut).as<T>();
    g.grad = ctx.output.as<T>();
    CudaContext& cuda = CudaContextOf(ctx);
    DAGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(g.grad, 0, ctx.output.nbytes(), cuda.stream()));
    if (g.a.Dh == 0 || g.a.T == 0) return absl::OkStatus();  // every gradient is 0
    if (std::is_same_v<T, float> && cuda.allow_tf32()) {
      return cuda::LaunchBackward<T, true>(ctx, g);
    }
    return cuda::LaunchBackward<T, false>(ctx, g);
  });
}

}  // namespace dagrad
