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

#ifndef DAGRAD_OPS_REDUCE_H_
#define DAGRAD_OPS_REDUCE_H_

#include <cstdint>
#include <vector>

#include "engine/graph.h"

namespace dagrad {

Value Sum(Value x, std::vector<int64_t> axes = {}, bool keepdims = false);
Value Mean(Value x, std::vector<int64_t> axes = {}, bool keepdims = false);
// Max's gradient is shared equally among tied maxima (as torch.amax).
Value Max(Value x, std::vector<int64_t> axes = {}, bool keepdims = false);

// SumTo reduces `x` by summation to `shape`, which must broadcast to x's
// shape (the inverse of broadcasting; autodiff uses it). Returns x when the
// shapes are equal.
Value SumTo(Value x, const Shape& shape);

}  // namespace dagrad

#endif  // DAGRAD_OPS_REDUCE_H_
