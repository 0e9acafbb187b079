// engine/bfloat16.h
//
// The two 16-bit float formats dagrad stores, and their exact conversion
// rules, written once for the CPU and the CUDA kernels (DAGRAD_HOST_DEVICE):
//
//   - BFloat16: 1 sign, 8 exponent and 7 fraction bits, float32's range
//     with 8 significant bits (bfloat16, torch.bfloat16, safetensors BF16);
//   - Float16: IEEE 754 binary16, 5 exponent and 10 fraction bits, largest
//     finite value 65504 (float16, torch.float16, safetensors F16).
//
// Both are storage types: plain structs of their bits, with no arithmetic,
// so that every conversion is written out at its call. The rules:
//   - widening to float32 (and so to float64) is exact;
//   - narrowing rounds to nearest, ties to even (RNE), as torch does; a
//     value at or beyond the largest finite value plus half its spacing
//     becomes +-inf; subnormals are kept, never flushed;
//   - a NaN stays a NaN with its sign: the top payload bits are kept and
//     the quiet bit set, so no NaN becomes an infinity (torch 1.13 gives
//     every NaN one pattern, 0xffff, whatever its sign);
//   - from float64 and from integers the rounding is single and correct,
//     never double: the value is first rounded to float32 by round-to-odd,
//     which keeps enough bits (24 >= 2 x 11 + 2) for the final RNE to give
//     the nearest 16-bit value (torch rounds a float64 to float32 first,
//     RNE, and can land on a tie that was none: 1 + 2^-8 + 2^-30 becomes
//     1 there, 1.0078125 here).
//
//   BFloat16 h = FloatToBFloat16(1.00390625f);   // a tie: rounds to even, 1.0
//   float back = BFloat16ToFloat(h);             // 1.0f, exactly
//   Float16 big = FloatToFloat16(70000.0f);      // +inf: beyond 65504

#ifndef DAGRAD_ENGINE_BFLOAT16_H_
#define DAGRAD_ENGINE_BFLOAT16_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/device/host_device.h"

namespace dagrad {

// BFloat16 holds the bits of one bfloat16 value.
struct BFloat16 {
  uint16_t bits = 0;
};

// Float16 holds the bits of one IEEE binary16 value.
struct Float16 {
  uint16_t bits = 0;
};

static_assert(sizeof(BFloat16) == 2 && sizeof(Float16) == 2, "16-bit storage types");

namespace float16_internal {

DAGRAD_HOST_DEVICE inline uint32_t BitsOf(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

DAGRAD_HOST_DEVICE inline float FloatOf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

DAGRAD_HOST_DEVICE inline uint64_t BitsOf(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
  return u;
}

// IsNaNBits is true for the bits of a float32 NaN.
DAGRAD_HOST_DEVICE inline bool IsNaNBits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

}  // namespace float16_internal

// BFloat16ToFloat widens `x` to float32, exactly.
DAGRAD_HOST_DEVICE inline float BFloat16ToFloat(BFloat16 x) {
  return float16_internal::FloatOf(static_cast<uint32_t>(x.bits) << 16);
}

// FloatToBFloat16 rounds `f` to the nearest bfloat16, ties to even.
DAGRAD_HOST_DEVICE inline BFloat16 FloatToBFloat16(float f) {
  uint32_t u = float16_internal::BitsOf(f);
  if (float16_internal::IsNaNBits(u)) return {static_cast<uint16_t>((u >> 16) | 0x0040u)};
  // Adding just under half the dropped part's unit, plus the kept part's
  // lowest bit, carries exactly when RNE rounds up (into the exponent and
  // on to inf where the value overflows).
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<uint16_t>(u >> 16)};
}

// Float16ToFloat widens `x` to float32, exactly.
DAGRAD_HOST_DEVICE inline float Float16ToFloat(Float16 x) {
  const uint32_t sign = static_cast<uint32_t>(x.bits & 0x8000u) << 16;
  const uint32_t exponent = (x.bits >> 10) & 0x1fu, fraction = x.bits & 0x3ffu;
  if (exponent == 0x1f) {  // inf, or NaN with its payload
    return float16_internal::FloatOf(sign | 0x7f800000u | (fraction << 13));
  }
  if (exponent == 0) {  // zero or subnormal: fraction x 2^-24, a normal float32
    const float magnitude = static_cast<float>(fraction) * 5.9604644775390625e-8f;
    return float16_internal::FloatOf(sign | float16_internal::BitsOf(magnitude));
  }
  return float16_internal::FloatOf(sign | ((exponent + 112) << 23) | (fraction << 13));
}

// FloatToFloat16 rounds `f` to the nearest binary16, ties to even.
DAGRAD_HOST_DEVICE inline Float16 FloatToFloat16(float f) {
  const uint32_t u = float16_internal::BitsOf(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) {  // NaN: quiet, with its sign and top payload bits
    return {static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu))};
  }
  if (a >= 0x477ff000u) return {static_cast<uint16_t>(sign | 0x7c00u)};  // >= 65520: inf
  if (a >= 0x38800000u) {  // >= 2^-14: a normal binary16; rebias, then RNE
    uint32_t r = a - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return {static_cast<uint16_t>(sign | (r >> 13))};
  }
  if (a <= 0x33000000u) return {sign};  // <= 2^-25, half the least subnormal: 0
  // A subnormal: the 24-bit significand shifted to units of 2^-24, RNE.
  const uint32_t significand = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - (a >> 23);  // 14 ..= 24
  uint32_t q = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return {static_cast<uint16_t>(sign | q)};
}

// DoubleToFloatRoundToOdd rounds `d` to float32 by round-to-odd: toward
// zero, then the lowest fraction bit set when anything was dropped. A
// later RNE to a format of at most 11 significant bits then rounds as
// if from `d` itself. Overflow gives the largest finite float32 (odd),
// which any 16-bit format rounds on to inf. NaN keeps its sign.
DAGRAD_HOST_DEVICE inline float DoubleToFloatRoundToOdd(double d) {
  if (d != d) {
    const uint64_t u = float16_internal::BitsOf(d);
    return float16_internal::FloatOf(static_cast<uint32_t>(u >> 32 & 0x80000000u) |
                                     0x7fc00000u | static_cast<uint32_t>(u >> 29 & 0x3fffffu));
  }
  const double magnitude = d < 0 ? -d : d;
  if (magnitude > 3.4028234663852886e38 && magnitude <= 1.7976931348623157e308) {
    // Beyond float32's largest finite value (a conversion there is
    // undefined in C++): that value, odd already, with d's sign.
    return float16_internal::FloatOf((d < 0 ? 0x80000000u : 0u) | 0x7f7fffffu);
  }
  const float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) return f;
  uint32_t u = float16_internal::BitsOf(f);
  const double rounded = static_cast<double>(f);
  if ((rounded < 0 ? -rounded : rounded) > magnitude) --u;  // back toward zero
  return float16_internal::FloatOf(u | 1u);
}

// Int64ToFloatRoundToOdd is DoubleToFloatRoundToOdd for an integer, which
// a double need not hold exactly (above 2^53).
DAGRAD_HOST_DEVICE inline float Int64ToFloatRoundToOdd(int64_t x) {
  uint64_t magnitude = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  uint32_t scale = 0;
  bool dropped = false;
  while (magnitude >= (uint64_t{1} << 24)) {
    dropped = dropped || (magnitude & 1u);
    magnitude >>= 1;
    ++scale;
  }
  if (dropped) magnitude |= 1u;
  // magnitude < 2^24 and scale <= 40: both exact in float32.
  const float value =
      static_cast<float>(magnitude) * float16_internal::FloatOf((127u + scale) << 23);
  return x < 0 ? -value : value;
}

// DoubleToBFloat16 rounds `d` to the nearest bfloat16, ties to even, once.
DAGRAD_HOST_DEVICE inline BFloat16 DoubleToBFloat16(double d) {
  return FloatToBFloat16(DoubleToFloatRoundToOdd(d));
}

// DoubleToFloat16 rounds `d` to the nearest binary16, ties to even, once.
DAGRAD_HOST_DEVICE inline Float16 DoubleToFloat16(double d) {
  return FloatToFloat16(DoubleToFloatRoundToOdd(d));
}

namespace float16_internal {

template <typename T>
inline constexpr bool kIs16Bit = std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>;

// Widen is x as float32 for a 16-bit float, x itself otherwise.
template <typename T>
DAGRAD_HOST_DEVICE auto Widen(T x) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16ToFloat(x);
  } else if constexpr (std::is_same_v<T, Float16>) {
    return Float16ToFloat(x);
  } else {
    return x;
  }
}

// Narrow rounds a float, double or integer `x` to the 16-bit format Out.
template <typename Out, typename In>
DAGRAD_HOST_DEVICE Out Narrow(In x) {
  float odd;  // x rounded to float32 by round-to-odd (exact for float)
  if constexpr (std::is_same_v<In, float>) {
    odd = x;
  } else if constexpr (std::is_same_v<In, double>) {
    odd = DoubleToFloatRoundToOdd(x);
  } else {
    odd = Int64ToFloatRoundToOdd(static_cast<int64_t>(x));
  }
  if constexpr (std::is_same_v<Out, BFloat16>) {
    return FloatToBFloat16(odd);
  } else {
    return FloatToFloat16(odd);
  }
}

}  // namespace float16_internal

// kIsFloatElement<T> is true for the float element types: float, double,
// BFloat16 and Float16.
template <typename T>
inline constexpr bool kIsFloatElement =
    std::is_floating_point_v<T> || float16_internal::kIs16Bit<T>;

// kConversionCanFail<In, Out> is true when ConvertElement<Out> is undefined
// for some values of In: a float to an integer other than bool.
template <typename In, typename Out>
inline constexpr bool kConversionCanFail =
    kIsFloatElement<In> && std::is_integral_v<Out> && !std::is_same_v<Out, bool>;

// ConvertElement converts one element between any two of dagrad's element
// types (float, double, int32_t, int64_t, bool, BFloat16, Float16), as the
// cast op does on every backend: a 16-bit float widens to float32 exactly
// first; to a 16-bit float, floats, doubles and integers round once, to
// nearest even; anything else is a static_cast (bool: x != 0, so NaN is
// true). A float that the integer type Out cannot hold (NaN, inf, out of
// range) is undefined, as in C++: callers check first.
//
//   ConvertElement<BFloat16>(int64_t{257});   // 256: a tie, to even
//   ConvertElement<double>(Float16{0x3c00});  // 1.0
template <typename Out, typename In>
DAGRAD_HOST_DEVICE Out ConvertElement(In x) {
  if constexpr (std::is_same_v<Out, In>) {
    return x;
  } else if constexpr (float16_internal::kIs16Bit<In>) {
    return ConvertElement<Out>(float16_internal::Widen(x));
  } else if constexpr (float16_internal::kIs16Bit<Out>) {
    return float16_internal::Narrow<Out>(x);
  } else {
    return static_cast<Out>(x);
  }
}

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_BFLOAT16_H_
