// ops/cpu/internal/philox_words.h
//
// PhiloxWords: the random words of any run of elements, from the vectorised
// philox_bits kernel (ops/cpu/kernels/cpu_kernels.h), which takes whole
// blocks of four words whose block numbers must not wrap their low 32 bits
// in one call. Dropout over a data-parallel slice and fused attention's
// dropout start at any element, so they read their words through this.
//
//   // setup: Kernel
//   DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
//   uint32_t words[10];
//   PhiloxWords(*kernels, rs, 4093, 10, words);  // words[i] == rs.Bits(4093 + i)

#ifndef DAGRAD_OPS_CPU_INTERNAL_PHILOX_WORDS_H_
#define DAGRAD_OPS_CPU_INTERNAL_PHILOX_WORDS_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/philox.h"
#include "ops/cpu/kernels/cpu_kernels.h"

namespace dagrad {

// PhiloxWords writes the words of elements [begin, begin + n) of `rs` to
// out: out[i] == rs.Bits(begin + i).
inline void PhiloxWords(const CpuKernels& kernels, const RandomStream& rs, uint64_t begin,
                        int64_t n, uint32_t* out) {
  alignas(64) uint32_t buffer[4 * kPhiloxBlocks];
  uint64_t block = begin / 4;
  int64_t skip = static_cast<int64_t>(begin % 4);
  while (n > 0) {
    uint64_t first = block;
    // The calls start at a multiple of kPhiloxBlocks where the low 32 bits
    // of the block numbers would wrap within one.
    if ((first & 0xffffffffu) > 0xffffffffu - (kPhiloxBlocks - 1)) {
      skip += static_cast<int64_t>(first % kPhiloxBlocks) * 4;
      first -= first % kPhiloxBlocks;
    }
    kernels.philox_bits(rs.seed, rs.stream, rs.step, first, buffer);
    const int64_t take = std::min<int64_t>(n, 4 * kPhiloxBlocks - skip);
    std::memcpy(out, buffer + skip, take * sizeof(uint32_t));
    out += take;
    n -= take;
    block = first + kPhiloxBlocks;
    skip = 0;
  }
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_INTERNAL_PHILOX_WORDS_H_
