// ops/attention_cpu.h
//
// Fused attention's CPU kernels (ops/attention.h has the op), internal to
// ops/attention*.cc: the pieces the forward kernel (attention_cpu.cc) and
// the backward kernel (attention_cpu_grad.cc) share.
//
// Work goes by blocks: kRowBlock queries of one head at a time against
// blocks of KeyBlock(S) keys, each block product a BLIS (or SmallGemm)
// call on the calling thread, with the block's scores in the thread's own
// buffer. The per-element work on a block (online softmax, dropout, dS)
// is the active ISA level's kernel (ops/kernels/attention_kernel.cc).

#ifndef DAGRAD_OPS_ATTENTION_CPU_H_
#define DAGRAD_OPS_ATTENTION_CPU_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/op.h"
#include "ops/attention_layout.h"
#include "ops/kernels/cpu_kernels.h"

namespace dagrad {

// AttentionCpu and AttentionGradCpu are the attention and attention_grad
// OpDefs' CPU kernels.
absl::Status AttentionCpu(const KernelContext& ctx);
absl::Status AttentionGradCpu(const KernelContext& ctx);

namespace attention_cpu {

inline constexpr int64_t kRowBlock = 64;

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
  int64_t bc = 0;             // KeyBlock(S)
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

// RowBlock is one block of rows and its scratch: the rows' key limits and
// valid counts, the scores and the dropout words of one key block (rows x
// bc each, row stride bc).
template <typename T>
struct RowBlock {
  int64_t b = 0, h = 0, t0 = 0, rows = 0;
  int64_t max_limit = 0;  // keys at or past it are masked for every row
  std::vector<int64_t> limit, valid;
  std::vector<T> s;
  std::vector<uint32_t> bits;
  std::vector<T> panel;  // the backward's scores of every key block, when kept
};

// StartRows points `w` at rows [t0, t0 + rows) of head h in batch b and
// finds their key limits.
template <typename T>
void StartRows(const Problem<T>& p, int64_t b, int64_t h, int64_t t0, int64_t rows,
               RowBlock<T>& w);

// Scores writes the masked logits of key block [s0, s0 + n) to z (rows x
// n, row stride p.bc): scale * q·kᵀ + bias, -inf where keep masks; and
// each row's valid count (keys before its limit).
template <typename T>
void Scores(const Problem<T>& p, RowBlock<T>& w, int64_t s0, int64_t n, T* z);

// Block returns the kernels' view of key block [s0, s0 + n) with scores z
// (sets the rows' valid counts, and fills the dropout words when dropout is
// on).
template <typename T>
AttentionBlock<T> Block(const Problem<T>& p, RowBlock<T>& w, int64_t s0, int64_t n, T* z);

// BlockGemm is Gemm (ops/cpu_runtime.h) on the calling thread, C with unit
// column stride; MakeProblem has configured the CPU, Gemm's only failure.
template <typename T>
void BlockGemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa, int64_t csa,
               const T* b, int64_t rsb, int64_t csb, T beta, T* c, int64_t ldc);

}  // namespace attention_cpu
}  // namespace dagrad

#endif  // DAGRAD_OPS_ATTENTION_CPU_H_
