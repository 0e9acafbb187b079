// ops/fill.h
//
// Tensors made from nothing but attributes: constant fills and ranges. They
// have no inputs, so the planner folds them into constants of the plan
// (evaluated once, when compiling); they are not differentiable.
//
//   Value pos = Arange(g, 0, T, 1, DType::kInt64);        // (T,): 0, 1, ..., T-1
//   Value bias = Fill(g, {B, 1, S}, -1e9);                 // float32
//   Value z = ZerosLike(x);                                // x's shape and dtype
//
// Values are given as doubles and converted to the dtype; one that the dtype
// cannot hold exactly (1.5 as int64, 2 as bool, 1e40 as float32) is an error
// rather than a silent truncation.

#ifndef DAGRAD_OPS_FILL_H_
#define DAGRAD_OPS_FILL_H_

#include "engine/graph.h"

namespace dagrad {

// Fill returns a tensor of `shape` and `dtype` with every element `value`
// (torch.full). Float dtypes accept inf and NaN.
//   -> shape
//
// Errors (InvalidArgument, naming fill, the node, the shape and the value):
// a negative dim; an element count whose bytes overflow int64; a value the
// dtype cannot hold (non-integer or out of range for int32/int64, not 0 or 1
// for bool, finite but beyond float32's range for float32).
//
//   Value ones = Fill(g, {2, 3}, 1.0);                    // float32 (2, 3)
//   Value pad = Fill(g, {4}, 0, DType::kInt64);           // int64 (4,)
Value Fill(Graph& g, const Shape& shape, double value, DType dtype = DType::kFloat32);

// Arange returns start, start + step, ... up to but excluding stop
// (torch.arange): ceil((stop - start) / step) elements, none when that is
// <= 0. Element i is start + i * step, computed in double and converted.
//   -> (ceil((stop - start) / step),)
//
// Errors (InvalidArgument, naming arange, the node and the values): a step
// of 0; a start, stop or step that is not finite; a length whose bytes
// overflow int64; bool dtype; a first or last element the dtype cannot hold
// (beyond int32's, int64's or float32's range).
//
//   Value t = Arange(g, 0, 5);                            // [0, 1, 2, 3, 4]
//   Value r = Arange(g, 1, 0, -0.25, DType::kFloat64);    // [1, 0.75, 0.5, 0.25]
Value Arange(Graph& g, double start, double stop, double step = 1,
             DType dtype = DType::kFloat32);

// ZerosLike returns zeros of x's shape and dtype; OnesLike, ones. The result
// does not depend on x's values (no edge from x: it is folded). An error
// Value is returned unchanged, a null Value gives a null Value.
//   x: any  ->  x's shape and dtype
//
//   Value z = ZerosLike(x);                               // x (B, T, E) -> (B, T, E)
//   Value m = OnesLike(mask);                             // bool: all true
Value ZerosLike(Value x);
Value OnesLike(Value x);

}  // namespace dagrad

#endif  // DAGRAD_OPS_FILL_H_
