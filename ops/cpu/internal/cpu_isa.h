// ops/cpu/internal/cpu_isa.h
//
// Run-time choice of dagrad's kernel level, as BLIS and ATen's CPU
// capability do it: the hot kernels (ops/cpu/kernels/) are compiled once per ISA
// level, and the best level this CPU runs is picked once per process from
// its features (__builtin_cpu_supports). The rest of the library is
// compiled for the portable baseline, so one binary runs on any x86-64.
//
//   x86-64:  avx512 (AVX-512 F/BW/DQ/VL), avx2 (AVX2 + FMA), baseline (SSE2)
//   aarch64: baseline (NEON, which every ARMv8-A CPU has)
//
// DAGRAD_CPU_ISA=avx512|avx2|baseline lowers the level (to compare levels,
// or to reproduce another machine's numbers); it cannot raise it.
//
//   // setup: SmallProduct
//   DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* k, ActiveKernels());
//   k->small_gemm_f32(args);
//
// Tests call every level this CPU can run in one process through
// KernelsFor, comparing each against the baseline.

#ifndef DAGRAD_OPS_CPU_INTERNAL_CPU_ISA_H_
#define DAGRAD_OPS_CPU_INTERNAL_CPU_ISA_H_

#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/kernels/cpu_kernels.h"

namespace dagrad {

// The kernel levels, lowest first.
enum class CpuIsa { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

// CpuIsaName returns "baseline", "avx2" or "avx512".
absl::string_view CpuIsaName(CpuIsa isa);

// CpuHasInstructionsOf is true when this CPU has the instructions of
// `isa`'s kernels: avx512 needs AVX-512 F, BW, DQ and VL (like BLIS's skx),
// avx2 needs AVX2 and FMA (like BLIS's haswell).
bool CpuHasInstructionsOf(CpuIsa isa);

// CpuIsaRunnable returns the levels this build has kernels for and this
// CPU has the instructions of, lowest first (baseline is always there).
std::vector<CpuIsa> CpuIsaRunnable();

// KernelsFor returns the table of `isa`, which must be in CpuIsaRunnable()
// (checked: anything else is a bug in the caller).
const CpuKernels& KernelsFor(CpuIsa isa);

// ParseCpuIsa maps a DAGRAD_CPU_ISA value to a level in `runnable`, or
// returns FailedPrecondition naming the value and listing the valid ones
// (an unknown name, or a level this CPU or build lacks).
absl::StatusOr<CpuIsa> ParseCpuIsa(absl::string_view text, const std::vector<CpuIsa>& runnable);

struct CpuIsaChoice {
  CpuIsa isa;
  std::string chosen_by;  // "cpu features" or "DAGRAD_CPU_ISA"
};

// ChooseCpuIsa returns the level of this process, chosen on the first call:
// DAGRAD_CPU_ISA when set (ParseCpuIsa's errors), else the highest runnable
// level. Later calls return the first call's result.
absl::StatusOr<CpuIsaChoice> ChooseCpuIsa();

// ActiveKernels returns the table of ChooseCpuIsa's level, or the error of
// ConfigureCpu (ops/cpu/cpu_runtime.h: a CPU setting of the environment it
// refuses, DAGRAD_CPU_ISA's among them).
absl::StatusOr<const CpuKernels*> ActiveKernels();

// CpuHasAvx512Bf16 is true when this CPU has AVX512_BF16 (vdpbf16ps) as
// well as the avx512 level's instructions. __builtin_cpu_supports reports
// AVX-512 features only where the OS enables their register state (XCR0's
// opmask and zmm bits), so true means the instructions run.
bool CpuHasAvx512Bf16();

// Bf16Products: the kernel GemmBFloat16 (ops/cpu/cpu_runtime.h) runs. `gemm` is
// the level's gemm_bf16 where the table has one and the CPU runs it, else
// null: the operands are then widened to float32 for sgemm. `description`
// says which, and why not the native kernel, for `dagrad info`.
struct Bf16Products {
  GemmBf16Fn gemm;
  std::string description;
};

// Bf16ProductsFor returns the choice at level `isa` (in CpuIsaRunnable();
// chosen_by as in CpuIsaChoice, naming what put the level there).
//
//   Bf16Products p = Bf16ProductsFor(CpuIsa::kBaseline, "DAGRAD_CPU_ISA");  // p.gemm null
Bf16Products Bf16ProductsFor(CpuIsa isa, absl::string_view chosen_by);

// ActiveBf16Products returns Bf16ProductsFor of ChooseCpuIsa's level, or
// its error.
absl::StatusOr<Bf16Products> ActiveBf16Products();

// ExpShiftSum returns the sum, in double, of exp(x[k] - m) for k < n, and
// stores each term to y[k] unless y is null (y may be x): the shifted
// exponentials of softmax and cross_entropy. m must be at least every x[k]
// (the row's maximum; NaN anywhere makes the terms NaN): float terms are
// VectorExp's bits only while x[k] - m <= 88. float runs the active
// level's exp_shift_sum_f32 (bit-identical on every level); double a scalar
// loop, since std::exp does not vectorise.
//
//   // setup: Kernels
//   const float row[] = {1, 2, 3};
//   float e[3];
//   const double sum = ExpShiftSum<float>(*kernels, row, e, 3, 3.0f);  // e[2] == 1
template <typename T>
double ExpShiftSum(const CpuKernels& kernels, const T* x, T* y, int64_t n, T m) {
  if constexpr (std::is_same_v<T, float>) {
    return kernels.exp_shift_sum_f32(x, y, n, m);
  } else {
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const T e = VectorExp(x[k] - m);
      if (y != nullptr) y[k] = e;
      sum += e;
    }
    return sum;
  }
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_INTERNAL_CPU_ISA_H_
