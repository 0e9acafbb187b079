// Layer normalisation over the last axis and its fused backward op for dx,
// each read top to bottom: shape inference, CPU kernel, gradient rule,
// OpDef, builder.
//
// Each row's mean and variance are accumulated in double with two passes
// (mean, then squared deviations), which avoids the cancellation of
// E[x^2] - E[x]^2 on rows with a large mean. The backward kernel recomputes
// them rather than saving them from the forward pass: a row is re-read from
// cache for a few flops per element, and the graph needs no second output.
// The row loops are ISA-level kernels (ops/kernels/row_kernels.cc).

#include "ops/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "engine/status_macros.h"
#include "ops/cpu_isa.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/parallel.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/vector_math.h"

namespace dagrad {
namespace {

constexpr int64_t kGrain = 16384;  // elements per thread, at least

// CheckRows validates x (input 0), the attribute eps and the optional (D,)
// inputs listed in `affine` (gamma, beta).
absl::Status CheckRows(const InferContext& ctx, std::initializer_list<int> affine) {
  if (absl::Status st = RequireFloat(ctx, 0, "x"); !st.ok()) return st;
  const Shape& x = ctx.in(0).shape;
  if (x.rank() < 1) {
    return absl::InvalidArgumentError("x must have rank >= 1 (rows over its last axis)");
  }
  const double eps = ctx.attrs.GetFloat("eps");
  if (!(eps > 0) || !std::isfinite(eps)) {
    return absl::InvalidArgumentError(
        absl::StrCat("eps must be a finite number > 0, got ", eps));
  }
  const int64_t d = x[x.rank() - 1];
  for (int i : affine) {
    if (!ctx.has(i)) continue;
    const char* what = i == 1 ? "gamma" : "beta";
    if (ctx.in(i).dtype != ctx.in(0).dtype) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is ", DTypeName(ctx.in(i).dtype),
                                                     ", x is ", DTypeName(ctx.in(0).dtype)));
    }
    if (ctx.in(i).shape != Shape({d})) {
      return absl::InvalidArgumentError(absl::StrCat(what, " must be (D,) = (", d, ",), got ",
                                                     ctx.in(i).shape.ToString()));
    }
  }
  return absl::OkStatus();
}

// Both kernels run the active ISA level's row kernels
// (ops/kernels/row_kernels.cc), over chunks of rows split across threads.
template <typename T>
absl::Status LayerNormRows(const KernelContext& ctx, bool grad) {
  DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
  const Rows shape = RowsOf(*ctx.in(0).shape);
  // Inputs: forward (x, gamma?, beta?), grad (x, gamma?, g).
  const LayerNormArgs<T> args = {shape.d,
                                 ctx.attrs().GetFloat("eps"),
                                 ctx.in(0).as<T>(),
                                 ctx.has(1) ? ctx.in(1).as<T>() : nullptr,
                                 !grad && ctx.has(2) ? ctx.in(2).as<T>() : nullptr,
                                 grad ? ctx.in(2).as<T>() : nullptr,
                                 ctx.output.as<T>()};
  ParallelFor(shape.rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(shape.d, 1)),
              [&](int64_t begin, int64_t end) {
                if constexpr (std::is_same_v<T, float>) {
                  (grad ? kernels->layer_norm_grad_f32 : kernels->layer_norm_f32)(args, begin, end);
                } else {
                  (grad ? kernels->layer_norm_grad_f64 : kernels->layer_norm_f64)(args, begin, end);
                }
              });
  return absl::OkStatus();
}

}  // namespace

// ---- layer_norm -------------------------------------------------------------

namespace {

absl::StatusOr<TensorType> InferLayerNorm(const InferContext& ctx) {
  if (absl::Status st = CheckRows(ctx, {1, 2}); !st.ok()) return st;
  return ctx.in(0);
}

absl::Status LayerNormKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype,
                       [&](auto tag) { return LayerNormRows<decltype(tag)>(ctx, false); });
}

// y = xhat * gamma + beta, xhat = LayerNorm(x) without gamma and beta:
//   dx (..., D)     = layer_norm_grad(x, gamma, g), fused;
//   dgamma (D,)     = sum over rows of g * xhat;
//   dbeta (D,)      = sum over rows of g.
std::vector<Value> LayerNormBackward(const GradContext& c) {
  const double eps = c.attrs().GetFloat("eps");
  const Value x = c.inputs[0], gamma = c.inputs[1], beta = c.inputs[2], g = c.grad;
  Value dx = c.needs[0] ? LayerNormGrad(x, gamma, g, eps) : Value();
  Value dgamma =
      c.needs[1] ? SumTo(g * LayerNorm(x, Value(), Value(), eps), gamma.shape()) : Value();
  Value dbeta = c.needs[2] ? SumTo(g, beta.shape()) : Value();
  return {dx, dgamma, dbeta};
}

const OpDef kLayerNorm = {.name = "layer_norm",
                          .dot_label = "LayerNorm",
                          .infer = InferLayerNorm,
                          .cpu = LayerNormKernel,
                          .grad = LayerNormBackward,
                          .inplace = true};

}  // namespace

Value LayerNorm(Value x, Value gamma, Value beta, double eps) {
  return BuildOp(kLayerNorm, {x, gamma, beta}, Attrs().Float("eps", eps),
                 /*optional=*/0b110);
}

// ---- layer_norm_grad: dx, fused ---------------------------------------------

namespace {

// layer_norm_grad(x, gamma?, g).
absl::StatusOr<TensorType> InferLayerNormGrad(const InferContext& ctx) {
  if (absl::Status st = CheckRows(ctx, {1}); !st.ok()) return st;
  if (ctx.in(2).dtype != ctx.in(0).dtype || ctx.in(2).shape != ctx.in(0).shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "g must match x (", DTypeName(ctx.in(0).dtype), " ", ctx.in(0).shape.ToString(),
        "), got ", DTypeName(ctx.in(2).dtype), " ", ctx.in(2).shape.ToString()));
  }
  return ctx.in(0);
}

absl::Status LayerNormGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype,
                       [&](auto tag) { return LayerNormRows<decltype(tag)>(ctx, true); });
}

// Backward-only: no rule, so a second derivative through it is an error
// that names it (its op case is flagged kBackwardOnly, tests/layer_norm_cases.cc).
const OpDef kLayerNormGrad = {.name = "layer_norm_grad",
                              .dot_label = "LayerNorm'",
                              .infer = InferLayerNormGrad,
                              .cpu = LayerNormGradKernel,
                              .inplace = true};

}  // namespace

Value LayerNormGrad(Value x, Value gamma, Value g, double eps) {
  return BuildOp(kLayerNormGrad, {x, gamma, g}, Attrs().Float("eps", eps),
                 /*optional=*/0b010);
}

std::vector<const OpDef*> LayerNormOps() { return {&kLayerNorm, &kLayerNormGrad}; }

}  // namespace dagrad
