// ops/onnx/import_ops_math.cc
//
// The ONNX importer's elementwise, comparison and matrix-product ops.

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/onnx/import_context.h"
#include "ops/onnx/onnx_tensor.h"
#include "ops/select.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

using Outputs = absl::StatusOr<std::vector<Value>>;

// LegacyBroadcast returns b as numpy broadcasting must see it to give a
// before opset 7's meaning (Add-6, Pow-1, And-1, ...): b broadcasts only
// with broadcast=1, its dims lined up with a's from `axis` on (by default
// with a's last ones), so it becomes (1, ..., 1, b's dims, 1, ..., 1) of
// a's rank; without broadcast=1, a and b are of one shape. From opset 7,
// b itself.
absl::StatusOr<Value> LegacyBroadcast(OnnxNodeContext& c, Value a, Value b) {
  if (c.opset() >= 7) return b;
  DAGRAD_RETURN_IF_ERROR(a.status());
  DAGRAD_RETURN_IF_ERROR(b.status());
  if (c.Int("broadcast", 0) == 0) {
    if (a.shape() == b.shape()) return b;
    return c.Error(absl::StrCat("without broadcast=1 (opset ", c.opset(), "), ",
                                a.shape().ToString(), " and ", b.shape().ToString(),
                                " must be of one shape"));
  }
  const int64_t axis = c.Int("axis", a.rank() - b.rank());
  if (axis < 0 || axis + b.rank() > a.rank()) {
    return c.Error(absl::StrCat("axis ", axis, " does not place ", b.shape().ToString(),
                                " within ", a.shape().ToString()));
  }
  std::vector<int64_t> dims(axis, 1);
  for (int i = 0; i < b.rank(); ++i) dims.push_back(b.dim(i));
  dims.resize(a.rank(), 1);
  return Reshape(b, dims);
}

template <Value (*F)(Value, Value)>
Outputs Binary(OnnxNodeContext& c) {
  DAGRAD_ASSIGN_OR_RETURN(Value b, LegacyBroadcast(c, c.input(0), c.input(1)));
  return c.Outputs({F(c.input(0), b)});
}

// FloatUnary applies a math op that dagrad defines for floats only.
template <Value (*F)(Value)>
Outputs FloatUnary(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, x));
  return c.Outputs({F(x)});
}

Value Identity(Value x) { return x; }

template <Value (*F)(Value)>
Outputs Unary(OnnxNodeContext& c) {
  return c.Outputs({F(c.input(0))});
}

// Neg also negates integers (shape arithmetic), as 0 - x.
Outputs ImportNeg(OnnxNodeContext& c) {
  Value x = c.input(0);
  if (IsFloating(x.dtype())) return c.Outputs({Neg(x)});
  DAGRAD_RETURN_IF_ERROR(x.status());
  if (!IsInteger(x.dtype())) {
    return c.Unsupported(absl::StrCat("dagrad's Neg takes float32, float64 and integers, not ",
                                      DTypeName(x.dtype())));
  }
  return c.Outputs({Sub(ScalarConstant(c.graph(), x.dtype(), int64_t{0}), x)});
}

// ONNX's Equal takes bools (from opset 7), dagrad's numbers only: two
// bools are equal as the 0s and 1s they cast to.
Value EqualAny(Value a, Value b) {
  const auto is_bool = [](const Value& v) { return v.ok() && v.dtype() == DType::kBool; };
  if (!is_bool(a) || !is_bool(b)) return Equal(a, b);
  return Equal(Cast(a, DType::kInt32), Cast(b, DType::kInt32));
}

// a <= b is (a < b) or (a == b), not Not(a > b): a NaN operand makes each
// comparison false, as IEEE, numpy and ONNX Runtime have it, so NaN <= 1 is
// false. Composed rather than an OpDef: the importer is their only user,
// and what it exports back is the Less, Equal and Or it holds.
Value LessOrEqual(Value a, Value b) { return LogicalOr(Less(a, b), Equal(a, b)); }
Value GreaterOrEqual(Value a, Value b) { return LogicalOr(Greater(a, b), Equal(a, b)); }
// Pow's -1 is 1 / x, which ONNX's Reciprocal is (C's pow(x, -1) may round
// differently).
Value Reciprocal(Value x) { return Pow(x, -1.0); }

// Variadic folds Sum, Max and Min over any number of inputs. dagrad's
// maximum, minimum and add take no 16-bit floats, so float16 and bfloat16
// inputs are folded in float32 and the result cast back, as ONNX Runtime's
// CPU kernels compute them (exact for Max and Min).
template <Value (*F)(Value, Value)>
Outputs Variadic(OnnxNodeContext& c) {
  const DType dtype = c.input(0).dtype();
  auto in = [&](int i) {
    return IsReducedFloat(dtype) ? Cast(c.input(i), DType::kFloat32) : c.input(i);
  };
  Value out = in(0);
  for (int i = 1; i < c.num_inputs(); ++i) out = F(out, in(i));
  return c.Outputs({IsReducedFloat(dtype) ? Cast(out, dtype) : out});
}

Outputs ImportMean(OnnxNodeContext& c) {
  Value sum = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) sum = Add(sum, c.input(i));
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, sum));
  return c.Outputs({Scale(sum, 1.0 / c.num_inputs())});
}

// SameValue is true for equal values and for two NaNs (one exponent).
bool SameValue(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// UniformExponent returns Pow's exponent when it is known at import with
// one value throughout (x ** 2, x ** 0.5: what exports hold), else nullopt.
absl::StatusOr<std::optional<double>> UniformExponent(const OnnxNodeContext& c) {
  const Tensor* y = c.known(1);
  if (y == nullptr || y->shape().num_elements() == 0) return std::nullopt;
  DAGRAD_ASSIGN_OR_RETURN(std::vector<double> e, TensorAsDoubles(*y));
  for (double v : e) {
    if (!SameValue(v, e.front())) return std::nullopt;
  }
  return e.front();
}

// Pow: a float base with a uniform known exponent is CPow; any other
// exponent (per element, computed at run time, of another dtype) goes to
// PowTensor in the base's float dtype, and an integer base is computed in
// float64 and cast back, as ONNX's Pow has the base's type. The result has
// the broadcast shape of both, as in ONNX: x (3) ** e (2, 1, 1) is
// (2, 1, 3). ONNX's Pow is C's pow (numpy's, ONNX Runtime's) for every
// exponent: CPow, not dagrad's torch-like Pow (sqrt(-0) = -0 for x ** 0.5).
Outputs ImportPow(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_RETURN_IF_ERROR(x.status());
  if (x.dtype() == DType::kBool) return c.Error("Pow of bool");
  const Tensor* known = c.known(1);
  Value p = known ? c.graph().Constant(*known, "onnx_exponent") : c.input(1);
  DAGRAD_ASSIGN_OR_RETURN(p, LegacyBroadcast(c, x, p));
  absl::StatusOr<Shape> shape = BroadcastShapes(x.shape(), p.shape());
  if (!shape.ok()) return c.Error(shape.status().message());
  DAGRAD_ASSIGN_OR_RETURN(std::optional<double> uniform, UniformExponent(c));
  Value power;
  if (IsFloating(x.dtype()) && uniform) {
    power = CPow(x, *uniform);
  } else {
    const DType t = IsFloating(x.dtype()) ? x.dtype() : DType::kFloat64;
    power = PowTensor(x.dtype() == t ? x : Cast(x, t), p.dtype() == t ? p : Cast(p, t));
    if (power.ok() && x.dtype() != t) power = Cast(power, x.dtype());
  }
  DAGRAD_RETURN_IF_ERROR(power.status());
  return c.Outputs({power.shape() == *shape ? power : BroadcastTo(power, *shape)});
}

// LeakyRelu is x for x >= 0 and alpha x for x < 0 (ONNX): the test is
// x < 0, so that both zeros and NaN come out as x itself, where x > 0 would
// send them to alpha x (alpha * -0 = +0 for a negative alpha).
Outputs ImportLeakyRelu(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, x));
  Value zero = ScalarConstant(c.graph(), x.dtype(), 0.0);
  return c.Outputs({Where(Less(x, zero), Scale(x, c.Float("alpha", 0.01f)), x)});
}

Outputs ImportCast(OnnxNodeContext& c) {
  const int64_t code = c.Int("to", 0);
  if (code < INT32_MIN || code > INT32_MAX) return c.Error(absl::StrCat("Cast to type ", code));
  absl::StatusOr<DType> to = DTypeFromOnnx(static_cast<int32_t>(code));
  if (!to.ok()) return c.Unsupported(to.status().message());
  return c.Outputs({Cast(c.input(0), *to)});
}

Outputs ImportCastLike(OnnxNodeContext& c) {
  return c.Outputs({Cast(c.input(0), c.input(1).dtype())});
}

// ClipBound returns Clip's bound input i as a scalar: ONNX makes it one, and
// the result has x's shape, so a (1)-shaped bound must not broadcast x. A
// bound known at import is a constant even where an initializer holds it
// (relu6's 0 and 6, as onnx-simplifier writes them): a bound is a setting,
// not a weight to train.
Value ClipBound(OnnxNodeContext& c, int i) {
  const Tensor* known = c.known(i);
  Value bound = known ? c.graph().Constant(*known, "onnx_clip_bound") : c.input(i);
  if (!bound.ok() || bound.shape().num_elements() == 1) return Reshape(bound, {});
  return c.graph().Error(c.Error(absl::StrCat(
      "Clip's ", i == 1 ? "min" : "max", " must be a scalar, not ", bound.shape().ToString())));
}

// ClipSide returns Clip's bound i (1 min, 2 max): the float attribute
// before opset 11, the input from then on, and where there is none the
// dtype's lowest() or max(), not an infinity (ONNX Runtime, and Clip-6's
// defaults of -+3.402823e+38): Clip(+inf) with no max is FLT_MAX in float32,
// DBL_MAX in float64, 65504 in float16. A null Value where an integer x
// needs no bound (none of its elements lies beyond its dtype's limits).
Value ClipSide(OnnxNodeContext& c, int i, DType dtype) {
  const char* name = i == 1 ? "min" : "max";
  if (c.opset() < 11 && c.attr(name)) return ScalarConstant(c.graph(), dtype, c.Float(name, 0));
  if (c.opset() >= 11 && c.has_input(i)) return ClipBound(c, i);
  if (!IsAnyFloat(dtype)) return Value();
  const double limit = LargestFinite(dtype);
  return ScalarConstant(c.graph(), dtype, i == 1 ? -limit : limit);
}

// Clip's bounds are inputs from opset 11, float attributes before (when
// Clip took floats only). A NaN in x stays NaN, as numpy's clip has it.
// A 16-bit float is clipped in float32, which holds its values and bounds
// exactly.
Outputs ImportClip(OnnxNodeContext& c) {
  Value x = c.input(0);
  if (c.opset() < 11) DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, x));
  DAGRAD_RETURN_IF_ERROR(x.status());
  const DType dtype = x.dtype();
  const DType work = IsReducedFloat(dtype) ? DType::kFloat32 : dtype;
  auto in_work = [&](Value v) {
    return v.is_null() || !v.ok() || v.dtype() == work ? v : Cast(v, work);
  };
  Value y = in_work(x);
  if (Value lo = in_work(ClipSide(c, 1, dtype)); !lo.is_null()) y = Maximum(y, lo);
  if (Value hi = in_work(ClipSide(c, 2, dtype)); !hi.is_null()) y = Minimum(y, hi);
  return c.Outputs({work == dtype ? y : Cast(y, dtype)});
}

// MatMul follows numpy: a 1-D operand is a row (a) or a column (b) whose
// axis leaves the result.
Outputs ImportMatMul(OnnxNodeContext& c) {
  Value a = c.input(0), b = c.input(1);
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, a));
  const bool row = a.rank() == 1, column = b.rank() == 1;
  if (row) a = Reshape(a, {1, a.dim(0)});
  if (column) b = Reshape(b, {b.dim(0), 1});
  Value y = MatMul(a, b);
  DAGRAD_RETURN_IF_ERROR(y.status());
  if (row || column) {
    std::vector<int64_t> dims(y.shape().dims().begin(), y.shape().dims().end());
    if (column) dims.pop_back();
    if (row) dims.erase(dims.end() - (column ? 1 : 2));
    y = Reshape(y, dims);
  }
  return c.Outputs({y});
}

// Gemm: alpha * A' B' + beta * C, A' and B' transposed when asked. A and
// B are matrices (MatMul would batch more axes), and C broadcasts to the
// (M, N) result one way only, never widening it.
Outputs ImportGemm(OnnxNodeContext& c) {
  Value a = c.input(0), b = c.input(1);
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, a));
  DAGRAD_RETURN_IF_ERROR(b.status());
  if (a.rank() != 2 || b.rank() != 2) {
    return c.Error(absl::StrCat("A ", a.shape().ToString(), " and B ", b.shape().ToString(),
                                " must be matrices"));
  }
  Value y = MatMul(a, b, {.transpose_a = c.Int("transA", 0) != 0,
                          .transpose_b = c.Int("transB", 0) != 0});
  const float alpha = c.Float("alpha", 1.0f), beta = c.Float("beta", 1.0f);
  if (alpha != 1.0f) y = Scale(y, alpha);
  if (c.has_input(2) && beta != 0.0f) {
    Value bias = c.input(2);
    DAGRAD_RETURN_IF_ERROR(y.status());
    DAGRAD_RETURN_IF_ERROR(bias.status());
    if (!IsBroadcastableTo(bias.shape(), y.shape())) {
      return c.Error(absl::StrCat("C ", bias.shape().ToString(), " does not broadcast to ",
                                  y.shape().ToString()));
    }
    y = Add(y, beta == 1.0f ? bias : Scale(bias, beta));
  }
  return c.Outputs({y});
}

}  // namespace

std::vector<OnnxOpEntry> OnnxMathOps() {
  return {
      {"Add", Binary<Add>},
      {"Sub", Binary<Sub>},
      {"Mul", Binary<Mul>},
      {"Div", Binary<Div>},
      {"Pow", ImportPow},
      {"Equal", Binary<EqualAny>},
      {"Less", Binary<Less>},
      {"Greater", Binary<Greater>},
      {"LessOrEqual", Binary<LessOrEqual>},
      {"GreaterOrEqual", Binary<GreaterOrEqual>},
      {"And", Binary<LogicalAnd>},
      {"Or", Binary<LogicalOr>},
      {"Not", Unary<LogicalNot>},
      {"Identity", Unary<Identity>},
      {"Neg", ImportNeg},
      {"Exp", FloatUnary<Exp>},
      {"Log", FloatUnary<Log>},
      {"Sqrt", FloatUnary<Sqrt>},
      {"Reciprocal", FloatUnary<Reciprocal>},
      {"Relu", FloatUnary<Relu>},
      {"Tanh", FloatUnary<Tanh>},
      {"Sigmoid", FloatUnary<Sigmoid>},
      {"Sin", FloatUnary<Sin>},
      {"Cos", FloatUnary<Cos>},
      {"Erf", FloatUnary<Erf>},
      {"Softplus", FloatUnary<Softplus>},
      {"Abs", FloatUnary<Abs>},
      {"LeakyRelu", ImportLeakyRelu},
      {"Sum", Variadic<Add>},
      {"Max", Variadic<Maximum>},
      {"Min", Variadic<Minimum>},
      {"Mean", ImportMean},
      {"Where", [](OnnxNodeContext& c) -> Outputs {
         return c.Outputs({Where(c.input(0), c.input(1), c.input(2))});
       }},
      {"Cast", ImportCast},
      {"CastLike", ImportCastLike},
      {"Clip", ImportClip},
      {"MatMul", ImportMatMul},
      {"Gemm", ImportGemm},
  };
}

}  // namespace dagrad
