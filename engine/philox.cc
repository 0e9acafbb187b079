// RandomStream::FillBits: Philox4x32-10 for sixteen blocks at once.

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

}  // namespace

void RandomStream::FillBits(uint64_t first, uint32_t* out) const {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  // Group numbers first + l as 64 bits: low words, and high words with carry.
  const __m512i lo_first = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first)));
  __m512i c0 = _mm512_add_epi32(lo_first, lane);
  const __mmask16 carry = _mm512_cmplt_epu32_mask(c0, lo_first);
  __m512i c1 = _mm512_mask_add_epi32(_mm512_set1_epi32(static_cast<int>(first >> 32)), carry,
                                     _mm512_set1_epi32(static_cast<int>(first >> 32)),
                                     _mm512_set1_epi32(1));
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(stream));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(step));
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    __m512i hi0, lo0, hi1, lo1;
    MulHiLo(c0, m0, &hi0, &lo0);
    MulHiLo(c2, m1, &hi1, &lo1);
    c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
    c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
    c1 = lo1;
    c3 = lo0;
  }
  // Interleave the four words of each block: out[4l + j] = c_j[l].
  const __m512i t0 = _mm512_unpacklo_epi32(c0, c1), t1 = _mm512_unpackhi_epi32(c0, c1);
  const __m512i t2 = _mm512_unpacklo_epi32(c2, c3), t3 = _mm512_unpackhi_epi32(c2, c3);
  const __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
  const __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
  const __m512i v0 = _mm512_shuffle_i32x4(u0, u1, 0x44), v1 = _mm512_shuffle_i32x4(u2, u3, 0x44);
  const __m512i v2 = _mm512_shuffle_i32x4(u0, u1, 0xEE), v3 = _mm512_shuffle_i32x4(u2, u3, 0xEE);
  _mm512_storeu_si512(out, _mm512_shuffle_i32x4(v0, v1, 0x88));
  _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(v0, v1, 0xDD));
  _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(v2, v3, 0x88));
  _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(v2, v3, 0xDD));
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
