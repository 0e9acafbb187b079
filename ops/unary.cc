// Unary elementwise ops. Each op is a functor (the math for one element, in
// ops/elementwise.h, shared with the CUDA kernels) run by one templated
// kernel, then its gradient rule, OpDef and builder, together.

#include <cmath>
#include <limits>
#include <type_traits>

#include "engine/status_macros.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace dagrad {
namespace {

absl::StatusOr<TensorType> InferFloatUnary(const InferContext& ctx) {
  if (absl::Status st = RequireFloat(ctx, 0, "input"); !st.ok()) return st;
  return ctx.in(0);
}

// VectorF32<Fn>::kernel is the CpuKernels entry that computes Fn on
// float32 at the active ISA level (ops/cpu/kernels/cpu_kernels.h), where
// the C library's one call per element is the cost; null for the others.
using UnaryF32 = void (*)(const float* x, float* y, int64_t n);
template <typename Fn>
struct VectorF32 {
  static constexpr UnaryF32 CpuKernels::*kernel = nullptr;
};
template <>
struct VectorF32<TanhFn> {
  static constexpr UnaryF32 CpuKernels::*kernel = &CpuKernels::tanh_f32;
};
template <>
struct VectorF32<SigmoidFn> {
  static constexpr UnaryF32 CpuKernels::*kernel = &CpuKernels::sigmoid_f32;
};

// UnaryKernel runs Fn elementwise (or its vectorised kernel, VectorF32);
// Fn is built from the node's attributes.
template <typename Fn>
absl::Status UnaryKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    T* y = ctx.output.as<T>();
    if constexpr (std::is_same_v<T, float> && VectorF32<Fn>::kernel != nullptr) {
      DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* k, ActiveKernels());
      const UnaryF32 kernel = k->*VectorF32<Fn>::kernel;
      ParallelFor(ctx.output.num_elements(), kElementGrain,
                  [=](int64_t b, int64_t e) { kernel(x + b, y + b, e - b); });
      return absl::OkStatus();
    }
    const Fn fn(ctx.attrs());
    ParallelFor(ctx.output.num_elements(), kElementGrain, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = fn(x[i]);
    });
    return absl::OkStatus();
  });
}

// The activations' backward ops (relu_grad) compute dx = Fn(x, g).
absl::StatusOr<TensorType> InferActivationGrad(const InferContext& ctx) {
  if (absl::Status st = RequireFloat(ctx, 0, "x"); !st.ok()) return st;
  if (absl::Status st = RequireSameDType(ctx, 0, 1); !st.ok()) return st;
  if (ctx.in(0).shape != ctx.in(1).shape) {
    return absl::InvalidArgumentError("x and g must have the same shape");
  }
  return ctx.in(1);
}

template <typename Fn>
absl::Status ActivationGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    const T* g = ctx.in(1).as<T>();
    T* dx = ctx.output.as<T>();
    ParallelFor(ctx.output.num_elements(), kElementGrain, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[i] = Fn()(x[i], g[i]);
    });
    return absl::OkStatus();
  });
}

Value Unary(const OpDef& op, Value x, Attrs attrs = Attrs()) {
  return BuildOp(op, {x}, std::move(attrs));
}

// ScalarArithmetic is Unary for the ops that Value-and-double arithmetic
// builds (x + 1.0 is a scale node, 2.0 / x a pow one): an integer or bool
// x is refused naming what the user wrote, `written`, not the node's op.
Value ScalarArithmetic(const OpDef& op, Value x, Attrs attrs, absl::string_view written) {
  if (x.ok() && !IsFloating(x.dtype())) {
    return x.graph()->Error(absl::InvalidArgumentError(
        absl::StrCat(written, ": x must be float32 or float64, got ", x.node().TypeString(),
                     " (Cast it to a float first)")));
  }
  return Unary(op, x, std::move(attrs));
}

// In the gradient rules below, `c.output` is y = f(x) and `c.grad` is dL/dy.
// `onnx_form` is the OpDef's OnnxForm (engine/op.h); the op registers itself.
#define DAGRAD_UNARY_OP(var, symbol, label, Fn, grad_rule, onnx_form) \
  const OpDef var = {.name = #symbol,                                \
                     .dot_label = label,                               \
                     .infer = InferFloatUnary,                         \
                     .cpu = UnaryKernel<Fn>,                           \
                     .grad = grad_rule,                                \
                     .inplace = true,                                  \
                     .onnx = onnx_form};                               \
  DAGRAD_REGISTER_OP(var, symbol)

}  // namespace

// ---- neg: y = -x ------------------------------------------------------------

namespace {
std::vector<Value> NegBackward(const GradContext& c) { return {-c.grad}; }
}  // namespace

DAGRAD_UNARY_OP(kNeg, neg, "Neg", NegFn, NegBackward, OnnxTwin("Neg"));

Value Neg(Value x) { return Unary(kNeg, x); }

// ---- exp: y = e^x, dy/dx = y ------------------------------------------------

namespace {
std::vector<Value> ExpBackward(const GradContext& c) { return {c.grad * c.output}; }
}  // namespace

DAGRAD_UNARY_OP(kExp, exp, "Exp", ExpFn, ExpBackward, OnnxTwin("Exp"));

Value Exp(Value x) { return Unary(kExp, x); }

// ---- log: y = ln x, dy/dx = 1 / x -------------------------------------------

namespace {
std::vector<Value> LogBackward(const GradContext& c) { return {c.grad / c.inputs[0]}; }
}  // namespace

DAGRAD_UNARY_OP(kLog, log, "Log", LogFn, LogBackward, OnnxTwin("Log"));

Value Log(Value x) { return Unary(kLog, x); }

// ---- sqrt: y = sqrt(x), dy/dx = 1 / (2 y) -----------------------------------

namespace {
std::vector<Value> SqrtBackward(const GradContext& c) { return {c.grad * 0.5 / c.output}; }
}  // namespace

DAGRAD_UNARY_OP(kSqrt, sqrt, "Sqrt", SqrtFn, SqrtBackward, OnnxTwin("Sqrt"));

Value Sqrt(Value x) { return Unary(kSqrt, x); }

// ---- rsqrt: y = 1 / sqrt(x), dy/dx = -x^(-3/2) / 2 = -y^3 / 2 ---------------

// An OpDef, not Pow(x, -0.5): its gradient -y^3 / 2 is torch's at -0 (+inf).
namespace {
std::vector<Value> RsqrtBackward(const GradContext& c) {
  return {c.grad * (Pow(c.output, 3.0) * -0.5)};
}
}  // namespace

DAGRAD_UNARY_OP(kRsqrt, rsqrt, "Rsqrt", RsqrtFn, RsqrtBackward, kOnnxExporter);

Value Rsqrt(Value x) { return Unary(kRsqrt, x); }

// ---- pow: y = x^p -----------------------------------------------------------

namespace {
// d x^p / dx = p x^(p-1), and exactly 0 for p = 0 (x^0 is the constant 1):
// the formula would give 0 * inf = NaN at x = 0 (torch's pow_backward
// special-cases p = 0 the same way). x^(p-1) keeps the forward's semantics:
// C's pow for CPow, torch's for Pow.
std::vector<Value> PowBackward(const GradContext& c) {
  const double p = c.attrs().GetFloat("exponent");
  if (p == 0.0) return {ZerosLike(c.inputs[0])};
  const Value x = c.inputs[0];
  return {c.grad * ((c.attrs().GetBool("c_pow") ? CPow(x, p - 1.0) : Pow(x, p - 1.0)) * p)};
}
}  // namespace

DAGRAD_UNARY_OP(kPow, pow, "Pow", PowFn, PowBackward, kOnnxExporter);

Value Pow(Value x, double exponent) {
  return ScalarArithmetic(kPow, x, Attrs().Float("exponent", exponent),
                          "Pow(x, p), or s / x (x to the power -1)");
}
Value CPow(Value x, double exponent) {
  return Unary(kPow, x, Attrs().Float("exponent", exponent).Bool("c_pow", true));
}

// ---- scale: y = alpha x + beta (Scale and AddScalar) ------------------------

namespace {
std::vector<Value> ScaleBackward(const GradContext& c) {
  return {c.grad * c.attrs().GetFloat("alpha", 1.0)};
}
}  // namespace

DAGRAD_UNARY_OP(kScale, scale, "Scale", ScaleFn, ScaleBackward, kOnnxExporter);

Value Scale(Value x, double factor) {
  return ScalarArithmetic(kScale, x, Attrs().Float("alpha", factor),
                          "x * s or x / s (Scale), a Value times a number");
}
Value AddScalar(Value x, double offset) {
  return ScalarArithmetic(kScale, x, Attrs().Float("alpha", 1.0).Float("beta", offset),
                          "x + s or x - s (AddScalar), a Value plus a number");
}

// ---- relu: y = max(x, 0) ----------------------------------------------------

namespace {
std::vector<Value> ReluBackward(const GradContext& c) {
  return {ReluGrad(c.inputs[0], c.grad)};
}
}  // namespace

DAGRAD_UNARY_OP(kRelu, relu, "ReLU", ReluFn, ReluBackward, OnnxTwin("Relu"));

Value Relu(Value x) { return Unary(kRelu, x); }

// ---- relu_grad(x, g) = g [x > 0], relu's backward op ------------------------

namespace {

// d relu_grad(x, g) / dg = [x > 0]: relu_grad again; x takes no gradient
// (relu'' is zero almost everywhere).
std::vector<Value> ReluGradBackward(const GradContext& c) {
  return {Value(), ReluGrad(c.inputs[0], c.grad)};
}

const OpDef kReluGrad = {.name = "relu_grad",
                         .dot_label = "ReLU'",
                         .infer = InferActivationGrad,
                         .cpu = ActivationGradKernel<ReluBackwardFn>,
                         .grad = ReluGradBackward,
                         .nondiff_inputs = 0b01,
                         .onnx = NoOnnx("a backward op, not in inference graphs")};

}  // namespace

DAGRAD_REGISTER_OP(kReluGrad, relu_grad);

Value ReluGrad(Value x, Value g) { return BuildOp(kReluGrad, {x, g}); }

// ---- tanh: dy/dx = 1 - y^2 --------------------------------------------------

namespace {
std::vector<Value> TanhBackward(const GradContext& c) {
  return {c.grad * (1.0 - c.output * c.output)};
}
}  // namespace

DAGRAD_UNARY_OP(kTanh, tanh, "Tanh", TanhFn, TanhBackward, OnnxTwin("Tanh"));

Value Tanh(Value x) { return Unary(kTanh, x); }

// ---- sigmoid: y = 1 / (1 + e^-x), dy/dx = y (1 - y) -------------------------

namespace {
std::vector<Value> SigmoidBackward(const GradContext& c) {
  return {c.grad * (c.output * (1.0 - c.output))};
}
}  // namespace

DAGRAD_UNARY_OP(kSigmoid, sigmoid, "Sigmoid", SigmoidFn, SigmoidBackward, OnnxTwin("Sigmoid"));

Value Sigmoid(Value x) { return Unary(kSigmoid, x); }

// ---- sin and cos ------------------------------------------------------------

namespace {
std::vector<Value> SinBackward(const GradContext& c) { return {c.grad * Cos(c.inputs[0])}; }
// An OpDef, not Sin(x + pi/2): x + pi/2 rounds, losing cos's digits near pi/2.
std::vector<Value> CosBackward(const GradContext& c) { return {-(c.grad * Sin(c.inputs[0]))}; }
}  // namespace

DAGRAD_UNARY_OP(kSin, sin, "Sin", SinFn, SinBackward, OnnxTwin("Sin"));
DAGRAD_UNARY_OP(kCos, cos, "Cos", CosFn, CosBackward, OnnxTwin("Cos"));

Value Sin(Value x) { return Unary(kSin, x); }
Value Cos(Value x) { return Unary(kCos, x); }

// ---- softplus: y = log(1 + e^x), dy/dx = sigmoid(x) -------------------------

// An OpDef, not Log(1 + Exp(x)): that is 0 for x below about -17 (float32),
// where softplus is e^x, and inf above 88, where it is x.
namespace {
// sigmoid(x) above the threshold too, where torch's gradient is 1: they
// differ by less than e^-20 = 2e-9 there.
std::vector<Value> SoftplusBackward(const GradContext& c) {
  return {c.grad * Sigmoid(c.inputs[0])};
}
}  // namespace

DAGRAD_UNARY_OP(kSoftplus, softplus, "Softplus", SoftplusFn, SoftplusBackward,
                OnnxTwin("Softplus"));

Value Softplus(Value x) { return Unary(kSoftplus, x); }

// ---- abs: y = |x|, dy/dx = sign(x), 0 at +-0 and NaN ------------------------

// An OpDef, not Maximum(x, -x): one pass, |-0| = +0, and torch's gradient
// g sign(x), sign 0 at +-0 and NaN, where Maximum's rule splits the tie
// between x and -x. A product, as torch's: a NaN or infinite g at x = 0
// gives NaN, not a 0 that hides it.
namespace {
std::vector<Value> AbsBackward(const GradContext& c) {
  const Value x = c.inputs[0], zero = ZerosLike(x);
  const Value sign = Where(Greater(x, zero), ScalarLike(x, 1.0),
                           Where(Less(x, zero), ScalarLike(x, -1.0), zero));
  return {c.grad * sign};
}
}  // namespace

DAGRAD_UNARY_OP(kAbs, abs, "Abs", AbsFn, AbsBackward, OnnxTwin("Abs"));

Value Abs(Value x) { return Unary(kAbs, x); }

// ---- erf: dy/dx = 2/sqrt(pi) e^(-x^2) -----------------------------------------

// An OpDef: ONNX's Erf on its own (outside the GELU pattern), and no
// composition of dagrad's ops computes it.
namespace {
std::vector<Value> ErfBackward(const GradContext& c) {
  const Value x = c.inputs[0];
  return {c.grad * Exp(-(x * x)) * M_2_SQRTPI};
}
}  // namespace

DAGRAD_UNARY_OP(kErf, erf, "Erf", ErfFn, ErfBackward, OnnxTwin("Erf"));

Value Erf(Value x) { return Unary(kErf, x); }

#undef DAGRAD_UNARY_OP

}  // namespace dagrad
