// ops/elementwise_math.h
//
// The math of the elementwise ops, for one element, written once and used by
// both the CPU kernels (ops/unary.cc, ops/binary.cc) and the CUDA kernels
// (ops/cuda/unary.cu, ops/cuda/binary.cu), so the two backends cannot drift
// apart: relu(NaN) is NaN on both, pow(-0, 0.5) is -0 on both. A functor is
// built from the node's attributes (most ignore them) and applied per element:
//
//   const TanhFn fn(ctx.attrs());
//   for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
//
// The math functions in namespace `math` take float or double and call the
// C library on the host and CUDA's device functions on the GPU. Integer
// arithmetic wraps around (ops/int_math.h); maximum and minimum propagate
// NaN (ops/minmax.h).

#ifndef DAGRAD_OPS_ELEMENTWISE_MATH_H_
#define DAGRAD_OPS_ELEMENTWISE_MATH_H_

#include <cmath>
#include <type_traits>

#include "engine/attrs.h"
#include "engine/host_device.h"
#include "ops/int_math.h"
#include "ops/minmax.h"

namespace dagrad {
namespace math {

#if defined(__CUDA_ARCH__)
#define DAGRAD_MATH_FN(Name, f_float, f_double)                         \
  __device__ inline float Name(float x) { return ::f_float(x); }        \
  __device__ inline double Name(double x) { return ::f_double(x); }
#else
#define DAGRAD_MATH_FN(Name, f_float, f_double)                         \
  inline float Name(float x) { return std::f_double(x); }         \
  inline double Name(double x) { return std::f_double(x); }
#endif
DAGRAD_MATH_FN(Exp, expf, exp)
DAGRAD_MATH_FN(Log, logf, log)
DAGRAD_MATH_FN(Sqrt, sqrtf, sqrt)
DAGRAD_MATH_FN(Erf, erff, erf)
DAGRAD_MATH_FN(Tanh, tanhf, tanh)
DAGRAD_MATH_FN(Sin, sinf, sin)
DAGRAD_MATH_FN(Cos, cosf, cos)
#undef DAGRAD_MATH_FN

#if defined(__CUDA_ARCH__)
__device__ inline float Pow(float x, float p) { return ::powf(x, p); }
__device__ inline double Pow(double x, double p) { return ::pow(x, p); }
#else
inline float Pow(float x, float p) { return std::pow(x, p); }
inline double Pow(double x, double p) { return std::pow(x, p); }
#endif

inline constexpr double kSqrtHalf = 0.70710678118654752440;   // 1 / sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.3989422804014327;     // 1 / sqrt(2 pi)

}  // namespace math

// ---- unary: y = f(x) ---------------------------------------------------------

#define DAGRAD_STATELESS_FN(Name, expr)         \
  struct Name {                                 \
    explicit Name(const Attrs&) {}              \
    template <typename T>                       \
    DAGRAD_HOST_DEVICE T operator()(T x) const { \
      return expr;                              \
    }                                           \
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
#undef DAGRAD_STATELESS_FN

// The exponents torch computes by multiplication, sqrt and reciprocal are
// computed the same way here, for speed and so that the results agree with
// torch's at the edges: pow(-0, 0.5) = sqrt(-0) = -0, where std::pow gives +0
// (and so the gradient 0.5 * pow(-0, -0.5) = -inf, as torch's).
struct PowFn {
  explicit PowFn(const Attrs& a) : p(a.GetFloat("exponent")) {}
  template <typename T>
  DAGRAD_HOST_DEVICE T operator()(T x) const {
    if (p == 2.0) return x * x;
    if (p == 3.0) return x * x * x;
    if (p == 0.5) return math::Sqrt(x);
    if (p == -0.5) return T(1) / math::Sqrt(x);
    if (p == -1.0) return T(1) / x;
    if (p == -2.0) return T(1) / (x * x);
    return math::Pow(x, static_cast<T>(p));
  }
  double p;
};

// scale(x) = alpha * x + beta.
struct ScaleFn {
  explicit ScaleFn(const Attrs& a)
      : alpha(a.GetFloat("alpha", 1.0)), beta(a.GetFloat("beta", 0.0)) {}
  template <typename T>
  DAGRAD_HOST_DEVICE T operator()(T x) const {
    return static_cast<T>(alpha) * x + static_cast<T>(beta);
  }
  double alpha, beta;
};

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

#define DAGRAD_BINARY_FN(Name, Result, expr)                 \
  struct Name {                                              \
    template <typename T>                                    \
    DAGRAD_HOST_DEVICE Result operator()(T a, T b) const {  \
      return expr;                                           \
    }                                                        \
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

}  // namespace dagrad

#endif  // DAGRAD_OPS_ELEMENTWISE_MATH_H_
