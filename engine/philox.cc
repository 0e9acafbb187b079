// RandomStream::FillBits: Philox4x32-10 for 64 blocks at once (four sets of
// 16 AVX-512 lanes, interleaved).

#include "engine/philox.h"

#if defined(__AVX512F__)
// GCC 12's own _mm512_undefined_epi32 trips -Wuninitialized (a known false
// positive in its headers' inline code).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#endif

namespace dagrad {

#if defined(__AVX512F__)
namespace {

// (hi, lo) halves of the 32x32 -> 64-bit products of each lane with m.
void MulHiLo(__m512i a, __m512i m, __m512i* hi, __m512i* lo) {
  const __m512i even = _mm512_mul_epu32(a, m);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  *lo = _mm512_mullo_epi32(a, m);
}

// The rounds of 16 blocks held in four vectors (one per counter word).
struct Blocks16 {
  __m512i c0, c1, c2, c3;
};

Blocks16 Counters(uint64_t first, uint32_t stream, uint32_t step) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  // Group numbers first + l as 64 bits: low words, and high words with carry.
  const __m512i lo_first = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first)));
  Blocks16 b;
  b.c0 = _mm512_add_epi32(lo_first, lane);
  const __mmask16 carry = _mm512_cmplt_epu32_mask(b.c0, lo_first);
  const __m512i hi_first = _mm512_set1_epi32(static_cast<int>(first >> 32));
  b.c1 = _mm512_mask_add_epi32(hi_first, carry, hi_first, _mm512_set1_epi32(1));
  b.c2 = _mm512_set1_epi32(static_cast<int>(stream));
  b.c3 = _mm512_set1_epi32(static_cast<int>(step));
  return b;
}

inline void Round(Blocks16& b, __m512i m0, __m512i m1, __m512i k0, __m512i k1) {
  __m512i hi0, lo0, hi1, lo1;
  MulHiLo(b.c0, m0, &hi0, &lo0);
  MulHiLo(b.c2, m1, &hi1, &lo1);
  b.c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, b.c1), k0);
  b.c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, b.c3), k1);
  b.c1 = lo1;
  b.c3 = lo0;
}

// Store interleaves the four words of each block: out[4l + j] = c_j[l].
void Store(const Blocks16& b, uint32_t* out) {
  const __m512i t0 = _mm512_unpacklo_epi32(b.c0, b.c1), t1 = _mm512_unpackhi_epi32(b.c0, b.c1);
  const __m512i t2 = _mm512_unpacklo_epi32(b.c2, b.c3), t3 = _mm512_unpackhi_epi32(b.c2, b.c3);
  const __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
  const __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
  const __m512i v0 = _mm512_shuffle_i32x4(u0, u1, 0x44), v1 = _mm512_shuffle_i32x4(u2, u3, 0x44);
  const __m512i v2 = _mm512_shuffle_i32x4(u0, u1, 0xEE), v3 = _mm512_shuffle_i32x4(u2, u3, 0xEE);
  _mm512_storeu_si512(out, _mm512_shuffle_i32x4(v0, v1, 0x88));
  _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(v0, v1, 0xDD));
  _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(v2, v3, 0x88));
  _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(v2, v3, 0xDD));
}

}  // namespace

// Four independent sets of 16 blocks, interleaved: each round is a chain of
// dependent multiplies and shuffles, and four chains hide its latency.
void RandomStream::FillBits(uint64_t first, uint32_t* out) const {
  static_assert(kLanes == 64);
  Blocks16 x[4];
  for (int s = 0; s < 4; ++s) x[s] = Counters(first + 16 * s, stream, step);
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const __m512i vk0 = _mm512_set1_epi32(static_cast<int>(k0));
    const __m512i vk1 = _mm512_set1_epi32(static_cast<int>(k1));
    for (int s = 0; s < 4; ++s) Round(x[s], m0, m1, vk0, vk1);
  }
  for (int s = 0; s < 4; ++s) Store(x[s], out + 64 * s);
}
#else
void RandomStream::FillBits(uint64_t first, uint32_t* out) const {
  for (int l = 0; l < kLanes; ++l) {
    const PhiloxBlock b = Block(first + l);
    for (int j = 0; j < 4; ++j) out[4 * l + j] = b.v[j];
  }
}
#endif

}  // namespace dagrad
