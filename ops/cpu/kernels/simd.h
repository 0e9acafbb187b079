// ops/cpu/kernels/simd.h
//
// The vector types of the ISA level this translation unit is compiled for
// (the compiler's target macros decide): Simd<float>, Simd<double> and
// SimdU32, each a set of static functions over one register type, in the
// manner of ATen's Vectorized<T> but only what the kernels use. Everything
// lives in namespace dagrad::kernels::DAGRAD_ISA, so each level's copy has
// its own symbols.
//
//   using V = Simd<float>;
//   V::Reg acc = V::Zero();
//   acc = V::MulAdd(V::Set1(a), V::Load(b), acc);   // fused on avx2/avx512
//
// MulAdd is the FMA rule in one place: fused (one rounding) where the level
// has FMA, a*b then +c (two roundings, exactly the written expression) at
// the baseline, which is the reference the others are tested against.

#ifndef DAGRAD_OPS_CPU_KERNELS_SIMD_H_
#define DAGRAD_OPS_CPU_KERNELS_SIMD_H_

#include <cstdint>

#if defined(__AVX512F__)
// GCC 12's own _mm512_undefined_epi32 trips -Wuninitialized (a known false
// positive in its headers' inline code).
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#if defined(__SSE2__)
#include <immintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#ifndef DAGRAD_ISA
#error "ops/cpu/kernels/ sources are compiled once per ISA level with -DDAGRAD_ISA=<level>"
#endif

namespace dagrad::kernels::DAGRAD_ISA {

template <typename T>
struct Simd;

#if defined(__AVX512F__)
template <>
struct Simd<float> {
  using Reg = __m512;
  static constexpr int kLanes = 16;
  static Reg Zero() { return _mm512_setzero_ps(); }
  static Reg Set1(float x) { return _mm512_set1_ps(x); }
  static Reg Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg Mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg MulAdd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
};
template <>
struct Simd<double> {
  using Reg = __m512d;
  static constexpr int kLanes = 8;
  static Reg Zero() { return _mm512_setzero_pd(); }
  static Reg Set1(double x) { return _mm512_set1_pd(x); }
  static Reg Load(const double* p) { return _mm512_loadu_pd(p); }
  static void Store(double* p, Reg v) { _mm512_storeu_pd(p, v); }
  static Reg Mul(Reg a, Reg b) { return _mm512_mul_pd(a, b); }
  static Reg MulAdd(Reg a, Reg b, Reg c) { return _mm512_fmadd_pd(a, b, c); }
};
#elif defined(__AVX2__) && defined(__FMA__)
template <>
struct Simd<float> {
  using Reg = __m256;
  static constexpr int kLanes = 8;
  static Reg Zero() { return _mm256_setzero_ps(); }
  static Reg Set1(float x) { return _mm256_set1_ps(x); }
  static Reg Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg Mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg MulAdd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
};
template <>
struct Simd<double> {
  using Reg = __m256d;
  static constexpr int kLanes = 4;
  static Reg Zero() { return _mm256_setzero_pd(); }
  static Reg Set1(double x) { return _mm256_set1_pd(x); }
  static Reg Load(const double* p) { return _mm256_loadu_pd(p); }
  static void Store(double* p, Reg v) { _mm256_storeu_pd(p, v); }
  static Reg Mul(Reg a, Reg b) { return _mm256_mul_pd(a, b); }
  static Reg MulAdd(Reg a, Reg b, Reg c) { return _mm256_fmadd_pd(a, b, c); }
};
#elif defined(__SSE2__)
template <>
struct Simd<float> {
  using Reg = __m128;
  static constexpr int kLanes = 4;
  static Reg Zero() { return _mm_setzero_ps(); }
  static Reg Set1(float x) { return _mm_set1_ps(x); }
  static Reg Load(const float* p) { return _mm_loadu_ps(p); }
  static void Store(float* p, Reg v) { _mm_storeu_ps(p, v); }
  static Reg Mul(Reg a, Reg b) { return _mm_mul_ps(a, b); }
  static Reg MulAdd(Reg a, Reg b, Reg c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
};
template <>
struct Simd<double> {
  using Reg = __m128d;
  static constexpr int kLanes = 2;
  static Reg Zero() { return _mm_setzero_pd(); }
  static Reg Set1(double x) { return _mm_set1_pd(x); }
  static Reg Load(const double* p) { return _mm_loadu_pd(p); }
  static void Store(double* p, Reg v) { _mm_storeu_pd(p, v); }
  static Reg Mul(Reg a, Reg b) { return _mm_mul_pd(a, b); }
  static Reg MulAdd(Reg a, Reg b, Reg c) { return _mm_add_pd(_mm_mul_pd(a, b), c); }
};
#elif defined(__ARM_NEON) && defined(__aarch64__)
// aarch64's baseline: NEON is part of every ARMv8-A CPU. Not fused, like
// x86-64's baseline.
template <>
struct Simd<float> {
  using Reg = float32x4_t;
  static constexpr int kLanes = 4;
  static Reg Zero() { return vdupq_n_f32(0.0f); }
  static Reg Set1(float x) { return vdupq_n_f32(x); }
  static Reg Load(const float* p) { return vld1q_f32(p); }
  static void Store(float* p, Reg v) { vst1q_f32(p, v); }
  static Reg Mul(Reg a, Reg b) { return vmulq_f32(a, b); }
  static Reg MulAdd(Reg a, Reg b, Reg c) { return vaddq_f32(vmulq_f32(a, b), c); }
};
template <>
struct Simd<double> {
  using Reg = float64x2_t;
  static constexpr int kLanes = 2;
  static Reg Zero() { return vdupq_n_f64(0.0); }
  static Reg Set1(double x) { return vdupq_n_f64(x); }
  static Reg Load(const double* p) { return vld1q_f64(p); }
  static void Store(double* p, Reg v) { vst1q_f64(p, v); }
  static Reg Mul(Reg a, Reg b) { return vmulq_f64(a, b); }
  static Reg MulAdd(Reg a, Reg b, Reg c) { return vaddq_f64(vmulq_f64(a, b), c); }
};
#else
// Any other CPU: one lane, plain arithmetic.
template <typename T>
struct Simd {
  using Reg = T;
  static constexpr int kLanes = 1;
  static Reg Zero() { return T(0); }
  static Reg Set1(T x) { return x; }
  static Reg Load(const T* p) { return *p; }
  static void Store(T* p, Reg v) { *p = v; }
  static Reg Mul(Reg a, Reg b) { return a * b; }
  static Reg MulAdd(Reg a, Reg b, Reg c) { return a * b + c; }
};
#endif

}  // namespace dagrad::kernels::DAGRAD_ISA

#endif  // DAGRAD_OPS_CPU_KERNELS_SIMD_H_
