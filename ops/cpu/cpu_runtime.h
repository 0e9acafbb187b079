// ops/cpu/cpu_runtime.h
//
// The CPU backend's runtime: BLIS kernel-set selection and the thread
// count. (The matrix-product entry point every CPU kernel uses, Gemm, is
// the library's own: ops/cpu/internal/gemm.h.)
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
//   // setup: SavedThreads
//   if (absl::Status st = ConfigureCpu(); !st.ok()) return st;
//   CpuInfo info = GetCpuInfo();   // info.blis_arch == "skx"

#ifndef DAGRAD_OPS_CPU_CPU_RUNTIME_H_
#define DAGRAD_OPS_CPU_CPU_RUNTIME_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace dagrad {

// ConfigureCpu selects dagrad's kernel level (ChooseCpuIsa, ops/cpu/internal/cpu_isa.h)
// and the BLIS kernel set (once per process) and returns FailedPrecondition,
// naming the variable and the valid choices, when DAGRAD_CPU_ISA or
// BLIS_ARCH_TYPE asks for a level or set this BLIS or this CPU cannot run,
// DAGRAD_NUM_THREADS is not a thread count in [1, MaxThreads()], or
// DAGRAD_WAIT_POLICY is not a wait policy (ops/cpu/cpu_threads.h).
// Later calls return the first call's result.
absl::Status ConfigureCpu();

struct CpuInfo {
  std::string blis_version;
  std::string blis_arch;    // the active kernel set, e.g. "skx"
  std::string chosen_by;    // "BLIS_ARCH_TYPE", "cpu features" or "BLIS"
  std::string cpu_features;  // the features that decided, e.g. "avx512f avx2 fma"
  int threads = 1;
  std::string wait_policy;  // "auto" or "spin" (ops/cpu/cpu_threads.h)
  // Where `threads` came from: "SetNumThreads", "DAGRAD_NUM_THREADS", or
  // the default's limits (ThreadBudget::source, ops/cpu/cpu_budget.h).
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
// count in force is then unchanged. OpenMP's teams (BLIS's products, and
// ParallelFor under the spin policy) hold at most OMP_THREAD_LIMIT threads,
// as OpenMP allows, and are never dynamic (OMP_DYNAMIC is not followed).
//
//   // setup: SavedThreads
//   DAGRAD_RETURN_IF_ERROR(SetNumThreads(1));
//   std::thread([&] { out = exec.Run(*plan, feeds); }).join();   // one thread
absl::Status SetNumThreads(int n);

// NumThreads is the count in force: SetNumThreads's, else the environment's
// DAGRAD_NUM_THREADS (read once, on first use), else the cores this process
// may use (BudgetThreads, ops/cpu/cpu_budget.h: affinity, cgroup quota, MPI
// ranks on the node), at most OMP_THREAD_LIMIT. A DAGRAD_NUM_THREADS that is
// not an integer in [1, MaxThreads()] makes ConfigureCpu fail
// (FailedPrecondition naming it); NumThreads then uses the default. The
// count is process-wide: executors in one process share it and its threads
// (ops/cpu/cpu_threads.h).
int NumThreads();

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_CPU_RUNTIME_H_
