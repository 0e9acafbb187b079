// ops/select.h
//
// Elementwise selection by a boolean condition, numpy.where / torch.where.
//
//   Value s = Where(keep, scores, ScalarLike(scores, -1e9));  // mask scores
//
// The condition, like every dagrad mask, is a bool tensor; it takes no
// gradient.

#ifndef DAGRAD_OPS_SELECT_H_
#define DAGRAD_OPS_SELECT_H_

#include "engine/graph.h"

namespace dagrad {

// Where returns a where cond is true and b elsewhere, elementwise, with the
// three inputs broadcast to a common shape (numpy rules).
//   cond: bool; a, b: one dtype (any)  ->  broadcast(cond, a, b), a's dtype
// Gradients: where(cond, g, 0) for a and where(cond, 0, g) for b, each
// reduced to its input's shape.
//
// Errors (InvalidArgument, naming where, the node and the shapes): cond not
// bool; a and b of different dtypes; shapes that do not broadcast.
//
//   Value mask = g.Input("mask", DType::kBool, {B, 1, S});
//   Value x = g.Input("x", DType::kFloat32, {B, T, S});
//   Value y = Where(mask, x, ScalarLike(x, 0.0));   // (B, T, S)
Value Where(Value cond, Value a, Value b);

}  // namespace dagrad

#endif  // DAGRAD_OPS_SELECT_H_
