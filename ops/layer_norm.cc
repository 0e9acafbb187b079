// Layer normalisation over the last axis: shape inference, fused CPU kernels
// for the forward pass and for dx, and the gradient rule.
//
// Each row's mean and variance are accumulated in double with two passes
// (mean, then squared deviations), which avoids the cancellation of
// E[x^2] - E[x]^2 on rows with a large mean. The backward kernel recomputes
// them rather than saving them from the forward pass: a row is re-read from
// cache for a few flops per element, and the graph needs no second output.

#include "ops/layer_norm.h"

#include <algorithm>
#include <cmath>

#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/parallel.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/vector_math.h"

namespace dagrad {
namespace {

constexpr int64_t kGrain = 16384;  // elements per thread, at least

// ---- shape inference -------------------------------------------------------

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

absl::StatusOr<TensorType> InferLayerNorm(const InferContext& ctx) {
  if (absl::Status st = CheckRows(ctx, {1, 2}); !st.ok()) return st;
  return ctx.in(0);
}

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

// ---- CPU kernels -----------------------------------------------------------

struct Moments {
  double mean, rstd;  // rstd = 1 / sqrt(biased variance + eps)
};

template <typename T>
Moments RowMoments(const T* x, int64_t n, double eps) {
  const double mean = SumLanes(n, [&](int64_t i) { return static_cast<double>(x[i]); }) / n;
  const double var = SumLanes(n, [&](int64_t i) {
                       const double d = x[i] - mean;
                       return d * d;
                     }) / n;
  return {mean, 1.0 / std::sqrt(var + eps)};
}


absl::Status LayerNormKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    const T* gamma = ctx.has(1) ? ctx.in(1).as<T>() : nullptr;
    const T* beta = ctx.has(2) ? ctx.in(2).as<T>() : nullptr;
    T* y = ctx.output.as<T>();
    const double eps = ctx.attrs().GetFloat("eps");
    const Rows shape = RowsOf(*ctx.in(0).shape);
    const int64_t rows = shape.rows, d = shape.d;
    // Each row is read whole (for its moments) before any of it is written,
    // and then elementwise, so y may be x's buffer (the op is in place).
    ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(d, 1)),
                [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * d;
        T* yr = y + r * d;
        const Moments m = RowMoments(xr, d, eps);
        // In double: rounding the mean to float32 first would cost up to half
        // an ulp of the mean, which on a row far from 0 is many ulps of xhat.
        for (int64_t i = 0; i < d; ++i) yr[i] = static_cast<T>((xr[i] - m.mean) * m.rstd);
        if (gamma) {
          for (int64_t i = 0; i < d; ++i) yr[i] *= gamma[i];
        }
        if (beta) {
          for (int64_t i = 0; i < d; ++i) yr[i] += beta[i];
        }
      }
    });
    return absl::OkStatus();
  });
}

// dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)), gy = g * gamma.
template <typename T, bool kGamma>
void LayerNormGradRows(const T* x, const T* gamma, const T* g, T* dx, Rows s, double eps) {
  const int64_t d = s.d;
  ParallelFor(s.rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(d, 1)),
              [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * d;
      const T* gr = g + r * d;
      T* dxr = dx + r * d;
      const Moments m = RowMoments(xr, d, eps);
      auto gy = [&](int64_t i) -> double {
        if constexpr (kGamma) {
          return static_cast<double>(gr[i]) * gamma[i];
        } else {
          return gr[i];
        }
      };
      const double mean_gy = SumLanes(d, gy) / d;
      const double mean_gy_xhat =
          SumLanes(d, [&](int64_t i) { return gy(i) * ((xr[i] - m.mean) * m.rstd); }) / d;
      // Read x[i] and g[i] before writing dx[i]: dx may be x's buffer.
      for (int64_t i = 0; i < d; ++i) {
        const double xhat = (xr[i] - m.mean) * m.rstd;
        dxr[i] = static_cast<T>(m.rstd * (gy(i) - mean_gy - xhat * mean_gy_xhat));
      }
    }
  });
}

absl::Status LayerNormGradKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    const T* g = ctx.in(2).as<T>();
    T* dx = ctx.output.as<T>();
    const double eps = ctx.attrs().GetFloat("eps");
    if (ctx.has(1)) {
      LayerNormGradRows<T, true>(x, ctx.in(1).as<T>(), g, dx, RowsOf(*ctx.in(0).shape), eps);
    } else {
      LayerNormGradRows<T, false>(x, nullptr, g, dx, RowsOf(*ctx.in(0).shape), eps);
    }
    return absl::OkStatus();
  });
}

// ---- gradient rule ---------------------------------------------------------

// y = xhat * gamma + beta, xhat = LayerNorm(x) without gamma and beta:
//   dx (..., D)     = layer_norm_grad(x, gamma, g), fused;
//   dgamma (D,)     = sum over rows of g * xhat;
//   dbeta (D,)      = sum over rows of g.
std::vector<Value> LayerNormGradRule(const GradContext& c) {
  const double eps = c.attrs().GetFloat("eps");
  const Value x = c.inputs[0], gamma = c.inputs[1], beta = c.inputs[2], g = c.grad;
  Value dx = c.needs[0] ? LayerNormGrad(x, gamma, g, eps) : Value();
  Value dgamma = c.needs[1]
                     ? SumTo(Mul(g, LayerNorm(x, Value(), Value(), eps)), gamma.shape())
                     : Value();
  Value dbeta = c.needs[2] ? SumTo(g, beta.shape()) : Value();
  return {dx, dgamma, dbeta};
}

// ---- op definitions ----------------------------------------------------------

const OpDef kLayerNorm = {.name = "layer_norm",
                          .dot_label = "LayerNorm",
                          .infer = InferLayerNorm,
                          .cpu = LayerNormKernel,
                          .grad = LayerNormGradRule,
                          .inplace = true};

// Backward-only: no rule, so a second derivative through it is an error
// that names it (see kBackwardOnly in tests/gradcheck_test.cc).
const OpDef kLayerNormGrad = {.name = "layer_norm_grad",
                              .dot_label = "LayerNorm'",
                              .infer = InferLayerNormGrad,
                              .cpu = LayerNormGradKernel,
                              .inplace = true};

}  // namespace

Value LayerNorm(Value x, Value gamma, Value beta, double eps) {
  return BuildOp(kLayerNorm, {x, gamma, beta}, Attrs().Float("eps", eps),
                 /*optional=*/0b110);
}

Value LayerNormGrad(Value x, Value gamma, Value g, double eps) {
  return BuildOp(kLayerNormGrad, {x, gamma, g}, Attrs().Float("eps", eps),
                 /*optional=*/0b010);
}

std::vector<const OpDef*> LayerNormOps() { return {&kLayerNorm, &kLayerNormGrad}; }

}  // namespace dagrad
