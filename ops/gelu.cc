// GELU and its backward: shape inference, CPU kernels (float32 through the
// ISA level's vectorised kernels, float64 through GeluFn), the gradient rule
// and the OpDefs, then the builders.

#include "ops/gelu.h"

#include <cmath>
#include <type_traits>

#include "engine/status_macros.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/math/gelu_math.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace dagrad {
namespace {

absl::Status CheckApproximate(const Attrs& attrs) {
  const std::string form = attrs.GetStr("approximate");
  if (form == "none" || form == "tanh") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "approximate must be \"none\" or \"tanh\", got \"", form, "\""));
}

absl::StatusOr<TensorType> InferGelu(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 0, "input"));
  DAGRAD_RETURN_IF_ERROR(CheckApproximate(ctx.attrs));
  return ctx.in(0);
}

// gelu_grad(x, g): x and g alike.
absl::StatusOr<TensorType> InferGeluGrad(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 0, "x"));
  DAGRAD_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 1));
  DAGRAD_RETURN_IF_ERROR(CheckApproximate(ctx.attrs));
  if (ctx.in(0).shape != ctx.in(1).shape) {
    return absl::InvalidArgumentError("x and g must have the same shape");
  }
  return ctx.in(1);
}

// GeluKernelOf runs gelu (g absent) or gelu_grad (g = input 1).
absl::Status GeluKernelOf(const KernelContext& ctx, bool backward) {
  const int64_t n = ctx.output.num_elements();
  return DispatchFloat(ctx.output.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    const T* g = backward ? ctx.in(1).as<T>() : nullptr;
    T* y = ctx.output.as<T>();
    if constexpr (std::is_same_v<T, float>) {
      DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* k, ActiveKernels());
      const GeluArgs args = {GeluIsTanh(ctx.attrs()), x, g, y};
      const auto kernel = backward ? k->gelu_grad_f32 : k->gelu_f32;
      ParallelFor(n, kElementGrain, [&](int64_t b, int64_t e) { kernel(args, b, e); });
    } else if (backward) {
      const GeluBackwardFn fn(ctx.attrs());
      ParallelFor(n, kElementGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = fn(x[i], g[i]);
      });
    } else {
      const GeluFn fn(ctx.attrs());
      ParallelFor(n, kElementGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = fn(x[i]);
      });
    }
    return absl::OkStatus();
  });
}

absl::Status GeluKernel(const KernelContext& ctx) {
  return GeluKernelOf(ctx, false);
}
absl::Status GeluGradKernel(const KernelContext& ctx) {
  return GeluKernelOf(ctx, true);
}

GeluApproximate FormOf(const Attrs& attrs) {
  return GeluIsTanh(attrs) ? GeluApproximate::kTanh : GeluApproximate::kNone;
}

std::vector<Value> GeluGradRule(const GradContext& c) {
  return {GeluGrad(c.inputs[0], c.grad, FormOf(c.attrs()))};
}

// GeluSecondDerivative is gelu''(x) in ordinary ops, which a third
// derivative differentiates in turn: exact, phi(x) (2 - x^2) with phi the
// standard normal density; tanh form, (1 - t^2) (u' - x t u'^2 + x u'' / 2)
// for t = tanh(u), u = c (x + k x^3), so u' = c (1 + 3 k x^2), u'' = 6 c k x.
// 1 - t^2 is taken as 4 sigmoid(2u) sigmoid(-2u), which does not cancel
// where t rounds near 1 (a third of the value lost at x = 5 in float32).
// Far out it is 0 while u'^2 overflows: the result is 0 there, not 0 * inf
// (as gelu_grad's own kernels guard, ops/math/gelu_math.h).
Value GeluSecondDerivative(Value x, GeluApproximate form) {
  const Value x2 = x * x;
  if (form == GeluApproximate::kNone) {
    return Exp(x2 * -0.5) * (2.0 - x2) * (1 / std::sqrt(2 * M_PI));
  }
  const double c = kGeluTanhScale, k = kGeluTanhCubic;
  const Value u = (x + x2 * x * k) * c;
  const Value t = Tanh(u);
  const Value sech2 = Sigmoid(u * 2.0) * Sigmoid(u * -2.0) * 4.0;
  const Value du = (x2 * (3 * k) + 1.0) * c;
  const Value zero = ScalarLike(x, 0.0);
  return Where(Equal(sech2, zero), zero,
               sech2 * (du - x * t * du * du + x2 * (3 * c * k)));
}

// gelu_grad(x, g) = g gelu'(x): d/dx = G g gelu''(x), d/dg = G gelu'(x).
std::vector<Value> GeluGradGradRule(const GradContext& c) {
  const GeluApproximate form = FormOf(c.attrs());
  const Value x = c.inputs[0], g = c.inputs[1];
  return {c.grad * g * GeluSecondDerivative(x, form), GeluGrad(x, c.grad, form)};
}

const OpDef kGelu = {.name = "gelu",
                     .dot_label = "GELU",
                     .infer = InferGelu,
                     .cpu = GeluKernel,
                     .grad = GeluGradRule,
                     .inplace = true,
                     .onnx = kOnnxExporter};
const OpDef kGeluGrad = {.name = "gelu_grad",
                         .dot_label = "GELU'",
                         .infer = InferGeluGrad,
                         .cpu = GeluGradKernel,
                         .grad = GeluGradGradRule,
                         .onnx = NoOnnx("a backward op, not in inference graphs")};

Attrs FormAttrs(GeluApproximate approximate) {
  return Attrs().Str("approximate",
                     std::string(GeluApproximateName(approximate)));
}

}  // namespace

DAGRAD_REGISTER_OP(kGelu, gelu);
DAGRAD_REGISTER_OP(kGeluGrad, gelu_grad);

absl::string_view GeluApproximateName(GeluApproximate approximate) {
  return approximate == GeluApproximate::kTanh ? "tanh" : "none";
}

Value Gelu(Value x) { return Gelu(x, GeluApproximate::kNone); }
Value Gelu(Value x, GeluApproximate approximate) {
  return BuildOp(kGelu, {x}, FormAttrs(approximate));
}
Value GeluGrad(Value x, Value g, GeluApproximate approximate) {
  return BuildOp(kGeluGrad, {x, g}, FormAttrs(approximate));
}

}  // namespace dagrad
