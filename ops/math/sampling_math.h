// ops/math/sampling_math.h
//
// The per-row rules of the sampling ops (ops/sampling.h), written once for
// the CPU kernels (ops/sampling.cc) and the CUDA kernels
// (ops/cuda/sampling.cu), so that both backends order, pick and draw alike,
// and the (outer, n, inner) view of a tensor around an axis they share.
//
//   // setup: Kernel
//   DAGRAD_ASSIGN_OR_RETURN(const AxisRows r, AxisRowsOf(shape, axis));
//   const int64_t i = ArgMaxRow(x + o * r.n * r.inner + j, r.n, r.inner);

#ifndef DAGRAD_OPS_MATH_SAMPLING_MATH_H_
#define DAGRAD_OPS_MATH_SAMPLING_MATH_H_

#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/status/statusor.h"
#include "engine/device/host_device.h"
#include "engine/philox.h"
#include "engine/shape.h"

namespace dagrad {

// AxisRows views a tensor around `axis` as (outer, n, inner): row (o, i)
// is elements o n inner + i + j inner, j < n.
struct AxisRows {
  int axis;
  int64_t outer, n, inner;
};

// AxisRowsOf returns the view, or NormalizeAxis's error.
inline absl::StatusOr<AxisRows> AxisRowsOf(const Shape& shape,
                                           int64_t axis_attr) {
  absl::StatusOr<int> axis = NormalizeAxis(axis_attr, shape.rank());
  if (!axis.ok()) return axis.status();
  AxisRows r{*axis, 1, shape[*axis], 1};
  for (int i = 0; i < *axis; ++i) r.outer *= shape[i];
  for (int i = *axis + 1; i < shape.rank(); ++i) r.inner *= shape[i];
  return r;
}

// SortsBefore orders (value, index) pairs as TopK returns them: larger
// values first, NaN before every number, equal values (and NaNs) by index.
// A strict total order on distinct indices.
template <typename T>
DAGRAD_HOST_DEVICE bool SortsBefore(T a, int64_t ia, T b, int64_t ib) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool a_nan = a != a, b_nan = b != b;
    if (a_nan || b_nan) return a_nan && (!b_nan || ia < ib);
  }
  if (a != b) return a > b;
  return ia < ib;
}

// ArgMaxRow returns the first element of x[0], x[stride], ...,
// x[(n - 1) stride] in SortsBefore's order (n >= 1).
template <typename T>
DAGRAD_HOST_DEVICE int64_t ArgMaxRow(const T* x, int64_t n, int64_t stride) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (SortsBefore(x[i * stride], i, x[best * stride], best)) best = i;
  }
  return best;
}

// UniformDouble returns 53 random bits of a Philox block as a double in
// [0, 1): the 32 bits of v[0], then the top 21 of v[1].
DAGRAD_HOST_DEVICE inline double UniformDouble(const PhiloxBlock& block) {
  const uint64_t bits =
      (static_cast<uint64_t>(block.v[0]) << 21) | (block.v[1] >> 11);
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);  // 2^-53
}

// MultinomialRow returns the index drawn from the weights p[0, n) with u in
// [0, 1): the first i whose running sum (in double, in order) exceeds u
// times the total, the last positive weight if rounding leaves none; -1
// when the row is no distribution (a weight negative, NaN or infinite, or
// a total that is 0 or overflows).
template <typename T>
DAGRAD_HOST_DEVICE int64_t MultinomialRow(const T* p, int64_t n, double u) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    if (!(v >= 0 && v < kInf)) return -1;
    total += v;
  }
  if (!(total > 0 && total < kInf)) return -1;
  const double target = u * total;
  double running = 0;
  int64_t last = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    if (v == 0) continue;
    running += v;
    last = i;
    if (running > target) return i;
  }
  return last;
}

// MultinomialU is the uniform of row `row`'s draw.
DAGRAD_HOST_DEVICE inline double MultinomialU(uint64_t seed, uint32_t stream,
                                              uint32_t step, int64_t row) {
  return UniformDouble(
      RandomStream{seed, stream, step}.Block(static_cast<uint64_t>(row)));
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_MATH_SAMPLING_MATH_H_
