// ops/cpu_runtime.h
//
// The CPU backend's runtime: BLIS kernel-set selection, thread count, and
// the one matrix-product entry point every CPU kernel uses (Gemm, and
// GemmBFloat16 for bfloat16 operands).
//
// Debian's BLIS 0.9 does not recognise some newer CPUs (AMD Zen 5 among
// them) and silently falls back to its 'generic' kernels, five times slower
// than its 'skx' kernels on the same core. ConfigureCpu picks the fastest
// kernel set the CPU supports before BLIS initialises, unless the user chose
// one with BLIS_ARCH_TYPE (a number or a name such as "skx"), which is then
// checked: BLIS itself aborts the process on an id it was not built with,
// and an AVX-512 kernel set on a CPU without AVX-512 would crash on its
// first instruction. On aarch64 BLIS's own choice stands (it reads the CPU
// itself); BLIS_ARCH_TYPE may name one of its NEON sets there.
//
//   if (absl::Status st = ConfigureCpu(); !st.ok()) return st;
//   CpuInfo info = GetCpuInfo();   // info.blis_arch == "skx"

#ifndef DAGRAD_OPS_CPU_RUNTIME_H_
#define DAGRAD_OPS_CPU_RUNTIME_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "engine/bfloat16.h"
#include "ops/kernels/cpu_kernels.h"

namespace dagrad {

// ConfigureCpu selects dagrad's kernel level (ChooseCpuIsa, ops/cpu_isa.h)
// and the BLIS kernel set (once per process) and returns FailedPrecondition,
// naming the variable and the valid choices, when DAGRAD_CPU_ISA or
// BLIS_ARCH_TYPE asks for a level or set this BLIS or this CPU cannot run,
// DAGRAD_NUM_THREADS is not a thread count in [1, MaxThreads()], or
// DAGRAD_WAIT_POLICY is not a wait policy (ops/cpu_threads.h).
// Later calls return the first call's result.
absl::Status ConfigureCpu();

struct CpuInfo {
  std::string blis_version;
  std::string blis_arch;    // the active kernel set, e.g. "skx"
  std::string chosen_by;    // "BLIS_ARCH_TYPE", "cpu features" or "BLIS"
  std::string cpu_features;  // the features that decided, e.g. "avx512f avx2 fma"
  int threads = 1;
  std::string wait_policy;  // "auto" or "spin" (ops/cpu_threads.h)
  // Where `threads` came from: "SetNumThreads", "DAGRAD_NUM_THREADS", or
  // the default's limits (ThreadBudget::source, ops/cpu_budget.h).
  std::string threads_source;
};

// GetCpuInfo describes the configured backend (configuring it if needed).
CpuInfo GetCpuInfo();

// MaxThreads is the largest thread count dagrad accepts: 4 x the hardware
// threads (std::thread::hardware_concurrency, 1 when unknown). Beyond it
// oversubscription only slows a run down, and tens of thousands of threads
// exhaust the process's stacks.
int MaxThreads();

// SetNumThreads sets the threads BLIS and dagrad's own kernels use (values
// below 1 mean 1), process-wide: a Run on any thread uses this count.
// InvalidArgument, naming the count and the limit, above MaxThreads(); the
// count in force is then unchanged.
//
//   DAGRAD_RETURN_IF_ERROR(SetNumThreads(1));
//   std::thread([&] { out = exec.Run(*plan, feeds); }).join();   // one thread
absl::Status SetNumThreads(int n);

// NumThreads is the count in force: SetNumThreads's, else the environment's
// DAGRAD_NUM_THREADS (read once, on first use), else the cores this process
// may use (BudgetThreads, ops/cpu_budget.h: affinity, cgroup quota, MPI
// ranks on the node). A DAGRAD_NUM_THREADS that is not an integer in
// [1, MaxThreads()] makes ConfigureCpu fail (FailedPrecondition naming it);
// NumThreads then uses the default. The count is process-wide: executors in
// one process share it and one OpenMP pool (ops/cpu_threads.h).
int NumThreads();

// Gemm computes C = alpha * A·B + beta * C for an m×k A, a k×n B and an m×n
// C, each given by a pointer and (row, column) element strides, so that
// transposed or strided operands need no copy. T is float or double.
// Products too small for BLIS's overhead go to SmallGemm (ops/small_gemm.h).
// Returns the status of ConfigureCpu.
// `one_thread` runs BLIS on the calling thread only, for callers that
// spread independent products over the threads themselves.
template <typename T>
absl::Status Gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t rsa, int64_t csa, const T* b, int64_t rsb, int64_t csb,
                  T beta, T* c, int64_t rsc, int64_t csc, bool one_thread = false);

// GemmBFloat16 is Gemm for bfloat16 operands: C = alpha * A·B + beta * C
// with A and B bfloat16 (engine/bfloat16.h) and C float32, accumulated in
// float32 — the product mixed precision trains with. Where the CPU has
// AVX512_BF16 and the kernel level is avx512 (ActiveBf16Products,
// ops/cpu_isa.h), its kernel multiplies the bfloat16 pairs natively
// (vdpbf16ps) on operands packed by pairs of k; elsewhere A (in panels of
// rows) and B are widened to float32 and multiplied by Gemm<float>. The
// products of two bfloat16 are exact in float32, so the two differ only in
// summation order: each is within 2 (k + 2) eps (|alpha| |A|·|B| + |beta
// C|) of the exact product, eps = 2^-24 (tests/gemm_bf16_test.cc), and the
// native kernel counts subnormal inputs and results as zero. Each element of C is
// summed over k in one fixed order: the same bits on any thread count.
// beta == 0 reads no C. Returns the status of ConfigureCpu.
//
//   DAGRAD_RETURN_IF_ERROR(GemmBFloat16(m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n, 1));
absl::Status GemmBFloat16(int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a,
                          int64_t rsa, int64_t csa, const BFloat16* b, int64_t rsb, int64_t csb,
                          float beta, float* c, int64_t rsc, int64_t csc,
                          bool one_thread = false);

// GemmBFloat16On is GemmBFloat16 with the kernel given: a table's
// gemm_bf16 (which the CPU must run: CpuHasAvx512Bf16), or null for the
// widened product, so that a test or a bench runs both in one process.
//
//   DAGRAD_RETURN_IF_ERROR(GemmBFloat16On(nullptr, m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n, 1));
absl::Status GemmBFloat16On(GemmBf16Fn gemm, int64_t m, int64_t n, int64_t k, float alpha,
                            const BFloat16* a, int64_t rsa, int64_t csa, const BFloat16* b,
                            int64_t rsb, int64_t csb, float beta, float* c, int64_t rsc,
                            int64_t csc, bool one_thread = false);

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_RUNTIME_H_
