// ops/math/dropout_math.h
//
// Dropout's per-element rule (the bit layout in ops/dropout.h), written once
// for the CPU kernel (ops/dropout.cc) and the CUDA kernel
// (ops/cuda/dropout.cu), so that the two give the same bits.
//
//   // setup: Kernel
//   const uint32_t threshold = DropoutThreshold(p);
//   const T scale = T(1) / (T(1) - static_cast<T>(p));
//   y[i] = DropoutElement(x[i], rs.Bits(i), threshold, scale);

#ifndef DAGRAD_OPS_MATH_DROPOUT_MATH_H_
#define DAGRAD_OPS_MATH_DROPOUT_MATH_H_

#include <cmath>
#include <cstdint>

#include "engine/device/host_device.h"

namespace dagrad {

// DropoutThreshold returns ceil(p * 2^24), computed in double: an element
// is kept iff the top 24 bits of its random word reach it, which is the
// decision u >= p for u = UniformFromBits(bits) (engine/philox.h), made
// with integers.
inline uint32_t DropoutThreshold(double p) {
  return static_cast<uint32_t>(std::ceil(p * 16777216.0));
}

// DropoutElement returns x * scale for a kept element and x * 0 for a
// dropped one. static: the ISA-level kernels (ops/cpu/kernels/) compile this
// header once per level, and a shared inline copy could be one level's. Multiplying by zero, rather than writing zero, is what
// torch.nn.functional.dropout does (input * mask * scale): a dropped
// negative x gives -0.0, and a dropped NaN or infinity gives NaN.
template <typename T>
DAGRAD_HOST_DEVICE static inline T DropoutElement(T x, uint32_t bits, uint32_t threshold, T scale) {
  return x * ((bits >> 8) >= threshold ? scale : T(0));
}

// DropoutFirstElement returns the global index of element 0 of a
// data-parallel process's slice (RunContext::batch_begin, batch_rows): its
// n elements are batch_rows rows, and batch_begin rows precede them. -1
// when n does not split into batch_rows rows.
static inline int64_t DropoutFirstElement(int64_t batch_begin, int64_t batch_rows, int64_t n) {
  if (batch_begin == 0) return 0;
  if (batch_rows <= 0 || n % batch_rows != 0) return -1;
  return batch_begin * (n / batch_rows);
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_MATH_DROPOUT_MATH_H_
