// ops/math/cumsum_math.h
//
// One line of cumsum (ops/cumsum.h), defined once for the CPU kernel
// (ops/cumsum.cc) and the CUDA kernel (ops/cuda/cumsum.cu), so that both
// give the same bits: the n elements of the line, `inner` apart, summed in
// order (from the end when reverse) in the accumulator: double for floats
// (torch's CPU kernel's, rounded once per element), the unsigned type of
// the same width for integers (so that an overflow wraps, defined).

#ifndef DAGRAD_OPS_MATH_CUMSUM_MATH_H_
#define DAGRAD_OPS_MATH_CUMSUM_MATH_H_

#include <cstdint>
#include <type_traits>

#include "engine/device/host_device.h"

namespace dagrad {

template <typename T, bool = std::is_floating_point_v<T>>
struct CumSumAccumulator {
  using type = double;
};
template <typename T>
struct CumSumAccumulator<T, false> {
  using type = std::make_unsigned_t<T>;
};

// CumSumLineStart is where line `line` of `outer` blocks of n elements,
// `inner` apart, begins (lines numbered block by block).
DAGRAD_HOST_DEVICE inline int64_t CumSumLineStart(int64_t line, int64_t n, int64_t inner) {
  return (line / inner) * n * inner + line % inner;
}

template <typename T>
DAGRAD_HOST_DEVICE inline void CumSumLine(const T* x, T* y, int64_t n, int64_t inner,
                                          bool exclusive, bool reverse) {
  using A = typename CumSumAccumulator<T>::type;
  A sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t at = (reverse ? n - 1 - j : j) * inner;
    const A value = static_cast<A>(x[at]);
    if (!exclusive) sum += value;
    y[at] = static_cast<T>(sum);
    if (exclusive) sum += value;
  }
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_MATH_CUMSUM_MATH_H_
