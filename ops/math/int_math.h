// ops/math/int_math.h
//
// Integer arithmetic that wraps around (two's complement), as numpy and
// PyTorch do, instead of C++'s undefined behaviour on signed overflow. For
// floating-point types these are the ordinary operations. Shared by the CPU
// and CUDA kernels.
//
//   WrapAdd<int32_t>(INT32_MAX, 1) == INT32_MIN

#ifndef DAGRAD_OPS_MATH_INT_MATH_H_
#define DAGRAD_OPS_MATH_INT_MATH_H_

#include <type_traits>

#include "engine/device/host_device.h"

namespace dagrad {

template <typename T>
DAGRAD_HOST_DEVICE inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
DAGRAD_HOST_DEVICE inline T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}

template <typename T>
DAGRAD_HOST_DEVICE inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

// WrapDiv truncates toward zero; the one overflowing case, MIN / -1, wraps
// to MIN (x86 would trap on it). The divisor must not be 0 for integers.
template <typename T>
DAGRAD_HOST_DEVICE inline T WrapDiv(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return b == T(-1) ? WrapSub(T(0), a) : a / b;
  } else {
    return a / b;
  }
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_MATH_INT_MATH_H_
