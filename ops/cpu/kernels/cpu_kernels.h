// ops/cpu/kernels/cpu_kernels.h
//
// CpuKernels: the table of dagrad's hot CPU kernels for one ISA level. The
// sources in ops/cpu/kernels/ are compiled once per level (see
// tools/cmake/isa_kernels.cmake), each copy into its own namespace
// dagrad::kernels::<level>, whose Table() returns that level's entries.
// ops/cpu/internal/cpu_isa.h picks the table once per process; op kernels call through
// it. Everything here is declarations and plain data: an inline function in
// this header would be compiled at every level, and the linker could pick
// the AVX-512 copy for everyone.
//
//   DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* k, ActiveKernels());
//   k->philox_bits(seed, stream, step, first, bits);
//
// The FMA rule: the baseline level computes each expression as written
// (the library is built with -ffp-contract=off), so it is the reference.
// The avx2 and avx512 levels fuse multiply-adds explicitly where they pay;
// each entry below says how far its result may differ from the baseline.

#ifndef DAGRAD_OPS_CPU_KERNELS_CPU_KERNELS_H_
#define DAGRAD_OPS_CPU_KERNELS_CPU_KERNELS_H_

#include <cstdint>

namespace dagrad {

// SmallGemmArgs: C = alpha * A·B + beta * C, A (m x k) and B (k x n) given
// by (row, column) strides, C row-major with row stride ldc. `panel` is
// scratch for B packed into rows padded to 64 bytes: k * ceil(n * sizeof(T)
// / 64) * 64 bytes, 64-byte aligned (left unused when B's rows already are
// whole vectors of the level: csb == 1 and n a multiple of its lanes).
template <typename T>
struct SmallGemmArgs {
  int64_t m, n, k;
  T alpha;
  const T* a;
  int64_t rsa, csa;
  const T* b;
  int64_t rsb, csb;
  T beta;
  T* c;
  int64_t ldc;
  T* panel;
};

// Philox4x32-10 blocks per philox_bits call.
inline constexpr int kPhiloxBlocks = 64;

// DropoutArgs: y = x * (keep ? scale : 0) over n elements, where element
// i's keep is ((word i of RandomStream{seed, stream, step}) >> 8) >=
// threshold (engine/philox.h: word i is word i % 4 of block i / 4). y may
// be x. Work is split in chunks of 4 * kPhiloxBlocks elements.
template <typename T>
struct DropoutArgs {
  uint64_t seed;
  uint32_t stream, step;
  int64_t n;
  uint32_t threshold;
  T scale;
  const T* x;
  T* y;
};

// LayerNormArgs: rows of d elements of x (row-major) and their outputs y;
// gamma, beta: (d,) or null. layer_norm_grad reads g (like x) and writes dx
// to y, using gamma only. y may be x's buffer. layer_norm_param_grad reads
// x and g only (its sums go to an accumulator of its own).
template <typename T>
struct LayerNormArgs {
  int64_t d;
  double eps;
  const T* x;
  const T* gamma;
  const T* beta;
  const T* g;
  T* y;
};

// GeluArgs: n elements of x and their outputs y; g is the incoming gradient
// (gelu_grad only). `tanh` picks the tanh approximation over the exact
// x * Phi(x). y may be x's or g's buffer.
struct GeluArgs {
  bool tanh;
  const float* x;
  const float* g;
  float* y;
};

// AttentionBlock: `rows` rows of a block of n columns of fused attention's
// scores (ops/attention_cpu.cc), row r at s + r * ld, ld a multiple of 16
// (>= n): the kernels read and write whole rows of ld, a register at a
// time. Row r's first valid[r] columns hold the logits z = scale * q·kᵀ +
// bias (-inf where a keep mask masks); the others lie past the row's valid
// length or causal limit, and the kernels leave zeros there, up to n
// (registers are written whole: float kernels may write zeros up to n
// rounded up to 16).
// bits: null (no dropout), or the block's dropout words, row r at bits +
// r * ld; a weight is kept iff (word >> 8) >= threshold, and then scaled
// by drop_scale (ops/dropout.h).
template <typename T>
struct AttentionBlock {
  int64_t rows, n, ld;
  T* s;
  const int64_t* valid;
  const uint32_t* bits;
  uint32_t threshold;
  T drop_scale;
};

// GemmBf16Args: C = alpha * A·B + beta * C for bfloat16 A (m x k) and B
// (k x n), packed by ops/cpu/gemm_bf16.cc, and float32 C (element (i, j) at
// c[i * rsc + j * csc]). Both operands are packed by pairs of k, as
// vdpbf16ps reads them: a uint32 holds the bits of element 2q (low half)
// and 2q + 1 (high half) of k, zero past k (an odd k gets a zero partner).
// A: row panels of kGemmBf16Rows rows, panel p at a + p * pairs *
// kGemmBf16Rows, pair q of its row r at [q * kGemmBf16Rows + r]; B: column
// panels of kGemmBf16Cols columns, panel j at b + j * pairs *
// kGemmBf16Cols, pair q of its column l at [q * kGemmBf16Cols + l]. Rows
// past m and columns past n are zeros. beta == 0 reads no C (a NaN there
// does not propagate), as BLIS's sgemm.
inline constexpr int64_t kGemmBf16Rows = 6;
inline constexpr int64_t kGemmBf16Cols = 64;

struct GemmBf16Args {
  int64_t m, n, pairs;
  float alpha;
  const uint32_t* a;
  const uint32_t* b;
  float beta;
  float* c;
  int64_t rsc, csc;
};

using GemmBf16Fn = void (*)(const GemmBf16Args& args, int64_t row_begin, int64_t row_end,
                            int64_t col_begin, int64_t col_end);

struct CpuKernels {
  const char* isa;  // "baseline", "avx2" or "avx512"

  // small_gemm_*: the product described by SmallGemmArgs, register-blocked
  // for the level's vector registers. Fused levels round each k-step once
  // instead of twice, so elementwise |C - C_baseline| <= 2 (k + 2) eps
  // (|alpha| |A|·|B| + |beta C|), eps of T.
  void (*small_gemm_f32)(const SmallGemmArgs<float>& args);
  void (*small_gemm_f64)(const SmallGemmArgs<double>& args);
  // small_gemm_max_madds: the largest m * n * k at which small_gemm beats
  // BLIS's kernel set of the same level (measured per level, see
  // kSmallGemmMaxMadds in ops/cpu/kernels/level.h); IsSmallGemm reads it.
  int64_t small_gemm_max_madds;

  // gemm_bf16: the tiles of GemmBf16Args's product in row panels
  // [row_begin, row_end) and column panels [col_begin, col_end), each
  // element of C accumulated in float32 over k in order, a pair at a time
  // by vdpbf16ps (AVX512_BF16). The products of two bfloat16 are exact in
  // float32 (inside its range), so the result differs from the widened
  // float32 product only in summation order: each is within 2 (k + 2) eps
  // (|alpha| |A|·|B| + |beta C|) of the exact product, eps = 2^-24, except
  // that the instruction counts subnormal inputs and results as zero. Null
  // at levels without it; run it only where CpuHasAvx512Bf16()
  // (ops/cpu/internal/cpu_isa.h) holds.
  GemmBf16Fn gemm_bf16;

  // philox_bits writes the random words of blocks first .. first +
  // kPhiloxBlocks - 1 of RandomStream{seed, stream, step} (engine/philox.h):
  // out[4 * b + j] = word j of block first + b. The low 32 bits of the
  // block numbers must not wrap within a call (a `first` that is a
  // multiple of kPhiloxBlocks never does). Integer arithmetic:
  // bit-identical on every level.
  void (*philox_bits)(uint64_t seed, uint32_t stream, uint32_t step, uint64_t first,
                      uint32_t* out);

  // dropout_*: chunks [begin, end) of DropoutArgs. One multiply per
  // element, as written: bit-identical on every level (-0.0, NaN and Inf
  // included).
  void (*dropout_f32)(const DropoutArgs<float>& args, int64_t begin, int64_t end);
  void (*dropout_f64)(const DropoutArgs<double>& args, int64_t begin, int64_t end);

  // exp_shift_sum_f32 returns the sum, in double, of exp(x[k] - m) for
  // k < n (VectorExp, ops/cpu/internal/vector_math.h) and stores each term to y[k]
  // unless y is null; y may be x. Bit-identical on every level: no fused
  // multiply-add, and a fixed summation order.
  double (*exp_shift_sum_f32)(const float* x, float* y, int64_t n, float m);

  // layer_norm_* / layer_norm_grad_*: rows [begin, end) of LayerNormArgs,
  // the forward pass and dx (ops/layer_norm.h). Moments and sums in double
  // in a fixed order, no fused multiply-add: bit-identical on every level.
  void (*layer_norm_f32)(const LayerNormArgs<float>& args, int64_t begin, int64_t end);
  void (*layer_norm_f64)(const LayerNormArgs<double>& args, int64_t begin, int64_t end);
  void (*layer_norm_grad_f32)(const LayerNormArgs<float>& args, int64_t begin, int64_t end);
  void (*layer_norm_grad_f64)(const LayerNormArgs<double>& args, int64_t begin, int64_t end);
  // layer_norm_param_grad_*: for rows [begin, end) in order, acc[j] +=
  // g[j] * xhat[j] and acc[d + j] += g[j], in double (xhat in double from
  // the forward pass's moments). No fused multiply-add: bit-identical on
  // every level.
  void (*layer_norm_param_grad_f32)(const LayerNormArgs<float>& args, int64_t begin, int64_t end,
                                    double* acc);
  void (*layer_norm_param_grad_f64)(const LayerNormArgs<double>& args, int64_t begin,
                                    int64_t end, double* acc);

  // sum_columns_f32 adds rows [0, rows) of in (row stride `stride`) to
  // acc[j] for each column j < len, in double: four rows at a time as
  // acc[j] + ((r0 + r1) + (r2 + r3)), then the rest one by one. Exact
  // conversions and a fixed order per column: bit-identical on every level.
  void (*sum_columns_f32)(const float* in, int64_t rows, int64_t stride, int64_t len,
                          double* acc);

  // softmax_grad_f32: for `rows` rows of n elements, dx = y * (g - dot),
  // dot = the row's sum of g * y in double (SumLanes<16>'s order, then
  // rounded to float). dx may be g. Bit-identical on every level.
  void (*softmax_grad_f32)(const float* g, const float* y, float* dx, int64_t rows, int64_t n);

  // gelu_f32 / gelu_grad_f32: elements [begin, end) of GeluArgs, y =
  // gelu(x) and y = g * gelu'(x) (ops/gelu.h), vectorised: Phi from a
  // polynomial (|x| < sqrt(2)) or exp(-x^2 / 2) times a polynomial in
  // 1 / (1 + |x| / (2 sqrt(2))), the same code for every element (the tail
  // too). The avx2 and avx512 levels fuse the polynomials' multiply-adds;
  // every level keeps |y - gelu(x)| <= 2^-23 |x| + 2^-24 |gelu(x)| and
  // |dx - g gelu'(x)| <= |g| 2^-22 (1 + |x|) (tests/autodiff/gelu_test.cc), so two
  // levels differ by at most twice that.
  void (*gelu_f32)(const GeluArgs& args, int64_t begin, int64_t end);
  void (*gelu_grad_f32)(const GeluArgs& args, int64_t begin, int64_t end);

  // tanh_f32 / sigmoid_f32: y[i] = tanh(x[i]) / sigmoid(x[i]) for i < n,
  // vectorised (ops/cpu/kernels/activation_kernel.cc): a polynomial for
  // |x| < 0.625 (tanh), else from exp(-2|x|) / exp(-|x|); y may be x. At
  // every level within 1.5 units in the last place of the exact value
  // (sigmoid: 2.5, and 0 for x < -87.33654, where the exact value is
  // subnormal) (tests/ops/activation_kernel_test.cc);
  // the levels differ only where MulAdd fuses.
  void (*tanh_f32)(const float* x, float* y, int64_t n);
  void (*sigmoid_f32)(const float* x, float* y, int64_t n);

  // attention_softmax_*: the online-softmax step of a block, per row r:
  // m' = max(m[r], z[0, valid)) (NaN-propagating); when m' is -inf the row
  // becomes zeros and alpha[r] = 1; else alpha[r] = exp(m[r] - m'), the
  // row becomes p = exp(z - m') (0 past valid), l[r] = l[r] * alpha[r] +
  // sum(p) (in double: column k adds to accumulator k % 16 in order, the
  // 16 then in a fixed tree), m[r] = m', and then each p is multiplied by
  // its dropout factor (keep ? drop_scale : 0).
  // attention_grad_*: the backward step, per row r and column k < valid:
  // the weight p = s[k] * stat[r] when `probs` (the block holds exp(z - m)
  // and stat is 1 / l, as attention_softmax leaves them, no dropout) or
  // p = exp((s[k] - m[r]) - stat[r]) (m the row's max score, stat the log
  // of its sum of exp(z - m): as precise as the forward's exp(z - m) / l,
  // where one rounded logsumexp m + log l would lose |m| ulps); then s[k] = p *
  // keep and dp[k] = p * (dp[k] * keep - D) (keep the dropout factor, 1
  // without dropout), both 0 past valid. D is d[r], or, for a null d (the
  // block holds whole rows), the row's sum of p * keep * dp[k] in double
  // (the order of attention_softmax's sums). dp has s's layout (row stride
  // ld). VectorExp (float), std::exp (double), nothing fused:
  // bit-identical on every level.
  void (*attention_softmax_f32)(const AttentionBlock<float>& a, float* m, double* l,
                                float* alpha);
  void (*attention_softmax_f64)(const AttentionBlock<double>& a, double* m, double* l,
                                double* alpha);
  void (*attention_grad_f32)(const AttentionBlock<float>& a, const float* m, const float* stat,
                             bool probs, const float* d, float* dp);
  void (*attention_grad_f64)(const AttentionBlock<double>& a, const double* m,
                             const double* stat, bool probs, const double* d, double* dp);
};

namespace kernels {
namespace baseline {
const CpuKernels& Table();
}
namespace avx2 {
const CpuKernels& Table();
}
namespace avx512 {
const CpuKernels& Table();
}
}  // namespace kernels

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_KERNELS_CPU_KERNELS_H_
