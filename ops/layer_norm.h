// ops/layer_norm.h
//
// Layer normalisation over the last axis, as torch.nn.functional.layer_norm
// with normalized_shape = (D,): each row of D elements is shifted to mean 0
// and scaled to variance 1 (the biased variance, divided by D), then scaled
// by gamma and shifted by beta.
//
//   Value h = LayerNorm(x, gamma, beta);          // x (B, T, E), gamma/beta (E,)
//   Value n = LayerNorm(x, Value(), Value());     // no affine part
//
// The forward pass is one fused kernel. Its backward is two: dx
// (layer_norm_grad) and dgamma with dbeta (layer_norm_param_grad, one pass
// over the rows); each recomputes a row's mean and 1/std instead of storing
// them.

#ifndef DAGRAD_OPS_LAYER_NORM_H_
#define DAGRAD_OPS_LAYER_NORM_H_

#include "engine/graph.h"

namespace dagrad {

// LayerNorm returns (x - mean) / sqrt(var + eps) * gamma + beta, with mean
// and var taken over x's last axis.
//   x: (..., D) float32/float64; gamma, beta: (D,) of x's dtype, each
//   optional (a null Value: no scale, no shift)  ->  (..., D)
//
// Errors (InvalidArgument, naming layer_norm, the node and the shapes): x
// not float or of rank 0; gamma or beta not of shape (D,) or of another
// dtype; eps not a finite number > 0.
//
//   Value x = g.Input("x", DType::kFloat32, {B, T, E});
//   Graph::Scope scope(g, "ln");                  // parameters ln/weight, ln/bias
//   Value gamma = g.Parameter("weight", {E}, Initializer::Ones());
//   Value beta = g.Parameter("bias", {E}, Initializer::Zeros());
//   Value y = LayerNorm(x, gamma, beta, 1e-5);    // (B, T, E)
Value LayerNorm(Value x, Value gamma, Value beta, double eps = 1e-5);

// LayerNormGrad returns dL/dx of LayerNorm(x, gamma, beta, eps) given
// g = dL/dy: with xhat = (x - mean) * rstd and gy = g * gamma (g when gamma
// is null), dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)), means over
// the last axis. It is LayerNorm's backward kernel and has no gradient rule
// of its own, so second derivatives through LayerNorm are Unimplemented.
//   x: (..., D); gamma: (D,) or null; g: x's shape  ->  x's shape
//
// Errors (InvalidArgument): as LayerNorm, and g not of x's shape and dtype.
//
//   Value dx = LayerNormGrad(x, gamma, dy, 1e-5);  // x, dy (B, T, E)
Value LayerNormGrad(Value x, Value gamma, Value g, double eps = 1e-5);

// LayerNormParamGrad returns dL/dgamma and dL/dbeta of LayerNorm(x, gamma,
// beta, eps) given g = dL/dy, as the rows of one (2, D) value: row 0 is the
// sum over x's rows of g * xhat (xhat = (x - mean) * rstd), row 1 the sum
// of g. Sums run in double in an order that does not depend on the thread
// count. It is LayerNorm's backward kernel for its parameters; its own
// gradient is layer_norm_grad in x and layer_norm in g.
//   x: (..., D); g: x's shape  ->  (2, D)
//
// Errors (InvalidArgument): as LayerNormGrad.
//
//   Value dparams = LayerNormParamGrad(x, dy, 1e-5);  // (2, E): dgamma, dbeta
Value LayerNormParamGrad(Value x, Value g, double eps = 1e-5);

}  // namespace dagrad

#endif  // DAGRAD_OPS_LAYER_NORM_H_
