// engine/philox.h
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11): a counter-based generator. Output is a pure function of a
// 128-bit counter and a 64-bit key, so any element's random number can be
// recomputed anywhere — in a backward pass, or on the GPU — without storing
// or sharing state. This header compiles for both host and CUDA device code,
// which is what makes dropout masks bit-identical across backends.
//
//   PhiloxBlock r = Philox4x32_10({c0, c1, c2, c3}, k0, k1);
//   float u = UniformFromBits(r.v[0]);   // in [0, 1)

#ifndef DAGRAD_ENGINE_PHILOX_H_
#define DAGRAD_ENGINE_PHILOX_H_

#include <cstdint>

#include "engine/device/host_device.h"

namespace dagrad {

struct PhiloxBlock {
  uint32_t v[4];
};

// The four words are kept in scalars, not indexed through the array: each
// round then lives in registers, also under AddressSanitizer, which would
// otherwise check every access to the counter's stack slot (a GPT-2 124M
// initialisation took 2 minutes under ASan, 85% of it here).
DAGRAD_HOST_DEVICE inline PhiloxBlock Philox4x32_10(PhiloxBlock counter,
                                                    uint32_t key0,
                                                    uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = counter.v[0], c1 = counter.v[1], c2 = counter.v[2], c3 = counter.v[3];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kW0;
      key1 += kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ key0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ key1;
    c3 = lo0;
  }
  return {{c0, c1, c2, c3}};
}

// UniformFromBits maps 32 random bits to a float in [0, 1) using the top 24
// bits, so the value is exact in float32 and identical on every backend.
DAGRAD_HOST_DEVICE inline float UniformFromBits(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// RandomStream names one use of the generator: a key (the seed) and the
// upper half of the counter (a stream id such as a node id, and a step). The
// lower half of the counter is the element index divided by four. The CPU
// computes many blocks at once with the vectorised philox_bits kernel
// (ops/cpu/kernels/cpu_kernels.h), which gives the same numbers.
struct RandomStream {
  uint64_t seed;
  uint32_t stream;
  uint32_t step;

  // Block returns the four 32-bit values that cover elements 4*group ..
  // 4*group+3.
  DAGRAD_HOST_DEVICE PhiloxBlock Block(uint64_t group) const {
    PhiloxBlock counter = {{static_cast<uint32_t>(group),
                            static_cast<uint32_t>(group >> 32), stream, step}};
    return Philox4x32_10(counter, static_cast<uint32_t>(seed),
                         static_cast<uint32_t>(seed >> 32));
  }
  // Bits returns the random bits of element `index`.
  DAGRAD_HOST_DEVICE uint32_t Bits(uint64_t index) const {
    return Block(index >> 2).v[index & 3];
  }
};

// StableHash64 is FNV-1a over a byte string: a hash that never changes
// between builds or platforms, for turning names into stream ids.
inline uint64_t StableHash64(const char* data, uint64_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_PHILOX_H_
