// ops/sum_of_squares.h
//
// SumOfSquares: the sum of x^2 over every element of several tensors, one
// float64 scalar: the square of their global L2 norm, what gradient
// clipping (torch.nn.utils.clip_grad_norm_) needs, in one op and one pass.
//
//   Value norm = Sqrt(SumOfSquares({dw1, db1, dw2}));   // () float64
//
// Numerics, the same on every backend, thread count and ISA level, bit for
// bit (ops/math/sum_of_squares_math.h): each input is cut into fixed chunks of
// kSquaresChunk elements; a chunk's squares are taken and added in double
// in a fixed order (kSquaresLanes lanes, then a fixed tree), and the chunks'
// sums, in input order, are added in the same way. NaN anywhere gives NaN;
// an Inf, or a square that overflows double, gives +Inf. No input's
// elements, or no elements at all, give 0.
//
// Errors (in the returned Value): an input that is not float32 or float64,
// or is null beside others that are not; inputs of different graphs; an
// input that holds an error. No inputs (or only null ones) give a null
// Value, as every builder over no graph.

#ifndef DAGRAD_OPS_SUM_OF_SQUARES_H_
#define DAGRAD_OPS_SUM_OF_SQUARES_H_

#include <vector>

#include "engine/graph.h"

namespace dagrad {

// SumOfSquares returns sum over xs of sum(x^2) as a float64 scalar: xs
// (any shapes, float32 or float64, mixed) -> (). Its gradient is 2 x g for
// each input, made in float64 and cast to the input's dtype once, as the
// composed Sum(Mul(Cast(x, kFloat64), Cast(x, kFloat64))) would give (the
// seed of a tiny norm, 1 / (2 |x|), need not fit the input's dtype).
//
//   Value sq = SumOfSquares({w, v});   // w (2, 3) float32, v (4,) float64 -> ()
Value SumOfSquares(const std::vector<Value>& xs);

}  // namespace dagrad

#endif  // DAGRAD_OPS_SUM_OF_SQUARES_H_
