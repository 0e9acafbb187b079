// sgd_update and adam_update: fused, in-place optimizer steps, each read top
// to bottom: shape inference, CPU kernel, OpDef, builder.

#include "ops/optim.h"

#include <cmath>

#include "engine/status_macros.h"
#include "ops/cpu/parallel.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

absl::Status CheckScalar(const InferContext& ctx, int i, const char* what) {
  if (!ctx.has(i)) return absl::OkStatus();
  if (ctx.in(i).dtype != DType::kFloat64 || ctx.in(i).shape.rank() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be a float64 scalar, got ", DTypeName(ctx.in(i).dtype), " ",
        ctx.in(i).shape.ToString()));
  }
  return absl::OkStatus();
}

// Inputs [0, n_tensors) are param, grad and state, all alike; the scalars follow.
absl::StatusOr<TensorType> InferUpdate(const InferContext& ctx, int n_tensors,
                                       std::initializer_list<std::pair<int, const char*>> scalars) {
  if (absl::Status st = RequireFloat(ctx, 0, "param"); !st.ok()) return st;
  for (int i = 1; i < n_tensors; ++i) {
    if (ctx.in(i).dtype != ctx.in(0).dtype || ctx.in(i).shape != ctx.in(0).shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " must match the param's type ", DTypeName(ctx.in(0).dtype), " ",
          ctx.in(0).shape.ToString()));
    }
  }
  for (const auto& [i, what] : scalars) {
    if (absl::Status st = CheckScalar(ctx, i, what); !st.ok()) return st;
  }
  return TensorType{DType::kFloat32, Shape({0})};
}

double ScalarIn(const KernelContext& ctx, int i, double fallback) {
  return ctx.has(i) ? *ctx.in(i).as<double>() : fallback;
}

// Guarded is true when the optional guard input `i` is present and not
// finite: the update must then write nothing.
bool Guarded(const KernelContext& ctx, int i) { return !std::isfinite(ScalarIn(ctx, i, 0)); }

// NonNegative is false for NaN and +-Inf as well as for negative values.
bool NonNegative(double v) { return v >= 0 && std::isfinite(v); }

// LrCheck refuses a learning rate (input `i`) that is not finite and >= 0.
// An lr computed on a device is not on the host (has() is false): unchecked.
absl::Status LrCheck(const KernelContext& ctx, int i) {
  if (!ctx.has(i) || NonNegative(*ctx.in(i).as<double>())) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("lr must be finite and >= 0, got ", *ctx.in(i).as<double>()));
}

}  // namespace

// ---- sgd_update(param, grad, velocity, lr, grad_scale?, guard?) -------------

namespace {

absl::StatusOr<TensorType> InferSgd(const InferContext& ctx) {
  const Attrs& a = ctx.attrs;
  if (!NonNegative(a.GetFloat("momentum")) || !NonNegative(a.GetFloat("weight_decay"))) {
    return absl::InvalidArgumentError(
        absl::StrCat("momentum and weight_decay must be finite and >= 0, got ",
                     a.GetFloat("momentum"), " and ", a.GetFloat("weight_decay")));
  }
  return InferUpdate(ctx, 3, {{3, "lr"}, {4, "grad_scale"}, {5, "guard"}});
}

absl::Status SgdCheck(const KernelContext& ctx) { return LrCheck(ctx, 3); }

absl::Status SgdKernel(const KernelContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(SgdCheck(ctx));
  if (Guarded(ctx, 5)) return absl::OkStatus();
  return DispatchFloat(ctx.in(0).dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = ctx.in(0).as<T>();
    const T* g = ctx.in(1).as<T>();
    T* vel = ctx.in(2).as<T>();
    const T lr = static_cast<T>(ScalarIn(ctx, 3, 0));
    const T scale = static_cast<T>(ScalarIn(ctx, 4, 1));
    const T mu = static_cast<T>(ctx.attrs().GetFloat("momentum"));
    const T wd = static_cast<T>(ctx.attrs().GetFloat("weight_decay"));
    const bool nesterov = ctx.attrs().GetBool("nesterov");
    ParallelFor(ctx.in(0).num_elements(), kElementGrain, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T gi = scale * g[i] + wd * p[i];
        vel[i] = mu * vel[i] + gi;
        p[i] -= lr * (nesterov ? gi + mu * vel[i] : vel[i]);
      }
    });
    return absl::OkStatus();
  });
}

const OpDef kSgdUpdate = {.name = "sgd_update", .dot_label = "SGD", .infer = InferSgd,
                          .cpu = SgdKernel, .differentiable = false, .mutates = 0b101,
                          .check = SgdCheck,
                          .onnx = NoOnnx("an optimizer step, not in inference graphs")};

}  // namespace

DAGRAD_REGISTER_OP(kSgdUpdate, sgd_update);

Value SgdUpdate(Value param, Value grad, Value velocity, Value lr, const SgdOptions& o,
                Value grad_scale, Value guard) {
  return BuildOp(kSgdUpdate, {param, grad, velocity, lr, grad_scale, guard},
                 Attrs()
                     .Float("momentum", o.momentum)
                     .Float("weight_decay", o.weight_decay)
                     .Bool("nesterov", o.nesterov),
                 /*optional=*/0b110000);
}

// ---- adam_update(param, grad, m, v, lr, step, grad_scale?, guard?) ----------

namespace {

absl::StatusOr<TensorType> InferAdam(const InferContext& ctx) {
  const Attrs& a = ctx.attrs;
  const double b1 = a.GetFloat("beta1"), b2 = a.GetFloat("beta2");
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("betas must be in [0, 1), got (", b1, ", ", b2, ")"));
  }
  if (!(a.GetFloat("eps") > 0) || !NonNegative(a.GetFloat("eps")) ||
      !NonNegative(a.GetFloat("weight_decay"))) {
    return absl::InvalidArgumentError(
        absl::StrCat("eps must be finite and > 0 and weight_decay finite and >= 0, got ",
                     a.GetFloat("eps"), " and ", a.GetFloat("weight_decay")));
  }
  if (ctx.has(0) && ctx.in(0).dtype == DType::kFloat32 &&
      !(static_cast<float>(a.GetFloat("eps")) > 0)) {  // the kernel's eps, 0 + 0 / 0 = NaN
    return absl::InvalidArgumentError(absl::StrCat(
        "eps ", a.GetFloat("eps"), " rounds to 0 in float32 (the least above 0 is 1.4e-45)"));
  }
  return InferUpdate(ctx, 4, {{4, "lr"}, {5, "step"}, {6, "grad_scale"}, {7, "guard"}});
}

absl::Status AdamCheck(const KernelContext& ctx) {
  const double t = ScalarIn(ctx, 5, 1);
  if (!(t >= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("step must be >= 1, got ", t));
  }
  return LrCheck(ctx, 4);
}

absl::Status AdamKernel(const KernelContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(AdamCheck(ctx));
  if (Guarded(ctx, 7)) return absl::OkStatus();
  const double t = ScalarIn(ctx, 5, 1);
  return DispatchFloat(ctx.in(0).dtype, [&](auto tag) {
    using T = decltype(tag);
    const Attrs& a = ctx.attrs();
    T* p = ctx.in(0).as<T>();
    const T* g = ctx.in(1).as<T>();
    T* m = ctx.in(2).as<T>();
    T* v = ctx.in(3).as<T>();
    const double lr = ScalarIn(ctx, 4, 0);
    const double b1 = a.GetFloat("beta1"), b2 = a.GetFloat("beta2");
    const double wd = a.GetFloat("weight_decay");
    const bool decoupled = a.GetBool("decoupled");
    // torch.optim.Adam: step_size = lr / bc1; denom = sqrt(v) / sqrt(bc2) + eps;
    // 1 - beta computed in double, as Python does, then rounded to T.
    const T step_size = static_cast<T>(lr / (1 - std::pow(b1, t)));
    const T sqrt_bc2 = static_cast<T>(std::sqrt(1 - std::pow(b2, t)));
    const T eps = static_cast<T>(a.GetFloat("eps"));
    const T scale = static_cast<T>(ScalarIn(ctx, 6, 1));
    const T l2 = static_cast<T>(decoupled ? 0 : wd);
    const T shrink = static_cast<T>(decoupled ? 1 - lr * wd : 1);
    const T tb1 = static_cast<T>(b1), tb2 = static_cast<T>(b2);
    const T rest1 = static_cast<T>(1 - b1), rest2 = static_cast<T>(1 - b2);
    ParallelFor(ctx.in(0).num_elements(), kElementGrain, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T gi = scale * g[i] + l2 * p[i];
        m[i] = tb1 * m[i] + rest1 * gi;
        v[i] = tb2 * v[i] + rest2 * gi * gi;
        p[i] = shrink * p[i] - step_size * m[i] / (std::sqrt(v[i]) / sqrt_bc2 + eps);
      }
    });
    return absl::OkStatus();
  });
}

const OpDef kAdamUpdate = {.name = "adam_update", .dot_label = "Adam", .infer = InferAdam,
                           .cpu = AdamKernel, .differentiable = false, .mutates = 0b1101,
                           .check = AdamCheck,
                           .onnx = NoOnnx("an optimizer step, not in inference graphs")};

}  // namespace

DAGRAD_REGISTER_OP(kAdamUpdate, adam_update);

Value AdamUpdate(Value param, Value grad, Value m, Value v, Value lr, Value step,
                 const AdamOptions& o, Value grad_scale, Value guard) {
  return BuildOp(kAdamUpdate, {param, grad, m, v, lr, step, grad_scale, guard},
                 Attrs()
                     .Float("beta1", o.beta1)
                     .Float("beta2", o.beta2)
                     .Float("eps", o.eps)
                     .Float("weight_decay", o.weight_decay)
                     .Bool("decoupled", o.decoupled),
                 /*optional=*/0b11000000);
}

}  // namespace dagrad
