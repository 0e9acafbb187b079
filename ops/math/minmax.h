// ops/math/minmax.h
//
// Max and min that propagate NaN, as torch.maximum, torch.minimum,
// torch.amax and torch.clamp do: if either operand is NaN the result is
// NaN, wherever the NaN sits in a row. std::max and std::min do not (their
// result depends on the operands' order), so no dagrad kernel uses them on
// data. For integers these are the ordinary max and min. Shared by the CPU
// and CUDA kernels; the comparisons compile to vector compare-and-blend.
//
//   PropagatingMax(1.0f, NAN);  // NaN
//   PropagatingMax(NAN, 1.0f);  // NaN
//   PropagatingMin(2, 3);       // 2

#ifndef DAGRAD_OPS_MATH_MINMAX_H_
#define DAGRAD_OPS_MATH_MINMAX_H_

#include "engine/device/host_device.h"

namespace dagrad {

// PropagatingMax returns a when a > b or a is NaN, else b (b is NaN when it
// is one, since then a > b is false).
template <typename T>
DAGRAD_HOST_DEVICE inline T PropagatingMax(T a, T b) {
  return (a > b || a != a) ? a : b;
}

// PropagatingMin returns a when a < b or a is NaN, else b.
template <typename T>
DAGRAD_HOST_DEVICE inline T PropagatingMin(T a, T b) {
  return (a < b || a != a) ? a : b;
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_MATH_MINMAX_H_
