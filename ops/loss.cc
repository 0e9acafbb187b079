// Cross-entropy and its fused backward op cross_entropy_grad, each read top
// to bottom: shape inference, CPU kernel, gradient rule, OpDef, builder.
//
// Both kernels check every target before writing anything. The backward
// kernel checks them too: a plan that fetches only gradients never runs the
// forward op.

#include "ops/loss.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "engine/status_macros.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/parallel.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

constexpr const char* kReductionNames[] = {"mean", "sum", "none"};

Shape LeadingShape(const Shape& s) {
  return Shape(absl::Span<const int64_t>(s.dims().data(), s.rank() - 1));
}

absl::StatusOr<CrossEntropyOptions::Reduction> ReductionOf(const Attrs& attrs) {
  const std::string name = attrs.GetStr("reduction", "mean");
  for (int r = 0; r < 3; ++r) {
    if (name == kReductionNames[r]) return static_cast<CrossEntropyOptions::Reduction>(r);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("reduction must be mean, sum or none, got '", name, "'"));
}

// LabelSmoothingOf reads ε, which must lie in [0, 1].
absl::StatusOr<double> LabelSmoothingOf(const Attrs& attrs) {
  const double e = attrs.GetFloat("label_smoothing", 0.0);
  if (e >= 0 && e <= 1) return e;
  return absl::InvalidArgumentError(absl::StrCat("label_smoothing must be in [0, 1], got ", e));
}

// Checks logits (..., C) and targets (...), the inputs both ops share.
absl::Status CheckLogitsAndTargets(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 0, "logits"));
  const Shape& logits = ctx.in(0).shape;
  if (logits.rank() < 1) {
    return absl::InvalidArgumentError("logits must have rank >= 1 (..., C), got ()");
  }
  DAGRAD_RETURN_IF_ERROR(RequireIndex(ctx, 1, "targets"));
  if (ctx.in(1).shape != LeadingShape(logits)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "targets ", ctx.in(1).shape.ToString(), " must have the logits' leading shape ",
        LeadingShape(logits).ToString(), " for logits ", logits.ToString()));
  }
  DAGRAD_RETURN_IF_ERROR(LabelSmoothingOf(ctx.attrs).status());
  return ReductionOf(ctx.attrs).status();
}

// TargetRows pairs each row of logits with its target, -1 where it is ignored.
struct TargetRows {
  std::vector<int64_t> target;
  int64_t count = 0;  // rows not ignored
};

// ReadTargets checks every target lies in [0, C) or is ignore_index.
absl::StatusOr<TargetRows> ReadTargets(const KernelContext& ctx) {
  const TensorRef& targets = ctx.in(1);
  const int64_t classes = ctx.in(0).dim(ctx.in(0).rank() - 1);
  const int64_t ignore = ctx.attrs().GetInt("ignore_index", -100);
  TargetRows rows;
  rows.target.resize(targets.num_elements());
  DAGRAD_RETURN_IF_ERROR(DispatchIndex(targets.dtype, [&](auto tag) {
    using I = decltype(tag);
    const I* t = targets.as<I>();
    for (size_t i = 0; i < rows.target.size(); ++i) {
      const int64_t v = static_cast<int64_t>(t[i]);
      if (v == ignore) {
        rows.target[i] = -1;
        continue;
      }
      if (v < 0 || v >= classes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "targets[", FormatIndex(i, *targets.shape), "] = ", v, " is outside [0, ", classes,
            ") and is not ignore_index (", ignore, ")"));
      }
      rows.target[i] = v;
      ++rows.count;
    }
    return absl::OkStatus();
  }));
  return rows;
}

// RowLoss is one row's -sum(q · log softmax(x)) for the target
// distribution q = (1 - e)·onehot(t) + e/C, in double: with m the row's max
// (NaN if the row holds a NaN), sum(q · (m - x)) + log(sum(exp(x - m))).
// Each m - x is taken before the log is added, so a large m cannot absorb
// the log ([1e30] * 4 has loss log 4, not m + log 4 - m = 0).
template <typename T>
double RowLoss(const CpuKernels& kernels, const T* x, int64_t classes, int64_t t, double e) {
  const T m = RowMax(x, classes);
  const double log_sum = std::log(ExpShiftSum<T>(kernels, x, nullptr, classes, m));
  const double to_target = static_cast<double>(m) - static_cast<double>(x[t]);
  if (e == 0) return to_target + log_sum;
  double to_all = 0;
  for (int64_t k = 0; k < classes; ++k) to_all += static_cast<double>(m) - static_cast<double>(x[k]);
  return (1 - e) * to_target + e * (to_all / static_cast<double>(classes)) + log_sum;
}

// CrossEntropyGrad builds cross_entropy_grad(logits, targets, g) with the
// forward op's attributes.
Value CrossEntropyGrad(Value logits, Value targets, Value g, const Attrs& attrs);

}  // namespace

// ---------------------------------------------------------------------------
// cross_entropy(logits, targets): the mean, sum or per-row -log softmax at
// each row's target.

namespace {

absl::StatusOr<TensorType> InferCrossEntropy(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(CheckLogitsAndTargets(ctx));
  DAGRAD_ASSIGN_OR_RETURN(const auto reduction, ReductionOf(ctx.attrs));
  // A loss per row (none), else a scalar: the shape is built from a span of
  // either length, as GCC 12 warns (-Wmaybe-uninitialized, a false
  // positive of absl's InlinedVector) when it sees an empty Shape moved.
  const Shape& in = ctx.in(0).shape;
  const int64_t rank = reduction == CrossEntropyOptions::kNone ? in.rank() - 1 : 0;
  return TensorType{ctx.in(0).dtype, Shape(absl::MakeConstSpan(in.dims().data(), rank))};
}

absl::Status CrossEntropyKernel(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const TargetRows rows, ReadTargets(ctx));
  DAGRAD_ASSIGN_OR_RETURN(const auto reduction, ReductionOf(ctx.attrs()));
  DAGRAD_ASSIGN_OR_RETURN(const double smoothing, LabelSmoothingOf(ctx.attrs()));
  DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    const int64_t classes = ctx.in(0).dim(ctx.in(0).rank() - 1);
    const int64_t n = static_cast<int64_t>(rows.target.size());
    // Per-row losses, summed afterwards in row order: the result does not
    // depend on the number of threads.
    std::vector<double> loss(n, 0.0);
    ParallelFor(n, RowGrain(classes), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (rows.target[r] < 0) continue;
        loss[r] = RowLoss(*kernels, x + r * classes, classes, rows.target[r], smoothing);
      }
    });
    T* y = ctx.output.as<T>();
    if (reduction == CrossEntropyOptions::kNone) {
      for (int64_t r = 0; r < n; ++r) y[r] = static_cast<T>(loss[r]);
      return absl::OkStatus();
    }
    double total = 0;
    for (double l : loss) total += l;
    if (reduction == CrossEntropyOptions::kMean) total = rows.count ? total / rows.count : 0.0;
    y[0] = static_cast<T>(total);
    return absl::OkStatus();
  });
}

std::vector<Value> CrossEntropyBackward(const GradContext& c) {
  return {CrossEntropyGrad(c.inputs[0], c.inputs[1], c.grad, c.attrs()), Value()};
}

const OpDef kCrossEntropy = {.name = "cross_entropy",
                             .dot_label = "CrossEntropy",
                             .infer = InferCrossEntropy,
                             .cpu = CrossEntropyKernel,
                             .grad = CrossEntropyBackward,
                             .nondiff_inputs = 0b10,
                             .onnx = NoOnnx("a training loss: export its logits")};

}  // namespace

DAGRAD_REGISTER_OP(kCrossEntropy, cross_entropy);

Value CrossEntropy(Value logits, Value targets, CrossEntropyOptions options) {
  if (options.reduction < CrossEntropyOptions::kMean ||
      options.reduction > CrossEntropyOptions::kNone) {
    if (!logits.ok()) return logits;
    return logits.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "cross_entropy: unknown reduction ", static_cast<int>(options.reduction))));
  }
  return BuildOp(kCrossEntropy, {logits, targets},
                 Attrs()
                     .Int("ignore_index", options.ignore_index)
                     .Str("reduction", kReductionNames[options.reduction])
                     .Float("label_smoothing", options.label_smoothing));
}

// ---------------------------------------------------------------------------
// cross_entropy_grad(logits, targets, g): the gradient for logits.

namespace {

// cross_entropy_grad(logits, targets, g): g has the forward output's type.
absl::StatusOr<TensorType> InferCrossEntropyGrad(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(CheckLogitsAndTargets(ctx));
  DAGRAD_ASSIGN_OR_RETURN(const TensorType out, InferCrossEntropy(ctx));
  if (ctx.in(2).dtype != out.dtype || ctx.in(2).shape != out.shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "g must be ", DTypeName(out.dtype), " ", out.shape.ToString(), " like the loss, got ",
        DTypeName(ctx.in(2).dtype), " ", ctx.in(2).shape.ToString()));
  }
  return ctx.in(0);
}

// dlogits = (softmax(logits) - q) * w, q = (1 - e)·onehot(target) + e/C,
// with w = g[row] (none), g (sum) or g / count (mean); the output may alias
// logits (in place).
absl::Status CrossEntropyGradKernel(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const TargetRows rows, ReadTargets(ctx));
  DAGRAD_ASSIGN_OR_RETURN(const auto reduction, ReductionOf(ctx.attrs()));
  DAGRAD_ASSIGN_OR_RETURN(const double smoothing, LabelSmoothingOf(ctx.attrs()));
  DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    const T* g = ctx.in(2).as<T>();
    T* dx = ctx.output.as<T>();
    const int64_t classes = ctx.in(0).dim(ctx.in(0).rank() - 1);
    const int64_t n = static_cast<int64_t>(rows.target.size());
    T w_all = g[0];
    if (reduction == CrossEntropyOptions::kMean) {
      w_all = rows.count ? static_cast<T>(g[0] / static_cast<T>(rows.count)) : T(0);
    }
    ParallelFor(n, RowGrain(classes), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        T* d = dx + r * classes;
        if (rows.target[r] < 0) {
          std::fill(d, d + classes, T(0));
          continue;
        }
        const T* xr = x + r * classes;
        const T w = reduction == CrossEntropyOptions::kNone ? g[r] : w_all;
        // d = exp(x - max), then scaled by w / sum: one exp per class.
        const double sum = ExpShiftSum(*kernels, xr, d, classes, RowMax(xr, classes));
        const T scale = static_cast<T>(w / sum);
        if (smoothing == 0) {
          for (int64_t k = 0; k < classes; ++k) d[k] *= scale;
          d[rows.target[r]] -= w;
          continue;
        }
        const T spread = static_cast<T>(w * smoothing / static_cast<double>(classes));
        for (int64_t k = 0; k < classes; ++k) d[k] = d[k] * scale - spread;
        d[rows.target[r]] -= static_cast<T>(w * (1 - smoothing));
      }
    });
    return absl::OkStatus();
  });
}

const OpDef kCrossEntropyGrad = {.name = "cross_entropy_grad",
                                 .dot_label = "CrossEntropy'",
                                 .infer = InferCrossEntropyGrad,
                                 .cpu = CrossEntropyGradKernel,
                                 .nondiff_inputs = 0b010,
                                 .inplace = true,
                                 .onnx = NoOnnx("a backward op, not in inference graphs")};

Value CrossEntropyGrad(Value logits, Value targets, Value g, const Attrs& attrs) {
  return BuildOp(kCrossEntropyGrad, {logits, targets, g}, attrs);
}

}  // namespace

DAGRAD_REGISTER_OP(kCrossEntropyGrad, cross_entropy_grad);

}  // namespace dagrad
