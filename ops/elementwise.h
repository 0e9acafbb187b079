// ops/elementwise.h
//
// Elementwise ops. Binary ops broadcast their inputs numpy-style; both must
// have the same dtype. Unary math ops take float32 or float64. Gradients of
// broadcast inputs are reduced back to their shapes by autodiff.
//
//   Value y = Relu(Add(MatMul(x, w), b));     // b broadcasts over rows
//   Value z = (a - b) * c / 2.0;              // operators build the same ops
//
// Errors (in the returned Value): shapes that do not broadcast, differing
// dtypes, a non-floating input to a math op.

#ifndef DAGRAD_OPS_ELEMENTWISE_H_
#define DAGRAD_OPS_ELEMENTWISE_H_

#include "engine/graph.h"
#include "ops/gelu.h"  // Gelu, GeluGrad

namespace dagrad {

// Binary arithmetic, broadcasting: (a ⊕ b)[i] = a[i] ⊕ b[i].
Value Add(Value a, Value b);
Value Sub(Value a, Value b);
Value Mul(Value a, Value b);
Value Div(Value a, Value b);
// Maximum and Minimum propagate NaN, as torch.maximum and torch.minimum:
// the result is NaN where either input is. Their gradient goes to a where
// a >= b (a <= b for Minimum) or either is NaN, else to b: ties go to a
// where torch splits them in half.
Value Maximum(Value a, Value b);
Value Minimum(Value a, Value b);

// Comparisons and logic, broadcasting; bool results, not differentiable.
Value Equal(Value a, Value b);
Value Less(Value a, Value b);
Value Greater(Value a, Value b);
Value LogicalAnd(Value a, Value b);  // bool inputs
Value LogicalOr(Value a, Value b);   // bool inputs
Value LogicalNot(Value a);           // bool input

// Unary math on floats. Values and gradients at the edges of each domain
// (0, negative numbers, +-inf, NaN) are torch's: log(0) = -inf with
// gradient g / 0 = +-inf, sqrt(0) = 0 with gradient +-inf, relu(NaN) = NaN
// with gradient g; Pow(x, 0) has gradient 0 everywhere, and Pow with an
// exponent of 2, 3, 0.5, -0.5, -1 or -2 is computed as torch computes it
// (products, sqrt, reciprocals), so signed zeros give torch's results too.
Value Neg(Value x);
Value Exp(Value x);
Value Log(Value x);
Value Sqrt(Value x);
Value Rsqrt(Value x);                     // 1 / sqrt(x)
Value Pow(Value x, double exponent);      // x ** exponent
Value Scale(Value x, double factor);      // factor * x
Value AddScalar(Value x, double offset);  // x + offset
Value Relu(Value x);
Value Tanh(Value x);
Value Sigmoid(Value x);
Value Sin(Value x);
Value Cos(Value x);

// Cast converts to `dtype` (float <-> float differentiable; from or to
// integers and bool not differentiable). Float to int truncates toward 0.
Value Cast(Value x, DType dtype);

// ReluGrad returns g where x > 0, else 0 (relu's backward, an op of its own
// so the backward pass is one fused loop).
Value ReluGrad(Value x, Value g);

// Operators over Values and scalars; `x * 2.0` is Scale(x, 2.0).
inline Value operator+(Value a, Value b) { return Add(a, b); }
inline Value operator-(Value a, Value b) { return Sub(a, b); }
inline Value operator*(Value a, Value b) { return Mul(a, b); }
inline Value operator/(Value a, Value b) { return Div(a, b); }
inline Value operator-(Value a) { return Neg(a); }
inline Value operator+(Value a, double s) { return AddScalar(a, s); }
inline Value operator+(double s, Value a) { return AddScalar(a, s); }
inline Value operator-(Value a, double s) { return AddScalar(a, -s); }
inline Value operator-(double s, Value a) { return AddScalar(Neg(a), s); }
inline Value operator*(Value a, double s) { return Scale(a, s); }
inline Value operator*(double s, Value a) { return Scale(a, s); }
inline Value operator/(Value a, double s) { return Scale(a, 1.0 / s); }

}  // namespace dagrad

#endif  // DAGRAD_OPS_ELEMENTWISE_H_
