// ops/shape_ops.h
//
// Ops that move or view data without arithmetic.
//
//   // setup: Heads
//   Reshape(x, {B, T, H, -1});       // one -1 is inferred; a view, no copy
//   Permute(x, {0, 2, 1, 3});        // (B, T, H, D) -> (B, H, T, D)
//   Transpose(x, -1, -2);            // swap two axes
//   BroadcastTo(b, Shape({B, T, E}));
//   Concat({a, b}, -1);  Slice(x, 1, 0, 4);
//
// Errors: element counts that differ, more than one -1, a permutation that
// is not one, shapes that do not broadcast or concatenate, axes or bounds out
// of range.

#ifndef DAGRAD_OPS_SHAPE_OPS_H_
#define DAGRAD_OPS_SHAPE_OPS_H_

#include <cstdint>
#include <vector>

#include "engine/graph.h"

namespace dagrad {

// Reshape returns x with shape `dims` (one may be -1). Always a view: the
// output aliases x's bytes.
Value Reshape(Value x, std::vector<int64_t> dims);

// Detach returns x, through which no gradient flows: PyTorch's
// x.detach(). Always a view, as Reshape. A value that reaches the loss
// only through Detach gets a null gradient, as one the loss does not use
// (ops/autodiff/autodiff.h).
//
//   Value y = x * Detach(x);   // dy/dx = Detach(x), not 2x
Value Detach(Value x);

// Permute returns x with its axes reordered: out axis i is x's axis perm[i].
Value Permute(Value x, std::vector<int64_t> perm);

// Transpose swaps axes a and b (negative allowed).
Value Transpose(Value x, int64_t a, int64_t b);

// BroadcastTo expands x to `shape` (numpy rules).
Value BroadcastTo(Value x, const Shape& shape);

// Concat joins values along `axis`; all other dims and the dtype must agree.
Value Concat(const std::vector<Value>& values, int64_t axis);

// Slice keeps indices [start, end) of `axis`, stepping by `step` (>= 1).
// Negative start/end count from the end; bounds are clamped like Python's,
// and for any int64 start, end and step the count is Python's
// len(range(n)[start:end:step]) (SliceLength, engine/checked_math.h).
Value Slice(Value x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);

}  // namespace dagrad

#endif  // DAGRAD_OPS_SHAPE_OPS_H_
