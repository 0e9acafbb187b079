// Layer normalisation over the last axis and its fused backward ops, for
// dx and for dgamma with dbeta, each read top to bottom: shape inference,
// CPU kernel, gradient rule, OpDef, builder.
//
// Each row's mean and variance are accumulated in double with two passes
// (mean, then squared deviations), which avoids the cancellation of
// E[x^2] - E[x]^2 on rows with a large mean. The backward kernels recompute
// them rather than saving them from the forward pass: a row is re-read from
// cache for a few flops per element, and the graph needs no second output.
// The row loops are ISA-level kernels (ops/cpu/kernels/row_kernels.cc).

#include "ops/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "engine/status_macros.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/parallel.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

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

// CheckGradient validates input `i`, g = dL/dy, against x (input 0).
absl::Status CheckGradient(const InferContext& ctx, int i) {
  if (ctx.in(i).dtype != ctx.in(0).dtype || ctx.in(i).shape != ctx.in(0).shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "g must match x (", DTypeName(ctx.in(0).dtype), " ", ctx.in(0).shape.ToString(),
        "), got ", DTypeName(ctx.in(i).dtype), " ", ctx.in(i).shape.ToString()));
  }
  return absl::OkStatus();
}

// layer_norm and layer_norm_grad run the active ISA level's row kernels
// (ops/cpu/kernels/row_kernels.cc), over chunks of rows split across threads.
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
  ParallelFor(shape.rows, RowGrain(shape.d),
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

// RowOf returns row `i` of a (2, D) value as a (D,) one.
Value RowOf(Value pair, int64_t i) {
  return Reshape(Slice(pair, 0, i, i + 1), {pair.shape()[1]});
}

// y = xhat * gamma + beta, xhat = LayerNorm(x) without gamma and beta:
//   dx (..., D)            = layer_norm_grad(x, gamma, g), fused;
//   (dgamma, dbeta) (2, D) = layer_norm_param_grad(x, g): the sums over
//                            rows of g * xhat and of g, fused.
std::vector<Value> LayerNormBackward(const GradContext& c) {
  const double eps = c.attrs().GetFloat("eps");
  const Value x = c.inputs[0], gamma = c.inputs[1], g = c.grad;
  Value dx = c.needs[0] ? LayerNormGrad(x, gamma, g, eps) : Value();
  if (!c.needs[1] && !c.needs[2]) return {dx, Value(), Value()};
  const Value dparams = LayerNormParamGrad(x, g, eps);
  return {dx, c.needs[1] ? RowOf(dparams, 0) : Value(),
          c.needs[2] ? RowOf(dparams, 1) : Value()};
}

const OpDef kLayerNorm = {.name = "layer_norm",
                          .dot_label = "LayerNorm",
                          .infer = InferLayerNorm,
                          .cpu = LayerNormKernel,
                          .grad = LayerNormBackward,
                          .inplace = true,
                          .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kLayerNorm, layer_norm);

Value LayerNorm(Value x, Value gamma, Value beta, double eps) {
  return BuildOp(kLayerNorm, {x, gamma, beta}, Attrs().Float("eps", eps),
                 /*optional=*/0b110);
}

// ---- layer_norm_grad: dx, fused ---------------------------------------------

namespace {

// layer_norm_grad(x, gamma?, g).
absl::StatusOr<TensorType> InferLayerNormGrad(const InferContext& ctx) {
  if (absl::Status st = CheckRows(ctx, {1}); !st.ok()) return st;
  if (absl::Status st = CheckGradient(ctx, 2); !st.ok()) return st;
  return ctx.in(0);
}

absl::Status LayerNormGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype,
                       [&](auto tag) { return LayerNormRows<decltype(tag)>(ctx, true); });
}

// Backward-only: no rule, so a second derivative through it is an error
// that names it (its op case is flagged kBackwardOnly, tests/autodiff/layer_norm_cases.cc).
const OpDef kLayerNormGrad = {.name = "layer_norm_grad",
                              .dot_label = "LayerNorm'",
                              .infer = InferLayerNormGrad,
                              .cpu = LayerNormGradKernel,
                              .inplace = true,
                              .onnx = NoOnnx("a backward op, not in inference graphs")};

}  // namespace

DAGRAD_REGISTER_OP(kLayerNormGrad, layer_norm_grad);

Value LayerNormGrad(Value x, Value gamma, Value g, double eps) {
  return BuildOp(kLayerNormGrad, {x, gamma, g}, Attrs().Float("eps", eps),
                 /*optional=*/0b010);
}

// ---- layer_norm_param_grad: dgamma and dbeta, fused --------------------------

namespace {

// layer_norm_param_grad(x, g) -> (2, D).
absl::StatusOr<TensorType> InferLayerNormParamGrad(const InferContext& ctx) {
  if (absl::Status st = CheckRows(ctx, {}); !st.ok()) return st;
  if (absl::Status st = CheckGradient(ctx, 1); !st.ok()) return st;
  const Shape& x = ctx.in(0).shape;
  return TensorType{ctx.in(0).dtype, Shape({2, x[x.rank() - 1]})};
}

// Rows go in blocks fixed by D alone, each block's sums into its own slot,
// and the slots are added in block order: the result does not depend on
// how many threads share the blocks.
template <typename T>
absl::Status ParamGradRows(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
  // Plain locals, not a structured binding: the lambda below captures them
  // (C++17 forbids capturing bindings; clang rejects it).
  const Rows shape = RowsOf(*ctx.in(0).shape);
  const int64_t rows = shape.rows, d = shape.d;
  const LayerNormArgs<T> args = {.d = d,
                                 .eps = ctx.attrs().GetFloat("eps"),
                                 .x = ctx.in(0).as<T>(),
                                 .g = ctx.in(1).as<T>()};
  const int64_t block = RowGrain(d);
  const int64_t blocks = (rows + block - 1) / block;
  std::vector<double> partial(blocks * 2 * d, 0.0);
  ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      double* acc = partial.data() + k * 2 * d;
      const int64_t first = k * block, last = std::min(rows, first + block);
      if constexpr (std::is_same_v<T, float>) {
        kernels->layer_norm_param_grad_f32(args, first, last, acc);
      } else {
        kernels->layer_norm_param_grad_f64(args, first, last, acc);
      }
    }
  });
  std::vector<double> total(2 * d, 0.0);
  for (int64_t k = 0; k < blocks; ++k) {
    for (int64_t j = 0; j < 2 * d; ++j) total[j] += partial[k * 2 * d + j];
  }
  T* out = ctx.output.as<T>();
  for (int64_t j = 0; j < 2 * d; ++j) out[j] = static_cast<T>(total[j]);
  return absl::OkStatus();
}

absl::Status LayerNormParamGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype,
                       [&](auto tag) { return ParamGradRows<decltype(tag)>(ctx); });
}

// p = (sum over rows of g * xhat, sum over rows of g); with G = dL/dp:
//   dx (..., D) = layer_norm_grad(x, G[0], g): d/dx of sum(g * G[0] * xhat);
//   dg (..., D) = xhat * G[0] + G[1] = layer_norm(x, G[0], G[1]).
// So LayerNorm's dgamma and dbeta have second derivatives, as they had when
// they were built from mul and sum.
std::vector<Value> LayerNormParamGradBackward(const GradContext& c) {
  const double eps = c.attrs().GetFloat("eps");
  const Value x = c.inputs[0], g = c.inputs[1];
  const Value dgamma = RowOf(c.grad, 0);
  return {c.needs[0] ? LayerNormGrad(x, dgamma, g, eps) : Value(),
          c.needs[1] ? LayerNorm(x, dgamma, RowOf(c.grad, 1), eps) : Value()};
}

const OpDef kLayerNormParamGrad = {.name = "layer_norm_param_grad",
                                   .dot_label = "LayerNormParams'",
                                   .infer = InferLayerNormParamGrad,
                                   .cpu = LayerNormParamGradKernel,
                                   .grad = LayerNormParamGradBackward,
                                   .onnx = NoOnnx("a backward op, not in inference graphs")};

}  // namespace

DAGRAD_REGISTER_OP(kLayerNormParamGrad, layer_norm_param_grad);

Value LayerNormParamGrad(Value x, Value g, double eps) {
  return BuildOp(kLayerNormParamGrad, {x, g}, Attrs().Float("eps", eps));
}

}  // namespace dagrad
