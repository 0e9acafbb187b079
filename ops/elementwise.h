// ops/elementwise.h
//
// Elementwise ops. Binary ops broadcast their inputs numpy-style; both must
// have the same dtype. Unary math ops take float32 or float64. Gradients of
// broadcast inputs are reduced back to their shapes by autodiff.
//
//   Value y = Relu(Add(MatMul(x, w), b));     // b broadcasts over rows
//   Value z = (a - b) * c / 2.0;              // operators build the same ops
//   Value r = 2.0 / (a * a + 1.0);            // a scalar on either side
//
// Errors (in the returned Value): shapes that do not broadcast, differing
// dtypes, a non-floating input to a math op.
//
// The second half of this header is the math of these ops for one element,
// a functor per op, written once for the CPU kernels (ops/unary.cc,
// ops/binary.cc) and the CUDA kernels (ops/cuda/unary.cu,
// ops/cuda/binary.cu). A new elementwise op adds here its declaration, its
// functor and its line in its family's list (DAGRAD_UNARY_MATH_OPS, ...),
// which gives it a CUDA kernel; CONTRIBUTING.md has the checklist.

#ifndef DAGRAD_OPS_ELEMENTWISE_H_
#define DAGRAD_OPS_ELEMENTWISE_H_

#include <cmath>
#include <concepts>
#include <type_traits>

#include "engine/attrs.h"
#include "engine/device/host_device.h"
#include "engine/graph.h"
#include "ops/gelu.h"  // Gelu, GeluGrad
#include "ops/math/int_math.h"
#include "ops/math/minmax.h"

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
// Atan2 returns the angle of the point (x, y) in [-pi, pi], atan(y / x) in
// the quadrant of (x, y), as torch.atan2(y, x), with C's atan2 at the edges
// (atan2(0, -1) = pi, atan2(-0, -1) = -pi). Floats only. Its gradients are
// x / (x^2 + y^2) for y and -y / (x^2 + y^2) for x.
//
//   Value angle = Atan2(y, x);
Value Atan2(Value y, Value x);

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
Value Abs(Value x);  // |x|; gradient g sign(x), sign 0 at +-0 and NaN, as torch's
Value Erf(Value x);  // the error function; gradient g 2/sqrt(pi) e^(-x^2)

// CPow returns x ** exponent as C's pow computes it for every exponent,
// as numpy and ONNX's Pow do: pow(-0, 0.5) = +0 and pow(-inf, 0.5) = +inf,
// where Pow, computing 0.5 as torch does (a sqrt), gives -0 and NaN, and
// pow(-0, -0.5) = +inf and pow(-inf, -0.5) = +0, where Pow gives -inf and
// NaN; for 3 and -2 it rounds once where Pow's products round twice. The
// ONNX importer builds ONNX's Pow with it. Floats only; its gradient is
// exponent * CPow(x, exponent - 1), 0 for exponent 0.
//
//   Value y = CPow(x, 0.5);                  // -0.0 -> +0, -inf -> +inf
Value CPow(Value x, double exponent);

// PowTensor returns x ** p elementwise with numpy broadcasting, an exponent
// per element, as C's pow computes it (CPow's values for one exponent).
// Floats only, both of one dtype. Its gradients are g p x^(p-1) for x and
// g log(x) x^p for p (NaN for p's where x < 0, as torch's).
//
//   Value z = PowTensor(x, y);               // x (B, T, E), y (B, T, E)
Value PowTensor(Value x, Value p);

// Softplus returns log(1 + e^x), as torch.nn.functional.softplus with its
// defaults (beta 1, threshold 20): x itself where x > 20, as log(1 + e^x)
// rounds to x there. Its gradient is sigmoid(x).
//
//   Value y = Softplus(x);
Value Softplus(Value x);

// Cast converts to `dtype`, from and to every dtype, bfloat16 and float16
// included (ops/cast.cc; each element as engine/bfloat16.h's
// ConvertElement: exact when widening, to nearest even when narrowing to
// a float, a NaN kept a NaN with its sign). Float to int truncates toward
// 0; a float the integer dtype cannot hold fails the run. Differentiable
// between float dtypes (the gradient is cast back to the input's
// GradientDType), not from or to integers and bool.
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
// s / a is torch's a.reciprocal() * s, rounding as it does.
inline Value operator/(double s, Value a) { return Scale(Pow(a, -1.0), s); }

// ==== The math, for one element ===============================================
//
// What the kernels of the ops above compute per element, shared by the CPU
// and CUDA kernels, so the two backends cannot drift apart: relu(NaN) is
// NaN on both, pow(-0, 0.5) is -0 on both. One exception: float32 tanh
// and sigmoid run vectorised kernels on the CPU (ops/cpu/kernels/
// activation_kernel.cc, within 1.5 and 2.5 ulps; sigmoid 0 where it is
// subnormal), these functors on CUDA. A functor is built from the
// node's attributes (most ignore them) and applied per element:
//
//   // setup: Kernel
//   const TanhFn fn(ctx.attrs());
//   for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
//
// The math functions in namespace `math` take float or double and call the
// C library on the host and CUDA's device functions on the GPU (other
// families' kernels use them too). Integer arithmetic wraps around
// (ops/math/int_math.h); maximum and minimum propagate NaN (ops/math/minmax.h).

namespace math {

#if defined(__CUDA_ARCH__)
#define DAGRAD_MATH_FN(Name, f_float, f_double)                  \
  __device__ inline float Name(float x) { return ::f_float(x); } \
  __device__ inline double Name(double x) { return ::f_double(x); }
#else
#define DAGRAD_MATH_FN(Name, f_float, f_double)                 \
  inline float Name(float x) { return std::f_double(x); }      \
  inline double Name(double x) { return std::f_double(x); }
#endif
DAGRAD_MATH_FN(Exp, expf, exp)
DAGRAD_MATH_FN(Log, logf, log)
DAGRAD_MATH_FN(Log1p, log1pf, log1p)
DAGRAD_MATH_FN(Sqrt, sqrtf, sqrt)
DAGRAD_MATH_FN(Erf, erff, erf)
DAGRAD_MATH_FN(Tanh, tanhf, tanh)
DAGRAD_MATH_FN(Sin, sinf, sin)
DAGRAD_MATH_FN(Cos, cosf, cos)
DAGRAD_MATH_FN(Fabs, fabsf, fabs)
#undef DAGRAD_MATH_FN

#if defined(__CUDA_ARCH__)
__device__ inline float Pow(float x, float p) { return ::powf(x, p); }
__device__ inline double Pow(double x, double p) { return ::pow(x, p); }
__device__ inline float Atan2(float y, float x) { return ::atan2f(y, x); }
__device__ inline double Atan2(double y, double x) { return ::atan2(y, x); }
#else
inline float Pow(float x, float p) { return std::pow(x, p); }
inline double Pow(double x, double p) { return std::pow(x, p); }
inline float Atan2(float y, float x) { return std::atan2(y, x); }
inline double Atan2(double y, double x) { return std::atan2(y, x); }
#endif

inline constexpr double kSqrtHalf = 0.70710678118654752440;   // 1 / sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.3989422804014327;     // 1 / sqrt(2 pi)

}  // namespace math

// ---- unary: y = f(x) ---------------------------------------------------------

#define DAGRAD_STATELESS_FN(Name, expr)          \
  struct Name {                                  \
    explicit Name(const Attrs&) {}               \
    template <typename T>                        \
    DAGRAD_HOST_DEVICE T operator()(T x) const { \
      return expr;                               \
    }                                            \
  }

DAGRAD_STATELESS_FN(NegFn, -x);
DAGRAD_STATELESS_FN(ExpFn, math::Exp(x));
DAGRAD_STATELESS_FN(LogFn, math::Log(x));
DAGRAD_STATELESS_FN(SqrtFn, math::Sqrt(x));
DAGRAD_STATELESS_FN(RsqrtFn, T(1) / math::Sqrt(x));
// x <= 0 is false for NaN, so relu(NaN) = NaN, as torch.relu.
DAGRAD_STATELESS_FN(ReluFn, x <= T(0) ? T(0) : x);
DAGRAD_STATELESS_FN(TanhFn, math::Tanh(x));
DAGRAD_STATELESS_FN(SigmoidFn, T(1) / (T(1) + math::Exp(-x)));
DAGRAD_STATELESS_FN(SinFn, math::Sin(x));
DAGRAD_STATELESS_FN(CosFn, math::Cos(x));
DAGRAD_STATELESS_FN(AbsFn, math::Fabs(x));
// torch's formula: x above the threshold 20, log1p(exp(x)) below it.
DAGRAD_STATELESS_FN(SoftplusFn, x > T(20) ? x : math::Log1p(math::Exp(x)));
DAGRAD_STATELESS_FN(ErfFn, math::Erf(x));
#undef DAGRAD_STATELESS_FN

// The exponents torch computes by multiplication, sqrt and reciprocal are
// computed the same way here, for speed and so that the results agree with
// torch's at the edges: pow(-0, 0.5) = sqrt(-0) = -0, where std::pow gives +0
// (and so the gradient 0.5 * pow(-0, -0.5) = -inf, as torch's). With the
// attribute c_pow (CPow) every exponent goes to C's pow instead, as numpy
// and ONNX Runtime compute ONNX's Pow: one OpDef with a flag rather than a
// second op, so that the kernels, the gradient rule and the exporter of
// x ** p stay one.
struct PowFn {
  explicit PowFn(const Attrs& a) : p(a.GetFloat("exponent")), c_pow(a.GetBool("c_pow")) {}
  template <typename T>
  DAGRAD_HOST_DEVICE T operator()(T x) const {
    if (c_pow) return math::Pow(x, static_cast<T>(p));
    if (p == 2.0) return x * x;
    if (p == 3.0) return x * x * x;
    if (p == 0.5) return math::Sqrt(x);
    if (p == -0.5) return T(1) / math::Sqrt(x);
    if (p == -1.0) return T(1) / x;
    if (p == -2.0) return T(1) / (x * x);
    return math::Pow(x, static_cast<T>(p));
  }
  double p;
  bool c_pow;
};

// scale(x) = alpha * x + beta; alpha * x alone when beta is 0, since
// adding +0 would turn a -0 product into +0 (Scale(-0.0, 2) is -0.0).
struct ScaleFn {
  explicit ScaleFn(const Attrs& a)
      : alpha(a.GetFloat("alpha", 1.0)), beta(a.GetFloat("beta", 0.0)) {}
  template <typename T>
  DAGRAD_HOST_DEVICE T operator()(T x) const {
    const T y = static_cast<T>(alpha) * x;
    return beta == 0.0 ? y : y + static_cast<T>(beta);
  }
  double alpha, beta;
};

// The unary math ops, by OpDef name and functor, each run by the family's
// one kernel template on float32 and float64: ops/cuda/unary.cu registers a
// CUDA kernel for every line, so a new op's line here is its CUDA kernel.
#define DAGRAD_UNARY_MATH_OPS(X) \
  X(neg, NegFn)                  \
  X(exp, ExpFn)                  \
  X(log, LogFn)                  \
  X(sqrt, SqrtFn)                \
  X(rsqrt, RsqrtFn)              \
  X(pow, PowFn)                  \
  X(scale, ScaleFn)              \
  X(relu, ReluFn)                \
  X(tanh, TanhFn)                \
  X(sigmoid, SigmoidFn)          \
  X(sin, SinFn)                  \
  X(cos, CosFn)                  \
  X(softplus, SoftplusFn)        \
  X(abs, AbsFn)                  \
  X(erf, ErfFn)

// ---- activation gradients: dx = g * f'(x) --------------------------------------

// relu_grad: g where x > 0. x <= 0 is false for NaN, so the gradient passes
// there, as torch's threshold_backward (relu(NaN) = NaN is not <= 0). g is
// read unconditionally so the CPU loop vectorises into a select.
struct ReluBackwardFn {
  template <typename T>
  DAGRAD_HOST_DEVICE T operator()(T x, T g) const {
    return x <= T(0) ? T(0) : g;
  }
};

// ---- binary: y = f(a, b) --------------------------------------------------------

#define DAGRAD_BINARY_FN(Name, Result, expr)                \
  struct Name {                                             \
    template <typename T>                                   \
    DAGRAD_HOST_DEVICE Result operator()(T a, T b) const { \
      return expr;                                          \
    }                                                       \
  }

DAGRAD_BINARY_FN(AddFn, T, WrapAdd(a, b));
DAGRAD_BINARY_FN(SubFn, T, WrapSub(a, b));
DAGRAD_BINARY_FN(MulFn, T, WrapMul(a, b));
DAGRAD_BINARY_FN(MaxFn, T, PropagatingMax(a, b));
DAGRAD_BINARY_FN(MinFn, T, PropagatingMin(a, b));
DAGRAD_BINARY_FN(EqFn, bool, a == b);
DAGRAD_BINARY_FN(LtFn, bool, a < b);
DAGRAD_BINARY_FN(GtFn, bool, a > b);
DAGRAD_BINARY_FN(AndFn, bool, a && b);
DAGRAD_BINARY_FN(OrFn, bool, a || b);
#undef DAGRAD_BINARY_FN

// An integer division by zero fails the run (each backend checks the divisor
// first); 0 is written rather than divide, which would trap.
struct DivFn {
  template <typename T>
  DAGRAD_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == T(0)) return T(0);
    }
    return WrapDiv(a, b);
  }
};

// C's pow for every pair, as numpy and ONNX's Pow compute it.
struct PowTensorFn {
  template <std::floating_point T>
  DAGRAD_HOST_DEVICE T operator()(T x, T p) const {
    return math::Pow(x, p);
  }
};

struct Atan2Fn {
  template <std::floating_point T>
  DAGRAD_HOST_DEVICE T operator()(T y, T x) const {
    return math::Atan2(y, x);
  }
};

// The binary ops of each kind, by OpDef name and functor: ops/cuda/binary.cu
// registers a CUDA kernel for every line. Arithmetic runs on every numeric
// dtype, or on float32 and float64 for a functor over std::floating_point
// only; comparisons on every numeric dtype (not bool: Cast masks to int32
// to compare them); logic on bool.
#define DAGRAD_BINARY_ARITH_OPS(X) \
  X(add, AddFn)                    \
  X(sub, SubFn)                    \
  X(mul, MulFn)                    \
  X(div, DivFn)                    \
  X(maximum, MaxFn)                \
  X(minimum, MinFn)                  \
  X(atan2, Atan2Fn)                  \
  X(pow_tensor, PowTensorFn)
#define DAGRAD_BINARY_COMPARE_OPS(X) \
  X(equal, EqFn)                     \
  X(less, LtFn)                      \
  X(greater, GtFn)
#define DAGRAD_BINARY_LOGIC_OPS(X) \
  X(logical_and, AndFn)            \
  X(logical_or, OrFn)

// kFloatOnly<Fn>: Fn is written for float and double only (over
// std::floating_point); the kernels run it on those dtypes alone, and the
// op's shape inference rejects the others.
template <typename Fn>
inline constexpr bool kFloatOnly = !std::is_invocable_v<const Fn&, int32_t, int32_t>;

}  // namespace dagrad

#endif  // DAGRAD_OPS_ELEMENTWISE_H_
