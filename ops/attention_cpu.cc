// Fused attention's CPU forward kernel and the block machinery it shares
// with the backward (attention_cpu_grad.cc): per block of RowBlockOf
// queries of one head, key block by key block, S = scale · Q Kᵀ (a block
// product), the masks, the online-softmax step (the level's kernel), and
// O += P V (a block product), O rescaled as the running maximum grows.
// Blocks of different (batch, head, rows) are independent: they are spread
// over the threads (ops/cpu/parallel.h), each with its own scratch.

#include "ops/internal/attention_cpu.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/status_macros.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/gemm.h"
#include "ops/cpu/internal/philox_words.h"
#include "ops/cpu/internal/small_gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/dropout.h"
#include "ops/math/dropout_math.h"
#include "ops/op_util.h"
#include "ops/softmax.h"

namespace dagrad {
namespace attention_cpu {
namespace {

// Words writes the dropout words of weights [begin, begin + n) (global
// element numbers) to out.
template <typename T>
void Words(const Problem<T>& p, uint64_t begin, int64_t n, uint32_t* out) {
  PhiloxWords(*p.kernels, {.seed = p.seed, .stream = p.stream, .step = p.step}, begin, n, out);
}

// MaskRow adds row t's bias to z[0, valid) and sets -inf where keep masks.
template <typename T>
void MaskRow(const Problem<T>& p, const RowBlock<T>& w, int64_t t, int64_t s0, int64_t valid,
             T* z) {
  const AttentionLayout& a = p.a;
  if (a.bias.has) {
    const T* br = p.bias + a.bias.At(w.b, w.h, t) + s0 * a.bias.s;
    if (a.bias.s == 0) {
      for (int64_t j = 0; j < valid; ++j) z[j] += br[0];
    } else {
      for (int64_t j = 0; j < valid; ++j) z[j] += br[j];
    }
  }
  if (!a.keep.has) return;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const bool* kr = p.keep + a.keep.At(w.b, w.h, t) + s0 * a.keep.s;
  if (a.keep.s == 0) {
    if (!kr[0]) std::fill(z, z + valid, kNegInf);
    return;
  }
  // Read the bools as bytes: GCC finds no vector type for bool.
  const auto* kb = reinterpret_cast<const unsigned char*>(kr);
  for (int64_t j = 0; j < valid; ++j) z[j] = kb[j] ? z[j] : kNegInf;
}

// SetValid sets each row's count of keys of block [s0, s0 + n) before its
// limit.
template <typename T>
void SetValid(RowBlock<T>& w, int64_t s0, int64_t n) {
  for (int64_t r = 0; r < w.rows; ++r) w.valid[r] = std::clamp<int64_t>(w.limit[r] - s0, 0, n);
}

// Forward writes rows w of the merged output: O = softmax-weighted,
// dropped sum of v, normalised at the end (zeros for a row with no key).
template <typename T>
void Forward(const Problem<T>& p, RowBlock<T>& w, std::vector<T>& acc, T* out) {
  const AttentionLayout& a = p.a;
  const int64_t rows = w.rows, Dh = a.Dh;
  ResetSoftmax(w);
  std::fill(acc.begin(), acc.end(), T(0));
  for (int64_t s0 = 0; s0 < w.max_limit; s0 += p.bc) {
    const int64_t n = std::min(p.bc, w.max_limit - s0);
    Scores(p, w, s0, n, w.s.data());
    SoftmaxStep(*p.kernels, Block(p, w, s0, n, w.s.data(), /*dropout=*/true), w);
    for (int64_t r = 0; r < rows; ++r) {
      if (w.alpha[r] == T(1)) continue;
      for (int64_t d = 0; d < Dh; ++d) acc[r * Dh + d] *= w.alpha[r];
    }
    BlockGemm<T>(*p.kernels, rows, Dh, n, T(1), w.s.data(), p.ld, 1,
                 p.v + a.v.At(w.b, w.h, s0), a.v.row, 1, T(1), acc.data(), Dh);
  }
  for (int64_t r = 0; r < rows; ++r) {
    T* o = out + a.out.At(w.b, w.h, w.t0 + r);
    // l is 0 only for a row with no kept key: zeros, never 0/0.
    const T inv = w.l[r] == 0 ? T(0) : static_cast<T>(1.0 / w.l[r]);
    for (int64_t d = 0; d < Dh; ++d) o[d] = acc[r * Dh + d] * inv;
  }
}

template <typename T>
absl::Status ForwardTyped(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const Problem<T> p, MakeProblem<T>(ctx));
  const AttentionLayout& a = p.a;
  T* out = ctx.output.as<T>();
  if (ctx.output.num_elements() == 0) return absl::OkStatus();
  const int64_t blocks = (a.T + p.rb - 1) / p.rb;
  const int64_t per = HeadsPerTask(a.H, a.B * blocks), groups = (a.H + per - 1) / per;
  ParallelFor(a.B * blocks * groups, 1, [&](int64_t begin, int64_t end) {
    RowBlock<T> w;
    std::vector<T> acc;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t group = task % groups, t0 = task / groups % blocks * p.rb;
      StartRows(p, task / groups / blocks, t0, std::min(p.rb, a.T - t0), w);
      acc.resize(w.rows * a.Dh);
      for (w.h = group * per; w.h < std::min(a.H, (group + 1) * per); ++w.h) {
        Forward(p, w, acc, out);
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::StatusOr<Problem<T>> MakeProblem(const KernelContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(ConfigureCpu());
  Problem<T> p;
  DAGRAD_ASSIGN_OR_RETURN(p.a, AttentionLayoutOf(ctx));
  DAGRAD_ASSIGN_OR_RETURN(p.kernels, ActiveKernels());
  const AttentionLayout& a = p.a;
  p.q = ctx.in(kAttnQ).as<T>();
  p.k = a.packed ? p.q : ctx.in(kAttnK).as<T>();
  p.v = a.packed ? p.q : ctx.in(kAttnV).as<T>();
  if (a.keep.has) p.keep = ctx.in(kAttnKeep).as<bool>();
  if (a.bias.has) p.bias = ctx.in(kAttnBias).as<T>();
  if (a.lens) {
    DAGRAD_ASSIGN_OR_RETURN(p.lens, ReadValidLens(ctx.in(kAttnValidLens), a.S));
  }
  p.rb = RowBlockOf(a.causal);
  p.bc = KeyBlock(a.S);
  p.ld = (p.bc + 15) / 16 * 16;
  p.dropout = ctx.run.training && a.dropout > 0;
  if (!p.dropout) return p;
  const int64_t weights = a.B * a.H * a.T * a.S;
  const int64_t first = DropoutFirstElement(ctx.run.batch_begin, ctx.run.batch_rows, weights);
  if (first < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data-parallel attention dropout needs weights whose elements split into the batch's ",
        ctx.run.batch_rows, " rows, got ", weights, " elements"));
  }
  p.seed = ctx.run.seed;
  p.stream = ctx.node.RandomStream();
  p.step = static_cast<uint32_t>(ctx.run.step);
  p.first = static_cast<uint64_t>(first);
  p.threshold = DropoutThreshold(a.dropout);
  p.drop_scale = T(1) / (T(1) - static_cast<T>(a.dropout));
  return p;
}

int64_t HeadsPerTask(int64_t H, int64_t tasks) {
  const int64_t wanted = 2 * MaxParallelChunks();
  const int64_t groups = std::clamp<int64_t>((wanted + tasks - 1) / std::max<int64_t>(tasks, 1),
                                             1, std::max<int64_t>(H, 1));
  return (H + groups - 1) / groups;
}

template <typename T>
void StartRows(const Problem<T>& p, int64_t b, int64_t t0, int64_t rows, RowBlock<T>& w) {
  w.b = b;
  w.t0 = t0;
  w.rows = rows;
  w.limit.resize(rows);
  w.valid.resize(rows);
  w.s.resize(rows * p.ld);
  w.m.resize(rows);
  w.alpha.resize(rows);
  w.l.resize(rows);
  if (p.dropout) w.bits.resize(rows * p.ld);
  w.max_limit = 0;
  for (int64_t r = 0; r < rows; ++r) {
    w.limit[r] = p.a.Limit(b, t0 + r, p.lens_data());
    w.max_limit = std::max(w.max_limit, w.limit[r]);
  }
}

template <typename T>
void ResetSoftmax(RowBlock<T>& w) {
  std::fill(w.m.begin(), w.m.end(), -std::numeric_limits<T>::infinity());
  std::fill(w.l.begin(), w.l.end(), 0.0);
}

template <typename T>
void SoftmaxStep(const CpuKernels& k, const AttentionBlock<T>& block, RowBlock<T>& w) {
  if constexpr (std::is_same_v<T, float>) {
    k.attention_softmax_f32(block, w.m.data(), w.l.data(), w.alpha.data());
  } else {
    k.attention_softmax_f64(block, w.m.data(), w.l.data(), w.alpha.data());
  }
}

template <typename T>
void Scores(const Problem<T>& p, RowBlock<T>& w, int64_t s0, int64_t n, T* z) {
  const AttentionLayout& a = p.a;
  BlockGemm<T>(*p.kernels, w.rows, n, a.Dh, static_cast<T>(a.scale),
               p.q + a.q.At(w.b, w.h, w.t0), a.q.row, 1, p.k + a.k.At(w.b, w.h, s0), 1, a.k.row,
               T(0), z, p.ld);
  SetValid(w, s0, n);
  for (int64_t r = 0; r < w.rows; ++r) MaskRow(p, w, w.t0 + r, s0, w.valid[r], z + r * p.ld);
}

template <typename T>
AttentionBlock<T> Block(const Problem<T>& p, RowBlock<T>& w, int64_t s0, int64_t n, T* z,
                        bool dropout) {
  SetValid(w, s0, n);
  AttentionBlock<T> block = {w.rows, n, p.ld, z, w.valid.data(), nullptr, p.threshold,
                             p.drop_scale};
  if (!dropout || !p.dropout) return block;
  const uint64_t row0 = p.first + static_cast<uint64_t>(p.a.WeightsRow(w.b, w.h, w.t0) + s0);
  // The rows' words are n of every S: one run over all of them when that
  // draws fewer words than a Philox call (256 words) per row.
  const int64_t run = (w.rows - 1) * p.a.S + n;
  if (run <= w.rows * 4 * kPhiloxBlocks) {
    w.run.resize(run);
    Words(p, row0, run, w.run.data());
    for (int64_t r = 0; r < w.rows; ++r) {
      std::memcpy(w.bits.data() + r * p.ld, w.run.data() + r * p.a.S, n * sizeof(uint32_t));
    }
  } else {
    for (int64_t r = 0; r < w.rows; ++r) {
      Words(p, row0 + static_cast<uint64_t>(r * p.a.S), n, w.bits.data() + r * p.ld);
    }
  }
  block.bits = w.bits.data();
  return block;
}

template <typename T>
void BlockGemm(const CpuKernels& kernels, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t rsa, int64_t csa, const T* b, int64_t rsb, int64_t csb, T beta, T* c,
               int64_t ldc) {
  // Most blocks are small: straight to SmallGemm, without Gemm's checks.
  if (IsSmallGemm(kernels, m, n, k)) {
    SmallGemm<T>(kernels, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, ldc);
    return;
  }
  (void)Gemm<T>(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, ldc, 1, /*one_thread=*/true);
}

#define DAGRAD_ATTENTION_CPU_INSTANTIATE(T)                                                      \
  template absl::StatusOr<Problem<T>> MakeProblem<T>(const KernelContext&);                      \
  template void StartRows<T>(const Problem<T>&, int64_t, int64_t, int64_t, RowBlock<T>&);       \
  template void ResetSoftmax<T>(RowBlock<T>&);                                                     \
  template void SoftmaxStep<T>(const CpuKernels&, const AttentionBlock<T>&, RowBlock<T>&);        \
  template void Scores<T>(const Problem<T>&, RowBlock<T>&, int64_t, int64_t, T*);                 \
  template AttentionBlock<T> Block<T>(const Problem<T>&, RowBlock<T>&, int64_t, int64_t, T*,      \
                                      bool);                                                       \
  template void BlockGemm<T>(const CpuKernels&, int64_t, int64_t, int64_t, T, const T*, int64_t,  \
                             int64_t, const T*, int64_t, int64_t, T, T*, int64_t);
DAGRAD_ATTENTION_CPU_INSTANTIATE(float)
DAGRAD_ATTENTION_CPU_INSTANTIATE(double)
#undef DAGRAD_ATTENTION_CPU_INSTANTIATE

}  // namespace attention_cpu

absl::Status AttentionCpu(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    return attention_cpu::ForwardTyped<decltype(tag)>(ctx);
  });
}

}  // namespace dagrad
