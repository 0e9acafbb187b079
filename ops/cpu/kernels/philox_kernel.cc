// Philox4x32-10 (engine/philox.h) for kPhiloxBlocks blocks at once, one
// block per vector lane. Each round is a chain of dependent multiplies and
// shuffles, so several independent sets of blocks (chains) are interleaved
// to hide its latency, as many as pay off: a chain is four
// state registers plus about four temporaries.
//   avx512 (32 zmm): 4 chains of 16 lanes (0.29 -> 0.20 ns per word from 2
//                    to 4 chains, one Zen 5 core);
//   avx2 (16 ymm):   4 chains of 8: 16 state registers plus temporaries
//                    spill a few to L1, yet beat 2 chains' idle
//                    multipliers (1.47 -> 1.88 G words/s, one Zen 5 core);
//   baseline (16 xmm): 2 chains of 4; aarch64 (32 q): 4 chains of 4.
// Integer arithmetic only: every level's words are bit-identical.

#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/cpu/kernels/level.h"
#include "ops/cpu/kernels/simd.h"
#include "ops/math/dropout_math.h"

namespace dagrad::kernels::DAGRAD_ISA {
namespace {

// SimdU32: 32-bit lanes. Add wraps around; MulHiLo returns the high and low halves of each
// lane's 32 x 32 -> 64-bit product; Store4 interleaves four vectors c0..c3
// as out[4 l + j] = c_j[l].
#if defined(__AVX512F__)
constexpr int kChains = 4;
struct SimdU32 {
  using Reg = __m512i;
  static constexpr int kLanes = 16;
  static Reg Set1(uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static Reg Load(const uint32_t* p) { return _mm512_loadu_si512(p); }
  static Reg Add(Reg a, Reg b) { return _mm512_add_epi32(a, b); }
  static Reg Xor(Reg a, Reg b) { return _mm512_xor_si512(a, b); }
  static void MulHiLo(Reg a, Reg m, Reg* hi, Reg* lo) {
    const Reg even = _mm512_mul_epu32(a, m);
    const Reg odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mullo_epi32(a, m);
  }
  static void Store4(Reg c0, Reg c1, Reg c2, Reg c3, uint32_t* out) {
    const Reg t0 = _mm512_unpacklo_epi32(c0, c1), t1 = _mm512_unpackhi_epi32(c0, c1);
    const Reg t2 = _mm512_unpacklo_epi32(c2, c3), t3 = _mm512_unpackhi_epi32(c2, c3);
    const Reg u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
    const Reg u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
    const Reg v0 = _mm512_shuffle_i32x4(u0, u1, 0x44), v1 = _mm512_shuffle_i32x4(u2, u3, 0x44);
    const Reg v2 = _mm512_shuffle_i32x4(u0, u1, 0xEE), v3 = _mm512_shuffle_i32x4(u2, u3, 0xEE);
    _mm512_storeu_si512(out, _mm512_shuffle_i32x4(v0, v1, 0x88));
    _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(v0, v1, 0xDD));
    _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(v2, v3, 0x88));
    _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(v2, v3, 0xDD));
  }
};
#elif defined(__AVX2__)
constexpr int kChains = 4;
struct SimdU32 {
  using Reg = __m256i;
  static constexpr int kLanes = 8;
  static Reg Set1(uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
  static Reg Load(const uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const Reg*>(p)); }
  static Reg Add(Reg a, Reg b) { return _mm256_add_epi32(a, b); }
  static Reg Xor(Reg a, Reg b) { return _mm256_xor_si256(a, b); }
  static void MulHiLo(Reg a, Reg m, Reg* hi, Reg* lo) {
    const Reg even = _mm256_mul_epu32(a, m);
    const Reg odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    // One low multiply instead of a shift and a blend: 1.84 -> 2.13 G
    // words/s on one Zen 5 core (on Intel before Ice Lake vpmulld is two
    // micro-ops, about a wash).
    *lo = _mm256_mullo_epi32(a, m);
  }
  static void Store4(Reg c0, Reg c1, Reg c2, Reg c3, uint32_t* out) {
    // Within each 128-bit half: u_b = block b (b = 0..3 low half, 4..7 high).
    const Reg t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    const Reg t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    const Reg u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const Reg u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    auto* o = reinterpret_cast<Reg*>(out);
    _mm256_storeu_si256(o, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(u2, u3, 0x31));
  }
};
#elif defined(__SSE2__)
constexpr int kChains = 2;
struct SimdU32 {
  using Reg = __m128i;
  static constexpr int kLanes = 4;
  static Reg Set1(uint32_t x) { return _mm_set1_epi32(static_cast<int>(x)); }
  static Reg Load(const uint32_t* p) { return _mm_loadu_si128(reinterpret_cast<const Reg*>(p)); }
  static Reg Add(Reg a, Reg b) { return _mm_add_epi32(a, b); }
  static Reg Xor(Reg a, Reg b) { return _mm_xor_si128(a, b); }
  static void MulHiLo(Reg a, Reg m, Reg* hi, Reg* lo) {
    // SSE2 has no 32-bit blend or low multiply: combine the even and odd
    // lanes' 64-bit products with masks.
    const Reg even = _mm_mul_epu32(a, m);
    const Reg odd = _mm_mul_epu32(_mm_srli_epi64(a, 32), m);
    const Reg high_words = _mm_set1_epi64x(static_cast<int64_t>(0xFFFFFFFF00000000ull));
    *hi = _mm_or_si128(_mm_srli_epi64(even, 32), _mm_and_si128(odd, high_words));
    *lo = _mm_or_si128(_mm_andnot_si128(high_words, even), _mm_slli_epi64(odd, 32));
  }
  static void Store4(Reg c0, Reg c1, Reg c2, Reg c3, uint32_t* out) {
    const Reg t0 = _mm_unpacklo_epi32(c0, c1), t1 = _mm_unpackhi_epi32(c0, c1);
    const Reg t2 = _mm_unpacklo_epi32(c2, c3), t3 = _mm_unpackhi_epi32(c2, c3);
    auto* o = reinterpret_cast<Reg*>(out);
    _mm_storeu_si128(o, _mm_unpacklo_epi64(t0, t2));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi64(t0, t2));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi64(t1, t3));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi64(t1, t3));
  }
};
#elif defined(__ARM_NEON) && defined(__aarch64__)
constexpr int kChains = 4;
struct SimdU32 {
  using Reg = uint32x4_t;
  static constexpr int kLanes = 4;
  static Reg Set1(uint32_t x) { return vdupq_n_u32(x); }
  static Reg Load(const uint32_t* p) { return vld1q_u32(p); }
  static Reg Add(Reg a, Reg b) { return vaddq_u32(a, b); }
  static Reg Xor(Reg a, Reg b) { return veorq_u32(a, b); }
  static void MulHiLo(Reg a, Reg m, Reg* hi, Reg* lo) {
    const uint64x2_t p_lo = vmull_u32(vget_low_u32(a), vget_low_u32(m));
    const uint64x2_t p_hi = vmull_high_u32(a, m);
    *hi = vuzp2q_u32(vreinterpretq_u32_u64(p_lo), vreinterpretq_u32_u64(p_hi));
    *lo = vmulq_u32(a, m);
  }
  static void Store4(Reg c0, Reg c1, Reg c2, Reg c3, uint32_t* out) {
    vst4q_u32(out, (uint32x4x4_t){{c0, c1, c2, c3}});
  }
};
#else
constexpr int kChains = 1;
struct SimdU32 {
  using Reg = uint32_t;
  static constexpr int kLanes = 1;
  static Reg Set1(uint32_t x) { return x; }
  static Reg Load(const uint32_t* p) { return *p; }
  static Reg Add(Reg a, Reg b) { return a + b; }
  static Reg Xor(Reg a, Reg b) { return a ^ b; }
  static void MulHiLo(Reg a, Reg m, Reg* hi, Reg* lo) {
    const uint64_t p = static_cast<uint64_t>(a) * m;
    *hi = static_cast<uint32_t>(p >> 32);
    *lo = static_cast<uint32_t>(p);
  }
  static void Store4(Reg c0, Reg c1, Reg c2, Reg c3, uint32_t* out) {
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
  }
};
#endif

using U = SimdU32;
constexpr int kPerPass = kChains * U::kLanes;  // blocks per pass of the rounds
static_assert(kPhiloxBlocks % kPerPass == 0);

// The four counter words of kLanes consecutive blocks.
struct Blocks {
  U::Reg c0, c1, c2, c3;
};

// Lane numbers 0, 1, ..., loaded from memory (a constant, not a series of
// scalar stores, which would stall the vector load).
alignas(64) constexpr uint32_t kIota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static_assert(U::kLanes <= 16);

// Counters of blocks first .. first + kLanes - 1. The low word does not wrap
// inside a call (the philox_bits contract, cpu_kernels.h).
Blocks Counters(uint64_t first, uint32_t stream, uint32_t step) {
  return {U::Add(U::Set1(static_cast<uint32_t>(first)), U::Load(kIota)),
          U::Set1(static_cast<uint32_t>(first >> 32)), U::Set1(stream), U::Set1(step)};
}

inline void Round(Blocks& b, U::Reg m0, U::Reg m1, U::Reg k0, U::Reg k1) {
  U::Reg hi0, lo0, hi1, lo1;
  U::MulHiLo(b.c0, m0, &hi0, &lo0);
  U::MulHiLo(b.c2, m1, &hi1, &lo1);
  b.c0 = U::Xor(U::Xor(hi1, b.c1), k0);
  b.c2 = U::Xor(U::Xor(hi0, b.c3), k1);
  b.c1 = lo1;
  b.c3 = lo0;
}

}  // namespace

void PhiloxBits(uint64_t seed, uint32_t stream, uint32_t step, uint64_t first, uint32_t* out) {
  const U::Reg m0 = U::Set1(0xD2511F53u), m1 = U::Set1(0xCD9E8D57u);
  for (int pass = 0; pass < kPhiloxBlocks; pass += kPerPass) {
    Blocks x[kChains];
    for (int s = 0; s < kChains; ++s) {
      x[s] = Counters(first + pass + s * U::kLanes, stream, step);
    }
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
      }
      const U::Reg vk0 = U::Set1(k0), vk1 = U::Set1(k1);
      for (int s = 0; s < kChains; ++s) Round(x[s], m0, m1, vk0, vk1);
    }
    for (int s = 0; s < kChains; ++s) {
      U::Store4(x[s].c0, x[s].c1, x[s].c2, x[s].c3, out + 4 * (pass + s * U::kLanes));
    }
  }
}

namespace {

template <typename T>
void Dropout(const DropoutArgs<T>& d, int64_t begin, int64_t end) {
  constexpr int64_t kChunk = 4 * kPhiloxBlocks;
  alignas(64) uint32_t bits[kChunk];
  for (int64_t c = begin; c < end; ++c) {
    PhiloxBits(d.seed, d.stream, d.step, static_cast<uint64_t>(c) * kPhiloxBlocks, bits);
    const int64_t base = c * kChunk;
    const int64_t len = d.n - base < kChunk ? d.n - base : kChunk;
    const T* x = d.x + base;
    T* y = d.y + base;
    // Locals, not d's fields: a store to y could alias d.scale, which would
    // keep the loop from vectorising.
    const uint32_t threshold = d.threshold;
    const T scale = d.scale;
    for (int64_t j = 0; j < len; ++j) y[j] = DropoutElement(x[j], bits[j], threshold, scale);
  }
}

}  // namespace

void DropoutF32(const DropoutArgs<float>& args, int64_t begin, int64_t end) {
  Dropout(args, begin, end);
}
void DropoutF64(const DropoutArgs<double>& args, int64_t begin, int64_t end) {
  Dropout(args, begin, end);
}

}  // namespace dagrad::kernels::DAGRAD_ISA
