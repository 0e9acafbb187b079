// fill and arange, each read top to bottom: shape inference, CPU kernel,
// OpDef, builder. Neither has inputs or a gradient; the planner evaluates
// them once, when compiling.

#include "ops/fill.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "ops/op_util.h"
#include "ops/parallel.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

absl::StatusOr<DType> DTypeAttr(const Attrs& attrs) {
  const std::string name = attrs.GetStr("dtype");
  const auto dtype = DTypeFromName(name);
  if (!dtype) return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "'"));
  return *dtype;
}

// CheckBytes keeps results within the 2^62 bytes a Tensor may hold, so that
// a typo in a shape or a range fails here, naming it, and not at run time.
absl::Status CheckBytes(double elements, DType dtype, absl::string_view what) {
  if (elements >= std::ldexp(1.0, 62) / static_cast<double>(SizeOf(dtype))) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " of ", DTypeName(dtype), " needs more than the 2^62 bytes a tensor may hold"));
  }
  return absl::OkStatus();
}

}  // namespace

// ---- fill -------------------------------------------------------------------

namespace {

absl::StatusOr<TensorType> InferFill(const InferContext& ctx) {
  auto dtype = DTypeAttr(ctx.attrs);
  if (!dtype.ok()) return dtype.status();
  const Shape shape(ctx.attrs.GetInts("shape"));
  auto n = ValidateDims(shape.dims());
  if (!n.ok()) return n.status();
  if (absl::Status st = CheckBytes(static_cast<double>(*n), *dtype,
                                   absl::StrCat("shape ", shape.ToString()));
      !st.ok()) {
    return st;
  }
  if (absl::Status st = CheckValueFits(ctx.attrs.GetFloat("value"), *dtype, "value"); !st.ok()) {
    return st;
  }
  return TensorType{*dtype, shape};
}

absl::Status FillKernel(const KernelContext& ctx) {
  const double value = ctx.attrs().GetFloat("value");
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = static_cast<T>(value);
    T* y = ctx.output.as<T>();
    ParallelFor(ctx.output.num_elements(), kElementGrain, [&](int64_t b, int64_t e) {
      std::fill(y + b, y + e, v);
    });
    return absl::OkStatus();
  });
}

const OpDef kFill = {.name = "fill",
                     .dot_label = "Fill",
                     .infer = InferFill,
                     .cpu = FillKernel,
                     .differentiable = false};

}  // namespace

Value Fill(Graph& g, const Shape& shape, double value, DType dtype) {
  return BuildOpIn(g, kFill, {},
                   Attrs()
                       .Ints("shape", std::vector<int64_t>(shape.dims().begin(),
                                                           shape.dims().end()))
                       .Float("value", value)
                       .Str("dtype", std::string(DTypeName(dtype))));
}

Value ZerosLike(Value x) {
  if (!x.ok()) return x;
  return Fill(*x.graph(), x.shape(), 0.0, x.dtype());
}

Value OnesLike(Value x) {
  if (!x.ok()) return x;
  return Fill(*x.graph(), x.shape(), 1.0, x.dtype());
}

// ---- arange -----------------------------------------------------------------

namespace {

// ArangeLength returns ceil((stop - start) / step) clamped at 0, as a double
// (it may be far beyond int64 before it is checked).
double ArangeLength(const Attrs& a) {
  const double len =
      std::ceil((a.GetFloat("stop") - a.GetFloat("start")) / a.GetFloat("step"));
  return len > 0 ? len : 0;
}

absl::StatusOr<TensorType> InferArange(const InferContext& ctx) {
  auto dtype = DTypeAttr(ctx.attrs);
  if (!dtype.ok()) return dtype.status();
  const double start = ctx.attrs.GetFloat("start"), stop = ctx.attrs.GetFloat("stop"),
               step = ctx.attrs.GetFloat("step");
  const std::string range = absl::StrCat("start=", start, ", stop=", stop, ", step=", step);
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
    return absl::InvalidArgumentError(
        absl::StrCat("start, stop and step must be finite, got ", range));
  }
  if (step == 0) return absl::InvalidArgumentError(absl::StrCat("step must not be 0, got ", range));
  if (*dtype == DType::kBool) return absl::InvalidArgumentError("dtype bool has no ranges");
  const double len = ArangeLength(ctx.attrs);
  // (stop - start) may itself overflow to inf: !(len < limit) catches it.
  if (absl::Status st = CheckBytes(len, *dtype, absl::StrCat("length ", len, " (", range, ")"));
      !st.ok()) {
    return st;
  }
  if (len > 0) {
    for (auto [v, what] : {std::pair{step, "step"}, std::pair{start, "first element"},
                           std::pair{start + (len - 1) * step, "last element"}}) {
      if (absl::Status st = CheckValueFits(v, *dtype, what); !st.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(st.message(), ", ", range));
      }
    }
  }
  return TensorType{*dtype, Shape({static_cast<int64_t>(len)})};
}

absl::Status ArangeKernel(const KernelContext& ctx) {
  const double start = ctx.attrs().GetFloat("start"), step = ctx.attrs().GetFloat("step");
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* y = ctx.output.as<T>();
    ParallelFor(ctx.output.num_elements(), kElementGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = static_cast<T>(start + static_cast<double>(i) * step);
    });
    return absl::OkStatus();
  });
}

const OpDef kArange = {.name = "arange",
                       .dot_label = "Arange",
                       .infer = InferArange,
                       .cpu = ArangeKernel,
                       .differentiable = false};

}  // namespace

Value Arange(Graph& g, double start, double stop, double step, DType dtype) {
  return BuildOpIn(g, kArange, {},
                   Attrs()
                       .Float("start", start)
                       .Float("stop", stop)
                       .Float("step", step)
                       .Str("dtype", std::string(DTypeName(dtype))));
}

std::vector<const OpDef*> FillOps() { return {&kFill, &kArange}; }

}  // namespace dagrad
