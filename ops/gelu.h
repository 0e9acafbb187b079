// ops/gelu.h
//
// GELU, as torch.nn.GELU(approximate=...): the exact form x * Phi(x), with
// Phi the standard normal CDF, or the tanh approximation
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). Float32 runs the
// vectorised kernels of the CPU's ISA level (ops/cpu/kernels/gelu_kernel.cc:
// Phi within 2^-23 of exact; the avx2 and avx512 levels fuse the
// polynomials' multiply-adds, so they agree with each other bit for bit and
// with the baseline to the bound ops/cpu/kernels/cpu_kernels.h states);
// float64 and CUDA use the C library's erf and tanh.
//
//   Value h = Gelu(MatMul(x, w));                            // exact
//   Value t = Gelu(MatMul(x, w), GeluApproximate::kTanh);    // tanh form
//
// Errors (in the returned Value): a non-floating x; for GeluGrad, x and g of
// different dtypes or shapes.

#ifndef DAGRAD_OPS_GELU_H_
#define DAGRAD_OPS_GELU_H_

#include "absl/strings/string_view.h"
#include "engine/graph.h"

namespace dagrad {

// The two forms, named as torch's `approximate` argument: "none", "tanh".
enum class GeluApproximate { kNone, kTanh };

// GeluApproximateName returns "none" or "tanh", the op's "approximate"
// attribute.
absl::string_view GeluApproximateName(GeluApproximate approximate);

// Gelu returns gelu(x) elementwise: x (...) float -> (...). Its gradient is
// GeluGrad of the same form. (Two overloads rather than a default argument,
// so that `Gelu` still converts to Value (*)(Value).)
Value Gelu(Value x);
Value Gelu(Value x, GeluApproximate approximate);

// GeluGrad returns g * gelu'(x), gelu's backward as one fused op: x and g
// of the same dtype and shape. Its own gradient takes gelu''(x) in
// ordinary ops (Exp, Tanh, products), so GELU has second derivatives, and
// third ones through those ops.
Value GeluGrad(Value x, Value g,
               GeluApproximate approximate = GeluApproximate::kNone);

}  // namespace dagrad

#endif  // DAGRAD_OPS_GELU_H_
