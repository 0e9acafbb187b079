// ops/matmul.h
//
// Matrix products, all through BLIS on the CPU. Transposed operands are read
// through strides, never copied.
//
// Operands are float32, float64 or bfloat16. Bfloat16 operands (both; cast
// them: Cast(w, DType::kBFloat16)) are multiplied with float32 accumulation
// — the result is the float32 product of their values to float32 rounding,
// except that on a CPU with AVX512_BF16 (`vdpbf16ps`, `dagrad info`'s
// "bf16 products") a subnormal bfloat16 input (below 2^-126) or a
// subnormal product counts as zero, as the instruction does; elsewhere
// (widened to float32 for BLIS) they are kept — and give float32, so a mixed-precision step keeps all but its products
// in float32 without a cast after each; MatMul can give bfloat16 instead
// (MatMulOptions::output). Their gradients are float32 (GradientDType),
// computed by products that take the upstream gradient rounded to
// bfloat16, as torch's autocast does. float16 operands are refused.
//
//   // setup: Products
//   MatMul(a, b);                          // (..., M, K) x (..., K, N) -> (..., M, N)
//   MatMul(q, k, {.transpose_b = true});   // (B, H, T, D) x (B, H, S, D) -> (B, H, T, S)
//   Linear(x, w, bias);                    // x (..., in), w (out, in), bias (out) -> (..., out)
//
// Batch dims (all but the last two) broadcast numpy-style, so a rank-2
// operand multiplies every matrix of a batched one.
//
// Errors: rank < 2, contracting dims that differ, batch dims that do not
// broadcast, non-float or differing dtypes, an output dtype the operands
// do not give; for Linear, x's last dim not w's in-features or a bias
// that is not (out,) of the output's dtype.

#ifndef DAGRAD_OPS_MATMUL_H_
#define DAGRAD_OPS_MATMUL_H_

#include <optional>

#include "engine/graph.h"

namespace dagrad {

struct MatMulOptions {
  bool transpose_a = false;  // use a's last two axes swapped
  bool transpose_b = false;
  // output: the result's dtype. Bfloat16 operands give float32 by default,
  // or bfloat16 (the float32 sums rounded once); other operands give their
  // own dtype, the only one they take here.
  std::optional<DType> output = std::nullopt;
};

// MatMul returns op(a)·op(b), batched.
//
//   Value a16 = Cast(g.Input("a", DType::kFloat32, {4, 8}), DType::kBFloat16);
//   Value w16 = Cast(g.Parameter("w", {8, 3}, Initializer::Ones()), DType::kBFloat16);
//   Value y = MatMul(a16, w16);                                          // float32 (4, 3)
//   Value y16 = MatMul(a16, w16, {.output = DType::kBFloat16});          // bfloat16 (4, 3)
Value MatMul(Value a, Value b, MatMulOptions options = {});

// Linear returns x · wᵀ + b (PyTorch's nn.Linear and F.linear, w of shape
// (out, in)); `b` may be a null Value for no bias. x may be 1-D, a single
// row: (in) -> (out), forward and backward, as F.linear. Bfloat16 x and w
// give float32, and then b is float32, added to the float32 product.
//
//   // setup: SmallLinear
//   Value y = Linear(g.Input("x", DType::kFloat32, {4}), w, b);   // w (3, 4) -> y (3)
Value Linear(Value x, Value w, Value b = Value());

}  // namespace dagrad

#endif  // DAGRAD_OPS_MATMUL_H_
