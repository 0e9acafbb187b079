// ops/max_min.h
//
// The larger and smaller of two values with torch's NaN rule
// (torch.maximum, torch.minimum, torch.amax, torch.amin): the result is
// NaN when either operand is NaN, wherever the NaN sits in a reduction.
// std::max and std::min would instead keep or drop a NaN depending on its
// position. Shared by the CPU and CUDA kernels (DAGRAD_HOST_DEVICE).
//
//   MaxPropagatingNaN(1.0f, NAN)  // NaN, and so is MaxPropagatingNaN(NAN, 1.0f)
//   MaxPropagatingNaN(2, 3)       // 3

#ifndef DAGRAD_OPS_MAX_MIN_H_
#define DAGRAD_OPS_MAX_MIN_H_

#include <type_traits>

#include "engine/host_device.h"

namespace dagrad {

// MaxPropagatingNaN returns b if b is NaN, else std::max(a, b) (a unless
// a < b), which keeps a NaN a since a comparison with NaN is false.
template <typename T>
DAGRAD_HOST_DEVICE inline T MaxPropagatingNaN(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b != b) return b;
  }
  return a < b ? b : a;
}

// MinPropagatingNaN returns b if b is NaN, else std::min(a, b) (a unless
// b < a), which keeps a NaN a likewise.
template <typename T>
DAGRAD_HOST_DEVICE inline T MinPropagatingNaN(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b != b) return b;
  }
  return b < a ? b : a;
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_MAX_MIN_H_
