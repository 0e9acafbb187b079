// ops/matmul.h
//
// Matrix products, all through BLIS on the CPU. Transposed operands are read
// through strides, never copied.
//
//   MatMul(a, b);                          // (..., M, K) x (..., K, N) -> (..., M, N)
//   MatMul(q, k, {.transpose_b = true});   // (B, H, T, D) x (B, H, S, D) -> (B, H, T, S)
//   Linear(x, w, bias);                    // x (..., in), w (out, in), bias (out) -> (..., out)
//
// Batch dims (all but the last two) broadcast numpy-style, so a rank-2
// operand multiplies every matrix of a batched one.
//
// Errors: rank < 2, contracting dims that differ, batch dims that do not
// broadcast, non-float or differing dtypes; for Linear, x's last dim not
// w's in-features or a bias that is not (out,).

#ifndef DAGRAD_OPS_MATMUL_H_
#define DAGRAD_OPS_MATMUL_H_

#include "engine/graph.h"

namespace dagrad {

struct MatMulOptions {
  bool transpose_a = false;  // use a's last two axes swapped
  bool transpose_b = false;
};

Value MatMul(Value a, Value b, MatMulOptions options = {});

// Linear returns x · wᵀ + b (PyTorch's nn.Linear and F.linear, w of shape
// (out, in)); `b` may be a null Value for no bias. x may be 1-D, a single
// row: (in) -> (out), forward and backward, as F.linear.
//
//   Value y = Linear(g.Input("x", DType::kFloat32, {4}), w, b);   // w (3, 4) -> y (3)
Value Linear(Value x, Value w, Value b = Value());

}  // namespace dagrad

#endif  // DAGRAD_OPS_MATMUL_H_
