// CUDA kernel of fused attention's forward pass (ops/attention.cc), flash-
// style, and the host side both passes share (the backward is
// attention_grad.cu). One block takes a tile of kTile queries of one head
// and walks the key tiles up to the tile's last key limit: S = Q Kᵀ (a
// tile product), the masked online softmax (a warp per row, a lane per
// key), O += P V; O, the running maximum and sum live in shared memory and
// O is normalised once at the end. Per element the rules are the CPU
// kernel's (attention_tiles.cuh): the same logits, masks, dropout bits;
// sums of exponentials in double as on the CPU, so results agree to float
// rounding. A row with no kept key is zeros.
//
// Products run on tensor cores in TF32 when the device allows TF32
// (CudaOptions::allow_tf32) and the dtype is float32; otherwise (exact
// float32, float64) as fused multiply-adds on the CUDA cores.

#include <type_traits>

#include "ops/cuda/attention_tiles.cuh"
#include "ops/cuda/registry.h"
#include "ops/cuda/valid_lens.cuh"
#include "ops/math/dropout_math.h"
#include "ops/op_util.h"

namespace dagrad {
namespace cuda {

absl::Status CheckSharedMemory(size_t bytes, int64_t Dh, DType dtype) {
  int device = 0, most = 0;
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  DAGRAD_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (bytes <= static_cast<size_t>(most)) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      "fused attention's CUDA kernels hold tiles of ", kTile, " rows of the head size in ",
      "shared memory: ", DTypeName(dtype), " with head size ", Dh, " needs ", bytes,
      " bytes per block, this GPU gives ", most, " (use the composed attention)"));
}

template <typename T>
absl::StatusOr<AttnArgs<T>> MakeAttnArgs(const KernelContext& ctx, CudaBuffer& lens) {
  AttnArgs<T> g;
  DAGRAD_ASSIGN_OR_RETURN(g.a, AttentionLayoutOf(ctx));
  const AttentionLayout& a = g.a;
  g.dp = static_cast<int>((a.Dh + 15) / 16 * 16);
  g.q = ctx.in(kAttnQ).as<T>();
  g.k = a.packed ? g.q : ctx.in(kAttnK).as<T>();
  g.v = a.packed ? g.q : ctx.in(kAttnV).as<T>();
  if (a.keep.has) g.keep = ctx.in(kAttnKeep).as<bool>();
  if (a.bias.has) g.bias = ctx.in(kAttnBias).as<T>();
  if (a.lens) {
    DAGRAD_RETURN_IF_ERROR(PrepareValidLens(ctx, kAttnValidLens, a.S, lens));
    g.lens = lens.as<int64_t>();
  }
  g.step = CudaContextOf(ctx).run_step();
  g.dropout = ctx.run.training && a.dropout > 0;
  if (!g.dropout) return g;
  const int64_t weights = a.B * a.H * a.T * a.S;
  const int64_t first = DropoutFirstElement(ctx.run.batch_begin, ctx.run.batch_rows, weights);
  if (first < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data-parallel attention dropout needs weights whose elements split into the batch's ",
        ctx.run.batch_rows, " rows, got ", weights, " elements"));
  }
  g.seed = ctx.run.seed;
  g.stream = ctx.node.RandomStream();
  g.first = static_cast<uint64_t>(first);
  g.threshold = DropoutThreshold(a.dropout);
  g.drop_scale = T(1) / (T(1) - static_cast<T>(a.dropout));
  return g;
}

template absl::StatusOr<AttnArgs<float>> MakeAttnArgs<float>(const KernelContext&, CudaBuffer&);
template absl::StatusOr<AttnArgs<double>> MakeAttnArgs<double>(const KernelContext&,
                                                               CudaBuffer&);

namespace {

// OnlineSoftmax turns the tile's scores ss (rows x keys [s0, s0 + kTile))
// into the rows' dropped weights, updating each row's maximum m and sum l
// and rescaling its O by exp(m_old - m_new). A warp per row, a lane per key.
template <typename T>
__device__ void OnlineSoftmax(const AttnArgs<T>& g, uint32_t step, int64_t b, int64_t h,
                              int64_t t0, int64_t s0, T* ss, T* os, T* m, Acc<T>* l,
                              const int64_t* limit) {
  const int lane = threadIdx.x % 32;
  for (int r = threadIdx.x / 32; r < kTile; r += kWarps) {
    const int64_t t = t0 + r;
    T* row = ss + r * kTile;
    const T z = t < g.a.T ? Logit(g, row[lane], b, h, t, s0 + lane, limit[r]) : -Infinity<T>();
    const T m_old = m[r];
    const T m_new = MaxOp()(m_old, WarpAll(z, MaxOp()));
    T p = T(0), alpha = T(1);
    if (m_new != -Infinity<T>()) {  // NaN goes on, as on the CPU
      alpha = m_old == -Infinity<T>() ? T(0) : math::Exp(m_old - m_new);
      p = math::Exp(z - m_new);
      // The shuffles wait for every lane, so all have read m[r] before lane 0 writes it.
      const Acc<T> sum = WarpAll(static_cast<Acc<T>>(p), SumOp());
      if (lane == 0) {
        l[r] = l[r] * alpha + sum;
        m[r] = m_new;
      }
      if (t < g.a.T) p *= DropFactor(g, step, b, h, t, s0 + lane);
    }
    row[lane] = p;
    for (int d = lane; d < g.dp; d += 32) os[r * g.dp + d] *= alpha;
  }
}

// WriteOutput writes O / l of the tile's rows into the merged output.
template <typename T>
__device__ void WriteOutput(const AttnArgs<T>& g, int64_t b, int64_t h, int64_t t0, const T* os,
                            const Acc<T>* l) {
  const int64_t Dh = g.a.Dh;
  for (int64_t i = threadIdx.x; i < kTile * Dh; i += blockDim.x) {
    const int64_t r = i / Dh, d = i % Dh, t = t0 + r;
    if (t >= g.a.T) continue;
    // l is 0 only for a row with no kept key: zeros, never 0/0.
    const T inv = l[r] == 0 ? T(0) : static_cast<T>(1.0 / l[r]);
    g.out[g.a.out.At(b, h, t) + d] = os[r * g.dp + d] * inv;
  }
}

template <typename T, bool kTf32>
__global__ void __launch_bounds__(kBlockThreads) AttentionForwardKernel(AttnArgs<T> g) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int dp = g.dp;
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = qs + kTile * dp;
  T* vs = ks + kTile * dp;
  T* os = vs + kTile * dp;
  T* ss = os + kTile * dp;
  T* m = ss + kTile * kTile;
  Acc<T>* l = reinterpret_cast<Acc<T>*>(m + kTile);
  int64_t* limit = reinterpret_cast<int64_t*>(l + kTile);
  const AttentionLayout& a = g.a;
  const uint32_t step = RunStep(g);
  const int64_t tiles = (a.T + kTile - 1) / kTile;
  for (int64_t task = blockIdx.x; task < a.B * a.H * tiles; task += gridDim.x) {
    const int64_t t0 = task % tiles * kTile, h = task / tiles % a.H, b = task / tiles / a.H;
    LoadTile(qs, dp, g.q, a.q, b, h, t0, a.T, a.Dh);
    for (int i = threadIdx.x; i < kTile * dp; i += blockDim.x) os[i] = T(0);
    if (threadIdx.x < kTile) {
      m[threadIdx.x] = -Infinity<T>();
      l[threadIdx.x] = 0;
    }
    const int64_t keys = TileLimits(g, b, t0, limit, limit + kTile);  // synchronises
    for (int64_t s0 = 0; s0 < keys; s0 += kTile) {
      LoadTile(ks, dp, g.k, a.k, b, h, s0, a.S, a.Dh);
      LoadTile(vs, dp, g.v, a.v, b, h, s0, a.S, a.Dh);
      __syncthreads();
      Product<false, true, kTf32>(ss, kTile, qs, dp, ks, dp, kTile, kTile, dp, false);
      __syncthreads();
      OnlineSoftmax(g, step, b, h, t0, s0, ss, os, m, l, limit);
      __syncthreads();
      Product<false, false, kTf32>(os, dp, ss, kTile, vs, dp, kTile, dp, kTile, true);
      __syncthreads();
    }
    WriteOutput(g, b, h, t0, os, l);
    __syncthreads();  // the next task overwrites the tiles
  }
}

template <typename T, bool kTf32>
absl::Status LaunchForward(const KernelContext& ctx, const AttnArgs<T>& g) {
  const size_t bytes = SharedBytes<T>(4, 1, 1, g.dp);
  auto kernel = AttentionForwardKernel<T, kTf32>;
  DAGRAD_RETURN_IF_ERROR(PrepareLaunch(ctx, kernel, bytes, g.a.Dh));
  const int64_t tasks = g.a.B * g.a.H * ((g.a.T + kTile - 1) / kTile);
  kernel<<<GridFor(tasks, 1), kBlockThreads, bytes, CudaContextOf(ctx).stream()>>>(g);
  return CheckLaunch("AttentionForwardKernel");
}

absl::Status AttentionCuda(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    CudaBuffer lens;  // checks the valid lengths even for an empty output, as the CPU
    DAGRAD_ASSIGN_OR_RETURN(AttnArgs<T> g, MakeAttnArgs<T>(ctx, lens));
    if (ctx.output.num_elements() == 0) return absl::OkStatus();
    g.out = ctx.output.as<T>();
    if (std::is_same_v<T, float> && CudaContextOf(ctx).allow_tf32()) {
      return LaunchForward<T, true>(ctx, g);
    }
    return LaunchForward<T, false>(ctx, g);
  });
}

}  // namespace
}  // namespace cuda

DAGRAD_CUDA_KERNEL(attention, cuda::AttentionCuda);
DAGRAD_CUDA_KERNEL(attention_grad, AttentionGradCuda);

}  // namespace dagrad
