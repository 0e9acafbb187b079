// ops/internal/attention_cpu.h
//
// Fused attention's CPU kernels (ops/attention.h has the op), internal to
// ops/attention*.cc: the pieces the forward kernel (attention_cpu.cc) and
// the backward kernel (attention_cpu_grad.cc) share.
//
// Work goes by blocks: RowBlockOf queries of one head at a time against
// blocks of KeyBlock(S) keys, each block product a BLIS (or SmallGemm)
// call on the calling thread, with the block's scores in the thread's own
// buffer. The per-element work on a block (online softmax, dropout, dS)
// is the active ISA level's kernel (ops/cpu/kernels/attention_kernel.cc).
// A task takes a group of heads (HeadsPerTask) of the same rows: their
// q, k, v, O and dO rows share cache lines, which one head alone would
// fetch from memory for a few elements each.

#ifndef DAGRAD_OPS_INTERNAL_ATTENTION_CPU_H_
#define DAGRAD_OPS_INTERNAL_ATTENTION_CPU_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/op.h"
#include "ops/cpu/internal/gemm.h"
#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/internal/attention_layout.h"

namespace dagrad {

// AttentionCpu and AttentionGradCpu are the attention and attention_grad
// OpDefs' CPU kernels.
absl::Status AttentionCpu(const KernelContext& ctx);
absl::Status AttentionGradCpu(const KernelContext& ctx);

namespace attention_cpu {

// RowBlockOf is the rows per block: 64, or 32 under a causal mask, whose
// blocks then skip more of the keys their rows cannot see (each block
// computes scores up to its last row's limit).
inline int64_t RowBlockOf(bool causal) { return causal ? 32 : 64; }

// KeyBlock is the keys per block: all of them up to 256; beyond that 252,
// so that a row's dropout words for a block (252, plus up to 3 before them
// in the first Philox block) come from one philox_bits call of 256 words.
inline int64_t KeyBlock(int64_t S) { return S <= 256 ? S : 252; }

// Problem is a node's tensors, typed, with what every block needs.
template <typename T>
struct Problem {
  AttentionLayout a;
  const CpuKernels* kernels = nullptr;
  const T* q = nullptr;  // inputs 0-2 (packed: all input 0)
  const T* k = nullptr;
  const T* v = nullptr;
  const bool* keep = nullptr;
  const T* bias = nullptr;
  std::vector<int64_t> lens;  // empty when absent
  int64_t rb = 0;             // RowBlockOf(causal)
  int64_t bc = 0;             // KeyBlock(S)
  int64_t ld = 0;             // a block's row stride: bc up to a multiple of 16
  // Dropout (ops/dropout.h): on in training runs with p > 0.
  bool dropout = false;
  uint64_t seed = 0;
  uint32_t stream = 0, step = 0;
  uint64_t first = 0;  // the global number of weight 0 (data parallelism)
  uint32_t threshold = 0;
  T drop_scale = T(1);

  const int64_t* lens_data() const { return lens.empty() ? nullptr : lens.data(); }
};

// MakeProblem reads the node's layout, inputs, valid lengths (errors as
// MaskedSoftmax's) and dropout settings.
template <typename T>
absl::StatusOr<Problem<T>> MakeProblem(const KernelContext& ctx);

// HeadsPerTask is how many heads one task takes when `tasks` tasks of all
// H heads would be too few for the threads: enough tasks for two per
// thread where the heads allow.
int64_t HeadsPerTask(int64_t H, int64_t tasks);

// RowBlock is one block of rows of one head and its scratch: the rows' key
// limits and valid counts, the scores and the dropout words of one key
// block (rows x bc each, row stride ld), and the online softmax's running
// maximum m, sum l and rescaling factor alpha per row.
template <typename T>
struct RowBlock {
  int64_t b = 0, h = 0, t0 = 0, rows = 0;
  int64_t max_limit = 0;  // keys at or past it are masked for every row
  std::vector<int64_t> limit, valid;
  std::vector<T> s;
  std::vector<uint32_t> bits, run;  // run: consecutive words, bits drawn from it
  std::vector<T> panel;  // the backward's scores of every key block, when kept
  std::vector<T> m, alpha;
  std::vector<double> l;
};

// StartRows points `w` at rows [t0, t0 + rows) of batch b and finds their
// key limits (the same for every head: set w.h to pick one).
template <typename T>
void StartRows(const Problem<T>& p, int64_t b, int64_t t0, int64_t rows, RowBlock<T>& w);

// ResetSoftmax starts the online softmax of w's rows: m = -inf, l = 0.
template <typename T>
void ResetSoftmax(RowBlock<T>& w);

// SoftmaxStep runs the level's attention_softmax on `block` with w's m, l
// and alpha.
template <typename T>
void SoftmaxStep(const CpuKernels& k, const AttentionBlock<T>& block, RowBlock<T>& w);

// Scores writes the masked logits of key block [s0, s0 + n) to z (rows x
// n, row stride p.ld): scale * q·kᵀ + bias, -inf where keep masks; and
// each row's valid count (keys before its limit).
template <typename T>
void Scores(const Problem<T>& p, RowBlock<T>& w, int64_t s0, int64_t n, T* z);

// Block returns the kernels' view of key block [s0, s0 + n) with scores z
// (sets the rows' valid counts, and fills the dropout words when
// `dropout` and dropout is on).
template <typename T>
AttentionBlock<T> Block(const Problem<T>& p, RowBlock<T>& w, int64_t s0, int64_t n, T* z,
                        bool dropout);

// BlockGemm is Gemm (ops/cpu/cpu_runtime.h) on the calling thread, C with unit
// column stride: SmallGemm with `kernels` when the product is small;
// MakeProblem has configured the CPU, Gemm's only failure.
template <typename T>
void BlockGemm(const CpuKernels& kernels, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t rsa, int64_t csa, const T* b, int64_t rsb, int64_t csb, T beta, T* c,
               int64_t ldc);

}  // namespace attention_cpu
}  // namespace dagrad

#endif  // DAGRAD_OPS_INTERNAL_ATTENTION_CPU_H_
