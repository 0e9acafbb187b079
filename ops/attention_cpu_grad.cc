// Fused attention's CPU backward kernel (attention_grad): flash-style, per
// (batch, head), block of RowBlockOf queries after block:
//   pass 1: each row's max m and log l (l the sum of exp(z - m): its
//           logsumexp in two parts), recomputed from the scores (the forward
//           kept no statistics: an op has one output, engine/op.h), or,
//           when the keys are one block, exp(z - m) and 1 / l themselves
//           (then D comes from the row: sum P ∘ k dP, as softmax's backward
//           takes it, instead of from O);
//   pass 2: per key block, P = exp((z - m) - log l), dP = dO·Vᵀ, and with the
//           dropout factor k (0 or 1 / (1 - p)) and D = rowsum(dO ∘ O),
//           dS = P ∘ (k dP - D) (the level's kernel); then
//           dV += (k P)ᵀ dO,  dQ += scale · dS K,  dK += scale · dSᵀ Q,
//           and dbias = dS where the bias takes a gradient.
// A row with no kept key has m = 0 and log l = +inf, so P = 0 and every
// gradient 0.
// A (batch, group of heads) is one task, its row blocks in order, so dK and
// dV sum the blocks in a fixed order: no atomics, the same bits on every
// run.
// Pass 1 keeps the scores of every key block when they fit kPanelElements,
// so pass 2 need not compute q·kᵀ again.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/status_macros.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/parallel.h"
#include "ops/internal/attention_cpu.h"
#include "ops/op_util.h"

namespace dagrad {
namespace attention_cpu {
namespace {

constexpr int64_t kPanelElements = int64_t{1} << 17;

// GradStep runs the level's attention_grad (cpu_kernels.h says what stat,
// probs and a null d mean).
template <typename T>
void GradStep(const CpuKernels& k, const AttentionBlock<T>& b, const T* m, const T* stat,
              bool probs, const T* d, T* dp) {
  if constexpr (std::is_same_v<T, float>) {
    k.attention_grad_f32(b, m, stat, probs, d, dp);
  } else {
    k.attention_grad_f64(b, m, stat, probs, d, dp);
  }
}

// Grads is where the gradients go, and the tensors only the backward reads.
template <typename T>
struct Grads {
  const T* o;     // the forward's output (B, T, E)
  const T* dout;  // its gradient
  T* grad;        // attention_grad's output (AttentionLayout says where what is)
};

// HeadScratch is one task's buffers besides the row block's: each row's
// statistics (its max m and log l, or 1 / l when `probs`: pass 1 left
// exp(z - m) in the panel), D (unused when probs) and dP.
template <typename T>
struct HeadScratch {
  std::vector<T> m, stat, d, dp;
  bool probs = false;
};

// Panel returns where key block j's scores live: in the panel when pass 1
// keeps them, else in the row block's one-block buffer.
template <typename T>
T* Panel(const Problem<T>& p, RowBlock<T>& w, int64_t j) {
  return w.panel.empty() ? w.s.data() : w.panel.data() + j * w.rows * p.ld;
}

// RowLogSumExp sets, for the rows of w, max[r] = m and log_l[r] = log(sum
// exp(z - m)) over the kept keys (their logsumexp is the sum), and 0 and
// +inf for a row with none. Kept apart, P = exp((z - m) - log l) is as
// precise as the forward's: a logsumexp rounded to T would be |m| ulps off.
template <typename T>
void RowLogSumExp(const Problem<T>& p, RowBlock<T>& w, T* max, T* log_l) {
  std::vector<T>& m = w.m;
  std::vector<double>& l = w.l;
  ResetSoftmax(w);
  for (int64_t s0 = 0, j = 0; s0 < w.max_limit; s0 += p.bc, ++j) {
    const int64_t n = std::min(p.bc, w.max_limit - s0);
    T* z = Panel(p, w, j);
    Scores(p, w, s0, n, z);
    for (int64_t r = 0; r < w.rows; ++r) {
      const T* zr = z + r * p.ld;
      const T m_new = PropagatingMax(m[r], RowMax(zr, w.valid[r]));
      if (m_new == -std::numeric_limits<T>::infinity()) continue;
      const double sum = ExpShiftSum<T>(*p.kernels, zr, nullptr, w.valid[r], m_new);
      l[r] = l[r] * std::exp(static_cast<double>(m[r]) - m_new) + sum;
      m[r] = m_new;
    }
  }
  for (int64_t r = 0; r < w.rows; ++r) {
    max[r] = l[r] == 0 ? T(0) : m[r];
    log_l[r] = l[r] == 0 ? std::numeric_limits<T>::infinity() : static_cast<T>(std::log(l[r]));
  }
}

// Weights leaves exp(z - m) of the one key block [0, n) in the panel and
// 1 / l in inv_l: P = softmax(z) is their product.
template <typename T>
void Weights(const Problem<T>& p, RowBlock<T>& w, int64_t n, T* inv_l) {
  T* z = Panel(p, w, 0);
  Scores(p, w, 0, n, z);
  ResetSoftmax(w);
  SoftmaxStep(*p.kernels, Block(p, w, 0, n, z, /*dropout=*/false), w);
  for (int64_t r = 0; r < w.rows; ++r) {
    // l is 0 only for a row with no kept key, which the step left zeros.
    inv_l[r] = w.l[r] == 0 ? T(0) : static_cast<T>(1.0 / w.l[r]);
  }
}

// RowDots sets d[r] = sum(dO ∘ O) over row r's head elements, in double.
template <typename T>
void RowDots(const Problem<T>& p, const Grads<T>& g, const RowBlock<T>& w, T* d) {
  for (int64_t r = 0; r < w.rows; ++r) {
    const int64_t at = p.a.out.At(w.b, w.h, w.t0 + r);
    d[r] = static_cast<T>(SumLanes<8>(
        p.a.Dh, [&](int64_t i) { return static_cast<double>(g.dout[at + i]) * g.o[at + i]; }));
  }
}

// KeyBlockGrads runs pass 2 on key block j = [s0, s0 + n).
template <typename T>
void KeyBlockGrads(const Problem<T>& p, const Grads<T>& g, RowBlock<T>& w, HeadScratch<T>& x,
                   int64_t j, int64_t s0, int64_t n) {
  const AttentionLayout& a = p.a;
  const int64_t rows = w.rows, Dh = a.Dh, ld = p.ld;
  T* z = Panel(p, w, j);
  if (w.panel.empty()) Scores(p, w, s0, n, z);
  const T* dout = g.dout + a.out.At(w.b, w.h, w.t0);
  BlockGemm<T>(*p.kernels, rows, n, Dh, T(1), dout, a.out.row, 1, p.v + a.v.At(w.b, w.h, s0), 1,
               a.v.row, T(0), x.dp.data(), ld);
  GradStep(*p.kernels, Block(p, w, s0, n, z, /*dropout=*/true), x.m.data(), x.stat.data(),
           x.probs, x.probs ? nullptr : x.d.data(), x.dp.data());
  const T scale = static_cast<T>(a.scale);
  // The first row block writes dK and dV, later ones add to them.
  const T beta = w.t0 == 0 ? T(0) : T(1);
  // z is now the dropped weights k·P, dp is dS.
  BlockGemm<T>(*p.kernels, n, Dh, rows, T(1), z, 1, ld, dout, a.out.row, 1, beta,
               g.grad + a.dv_offset + a.v.At(w.b, w.h, s0), a.v.row);
  // dQ goes straight to the output, the first key block writing it.
  BlockGemm<T>(*p.kernels, rows, Dh, n, scale, x.dp.data(), ld, 1, p.k + a.k.At(w.b, w.h, s0),
               a.k.row, 1, j == 0 ? T(0) : T(1), g.grad + a.q.At(w.b, w.h, w.t0), a.q.row);
  BlockGemm<T>(*p.kernels, n, Dh, rows, scale, x.dp.data(), 1, ld, p.q + a.q.At(w.b, w.h, w.t0),
               a.q.row, 1, beta, g.grad + a.dk_offset + a.k.At(w.b, w.h, s0), a.k.row);
  if (!a.bias_grad) return;
  T* dbias = g.grad + a.dbias_offset + a.WeightsRow(w.b, w.h, w.t0) + s0;
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dbias + r * a.S, x.dp.data() + r * ld, n * sizeof(T));
  }
}

template <typename T>
void RowBlockGrads(const Problem<T>& p, const Grads<T>& g, RowBlock<T>& w, HeadScratch<T>& x) {
  const AttentionLayout& a = p.a;
  // No key (S = 0, or every key past the rows' limits): no block.
  const int64_t blocks = w.max_limit == 0 ? 0 : (w.max_limit + p.bc - 1) / p.bc;
  const bool keep = w.rows * blocks * p.ld <= kPanelElements;
  w.panel.resize(keep ? w.rows * blocks * p.ld : 0);
  x.m.resize(w.rows);
  x.stat.resize(w.rows);
  x.d.resize(w.rows);
  x.dp.resize(w.rows * p.ld);
  // One key block: the weights themselves, so pass 2 takes no exponential
  // again and finds D in the row.
  x.probs = blocks == 1;
  if (x.probs) {
    Weights(p, w, w.max_limit, x.stat.data());
  } else {
    RowLogSumExp(p, w, x.m.data(), x.stat.data());
    RowDots(p, g, w, x.d.data());
  }
  for (int64_t s0 = 0, j = 0; s0 < w.max_limit; s0 += p.bc, ++j) {
    KeyBlockGrads(p, g, w, x, j, s0, std::min(p.bc, w.max_limit - s0));
  }
  for (int64_t r = 0; r < w.rows && blocks == 0; ++r) {  // no key: dQ is 0
    std::memset(g.grad + a.q.At(w.b, w.h, w.t0 + r), 0, a.Dh * sizeof(T));
  }
}

// ZeroHead clears head h of batch b in dk and dv from key `from` on (the
// first row block writes the keys before its limit, later blocks add to
// them), and in dbias (whose masked and skipped keys are never written).
template <typename T>
void ZeroHead(const AttentionLayout& a, int64_t b, int64_t h, int64_t from, T* grad) {
  for (int64_t s = from; s < a.S; ++s) {
    std::memset(grad + a.dk_offset + a.k.At(b, h, s), 0, a.Dh * sizeof(T));
    std::memset(grad + a.dv_offset + a.v.At(b, h, s), 0, a.Dh * sizeof(T));
  }
  if (a.bias_grad) {
    std::memset(grad + a.dbias_offset + a.WeightsRow(b, h, 0), 0, a.T * a.S * sizeof(T));
  }
}

template <typename T>
absl::Status BackwardTyped(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const Problem<T> p, MakeProblem<T>(ctx));
  const AttentionLayout& a = p.a;
  const Grads<T> g = {ctx.in(kAttnOut).as<T>(), ctx.in(kAttnDOut).as<T>(), ctx.output.as<T>()};
  if (a.Dh == 0) {  // no products: the only gradient, dbias, is zeros
    std::memset(g.grad, 0, ctx.output.nbytes());
    return absl::OkStatus();
  }
  const int64_t per = HeadsPerTask(a.H, a.B), groups = (a.H + per - 1) / per;
  ParallelFor(a.B * groups, 1, [&](int64_t begin, int64_t end) {
    RowBlock<T> w;
    HeadScratch<T> x;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / groups, h0 = task % groups * per, h1 = std::min(a.H, h0 + per);
      if (a.T == 0) {
        for (int64_t h = h0; h < h1; ++h) ZeroHead(a, b, h, 0, g.grad);
      }
      for (int64_t t0 = 0; t0 < a.T; t0 += p.rb) {
        StartRows(p, b, t0, std::min(p.rb, a.T - t0), w);
        for (int64_t h = h0; h < h1 && t0 == 0; ++h) ZeroHead(a, b, h, w.max_limit, g.grad);
        for (w.h = h0; w.h < h1; ++w.h) RowBlockGrads(p, g, w, x);
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace
}  // namespace attention_cpu

absl::Status AttentionGradCpu(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    return attention_cpu::BackwardTyped<decltype(tag)>(ctx);
  });
}

}  // namespace dagrad
