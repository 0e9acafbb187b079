// ops/reduce.h
//
// Reductions over axes. `axes` may be negative; empty means every axis.
// With keepdims the reduced axes stay as size 1.
//
//   Sum(x, {-1}, /*keepdims=*/true);   // (B, T, E) -> (B, T, 1)
//   Mean(x);                            // (B, T, E) -> ()
//   Max(scores, {-1});                  // (B, T, S) -> (B, T)
//
// Errors: an axis out of range or repeated; a bool input.
//
// Numerics, the same on every path (last axis, leading or middle axes, any
// set of axes) and on every backend:
//   - float sums and means accumulate in double and round once to the
//     output's dtype, so a float32 Sum over any axis agrees with float64 to
//     float32 rounding, however many elements it adds; integer sums wrap
//     (ops/math/int_math.h);
//   - NaN propagates: Sum and Mean as IEEE addition does, Max as torch.amax
//     (NaN wherever in the row the NaN sits, ops/math/minmax.h);
//   - over zero elements, Sum gives 0, Mean NaN (0/0, as torch.mean), and
//     Max -inf for floats and the lowest value for integers (its identity;
//     torch.amax raises an error instead).

#ifndef DAGRAD_OPS_REDUCE_H_
#define DAGRAD_OPS_REDUCE_H_

#include <cstdint>
#include <vector>

#include "engine/graph.h"

namespace dagrad {

Value Sum(Value x, std::vector<int64_t> axes = {}, bool keepdims = false);
Value Mean(Value x, std::vector<int64_t> axes = {}, bool keepdims = false);
// Max's gradient is shared equally among tied maxima (as torch.amax); a row
// whose max is NaN gets a NaN gradient in every element (as torch.amax).
Value Max(Value x, std::vector<int64_t> axes = {}, bool keepdims = false);

// SumTo reduces `x` by summation to `shape`, which must broadcast to x's
// shape (the inverse of broadcasting; autodiff uses it). Returns x when the
// shapes are equal.
Value SumTo(Value x, const Shape& shape);

}  // namespace dagrad

#endif  // DAGRAD_OPS_REDUCE_H_
