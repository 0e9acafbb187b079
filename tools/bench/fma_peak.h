// tools/bench/fma_peak.h
//
// PeakMultiplyAdds runs `rounds` rounds of kChains independent chains of
// vector multiply-adds at one ISA level and returns how many floating-point
// operations (2 per lane per multiply-add) that was: the core's peak float
// rate at that level, the ceiling no product kernel (BLIS's or ours) can pass.
// tools/bench/PERFORMANCE.md divides a step's product FLOPs by it to show
// which speed targets a CPU can reach at all.
//
//   avx512    fused multiply-adds on 16-float registers;
//   avx2      fused multiply-adds on 8-float registers (AVX2 + FMA);
//   baseline  the level's own arithmetic: on x86-64 a multiply and an add on
//             4-float SSE registers (no FMA), on aarch64 NEON's fused
//             multiply-add on 4 floats.
//
// kChains chains hide the multiply-add latency (4 cycles on Zen 4 and recent
// Intel cores, 2 pipes: 8 chains needed) with room to spare.
//
//   float sink = 0;
//   const double flops = PeakMultiplyAdds(CpuIsa::kAvx2, 1 << 20, &sink);  // time it

#ifndef DAGRAD_TOOLS_BENCH_FMA_PEAK_H_
#define DAGRAD_TOOLS_BENCH_FMA_PEAK_H_

#include <cstdint>
#include <cstring>

#include "ops/cpu/internal/cpu_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace dagrad {

inline constexpr int kChains = 12;

// SumLanes adds up every lane of the chains (any register type, read as
// floats), so that the work cannot be dropped.
template <typename Reg>
float SumLanes(const Reg (&acc)[kChains]) {
  float lanes[kChains * sizeof(Reg) / sizeof(float)];  // every float of every chain
  std::memcpy(lanes, acc, sizeof(acc));
  float sum = 0;
  for (float x : lanes) sum += x;
  return sum;
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) inline float ChainsAvx512(int64_t rounds) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001f * c);
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  return SumLanes(acc);
}

__attribute__((target("avx2,fma"))) inline float ChainsAvx2(int64_t rounds) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.001f * c);
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  return SumLanes(acc);
}

inline float ChainsBaseline(int64_t rounds) {
  __m128 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm_set1_ps(0.001f * c);
  const __m128 a = _mm_set1_ps(0.999f), b = _mm_set1_ps(0.001f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm_add_ps(_mm_mul_ps(acc[c], a), b);
  }
  return SumLanes(acc);
}
#elif defined(__aarch64__)
inline float ChainsBaseline(int64_t rounds) {
  float32x4_t acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = vdupq_n_f32(0.001f * c);
  const float32x4_t a = vdupq_n_f32(0.999f), b = vdupq_n_f32(0.001f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int c = 0; c < kChains; ++c) acc[c] = vfmaq_f32(b, acc[c], a);
  }
  return SumLanes(acc);
}
#endif

// PeakMultiplyAdds needs a level this CPU runs (CpuIsaRunnable); it adds the
// chains' result to *sink.
inline double PeakMultiplyAdds(CpuIsa isa, int64_t rounds, float* sink) {
  int lanes = 4;
#if defined(__x86_64__)
  if (isa == CpuIsa::kAvx512) {
    *sink += ChainsAvx512(rounds);
    lanes = 16;
  } else if (isa == CpuIsa::kAvx2) {
    *sink += ChainsAvx2(rounds);
    lanes = 8;
  } else {
    *sink += ChainsBaseline(rounds);
  }
#elif defined(__aarch64__)
  *sink += ChainsBaseline(rounds);
#endif
  return 2.0 * lanes * kChains * static_cast<double>(rounds);
}

}  // namespace dagrad

#endif  // DAGRAD_TOOLS_BENCH_FMA_PEAK_H_
