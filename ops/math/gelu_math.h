// ops/math/gelu_math.h
//
// GELU for one element, torch's formulas as written, shared by the float64
// CPU kernel (ops/gelu.cc) and the CUDA kernels (ops/cuda/gelu.cu). The
// float32 CPU kernels are vectorised separately (ops/cpu/kernels/gelu_kernel.cc).
//
//   // setup: Kernel
//   const GeluFn fn(ctx.attrs());
//   for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);

#ifndef DAGRAD_OPS_MATH_GELU_MATH_H_
#define DAGRAD_OPS_MATH_GELU_MATH_H_

#include "engine/attrs.h"
#include "engine/device/host_device.h"
#include "ops/elementwise.h"

namespace dagrad {

inline constexpr double kGeluTanhScale =
    0.79788456080286535588;  // sqrt(2 / pi)
inline constexpr double kGeluTanhCubic = 0.044715;

// GeluIsTanh reads the node's "approximate" attribute ("tanh" or "none").
inline bool GeluIsTanh(const Attrs& attrs) {
  return attrs.GetStr("approximate") == "tanh";
}

// gelu(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), or with tanh:
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
struct GeluFn {
  explicit GeluFn(const Attrs& attrs) : tanh(GeluIsTanh(attrs)) {}
  template <typename T>
  DAGRAD_HOST_DEVICE T operator()(T x) const {
    if (tanh) {
      const T inner = T(kGeluTanhScale) * (x + T(kGeluTanhCubic) * x * x * x);
      return T(0.5) * x * (T(1) + math::Tanh(inner));
    }
    return T(0.5) * x * (T(1) + math::Erf(x * T(math::kSqrtHalf)));
  }
  bool tanh;
};

// gelu_grad(x, g) = g gelu'(x): g (Phi(x) + x phi(x)), or for tanh torch's
// g (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 x^2)),
// t = tanh(inner).
struct GeluBackwardFn {
  explicit GeluBackwardFn(const Attrs& attrs) : tanh(GeluIsTanh(attrs)) {}
  template <typename T>
  DAGRAD_HOST_DEVICE T operator()(T x, T g) const {
    if (tanh) {
      const T inner = T(kGeluTanhScale) * (x + T(kGeluTanhCubic) * x * x * x);
      const T t = math::Tanh(inner);
      const T d_inner =
          T(kGeluTanhScale) * (T(1) + T(3 * kGeluTanhCubic) * x * x);
      // (1 - t^2) is 0 where d_inner may overflow (|x| past 1.8e19 in
      // float): the term is 0 there, not 0 * inf.
      const T sech2 = T(1) - t * t;
      return g * (T(0.5) * (T(1) + t) + (sech2 == T(0) ? T(0) : T(0.5) * x * sech2 * d_inner));
    }
    const T cdf = T(0.5) * (T(1) + math::Erf(x * T(math::kSqrtHalf)));
    const T pdf = math::Exp(T(-0.5) * x * x) * T(math::kInvSqrt2Pi);
    return g * (cdf + x * pdf);
  }
  bool tanh;
};

}  // namespace dagrad

#endif  // DAGRAD_OPS_MATH_GELU_MATH_H_
