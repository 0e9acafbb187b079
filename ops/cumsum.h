// ops/cumsum.h
//
// CumSum: the running sum along an axis, torch.cumsum and ONNX's CumSum
// (with its exclusive and reverse attributes). Along the axis of n:
//   y[i] = x[0] + ... + x[i]              (inclusive, forward)
//   y[i] = x[0] + ... + x[i - 1]          (exclusive: y[0] = 0)
//   y[i] = x[i] + ... + x[n - 1]          (reverse)
//   y[i] = x[i + 1] + ... + x[n - 1]      (reverse and exclusive)
// float32 and float64 (summed in double, as torch's CPU kernel does, then
// rounded once per element), int32 and int64 (wrapping). Its gradient is
// the cumulative sum of the output's gradient the other way: dx = CumSum(
// dy, axis, {.exclusive = exclusive, .reverse = !reverse}).
// Nucleus (top-p) sampling uses it: the probability mass before each token
// (models/gpt/token_sampler.h).
//
//   // setup: Default
//   Value running = CumSum(x, 1);                          // (B, T, E): along T
//   Value before = CumSum(x, -1, {.exclusive = true});     // sums of the earlier ones

#ifndef DAGRAD_OPS_CUMSUM_H_
#define DAGRAD_OPS_CUMSUM_H_

#include <cstdint>

#include "engine/graph.h"
#include "engine/shape.h"

namespace dagrad {

struct CumSumOptions {
  bool exclusive = false;  // leave out the element itself
  bool reverse = false;    // sum from the end of the axis
};

// CumSum of x along `axis` (negative counts from the end). Errors: an axis
// outside the rank, a bool or 16-bit float x.
Value CumSum(Value x, int64_t axis, const CumSumOptions& options = {});

// CumSumLines is the op as its kernels (CPU, CUDA) see it: `outer` blocks
// of n elements along the axis, each `inner` apart.
struct CumSumLines {
  int64_t outer = 1, n = 1, inner = 1;
};
CumSumLines CumSumLayout(const Shape& shape, int axis);

}  // namespace dagrad

#endif  // DAGRAD_OPS_CUMSUM_H_
