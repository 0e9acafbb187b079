// ops/kernels/cpu_kernels.h
//
// CpuKernels: the table of dagrad's hot CPU kernels for one ISA level. The
// sources in ops/kernels/ are compiled once per level (see
// tools/cmake/isa_kernels.cmake), each copy into its own namespace
// dagrad::kernels::<level>, whose Table() returns that level's entries.
// ops/cpu_isa.h picks the table once per process; op kernels call through
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

#ifndef DAGRAD_OPS_KERNELS_CPU_KERNELS_H_
#define DAGRAD_OPS_KERNELS_CPU_KERNELS_H_

#include <cstdint>

namespace dagrad {

// SmallGemmArgs: C = alpha * A·B + beta * C, A (m x k) and B (k x n) given
// by (row, column) strides, C row-major with row stride ldc. `panel` is
// scratch for B packed into rows padded to 64 bytes: k * ceil(n * sizeof(T)
// / 64) * 64 bytes, 64-byte aligned.
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

struct CpuKernels {
  const char* isa;  // "baseline", "avx2" or "avx512"

  // small_gemm_*: the product described by SmallGemmArgs, register-blocked
  // for the level's vector registers. Fused levels round each k-step once
  // instead of twice, so elementwise |C - C_baseline| <= 2 (k + 2) eps
  // (|alpha| |A|·|B| + |beta C|), eps of T.
  void (*small_gemm_f32)(const SmallGemmArgs<float>& args);
  void (*small_gemm_f64)(const SmallGemmArgs<double>& args);

  // philox_bits writes the random words of blocks first .. first +
  // kPhiloxBlocks - 1 of RandomStream{seed, stream, step} (engine/philox.h):
  // out[4 * b + j] = word j of block first + b. Integer arithmetic:
  // bit-identical on every level.
  void (*philox_bits)(uint64_t seed, uint32_t stream, uint32_t step, uint64_t first,
                      uint32_t* out);
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

#endif  // DAGRAD_OPS_KERNELS_CPU_KERNELS_H_
