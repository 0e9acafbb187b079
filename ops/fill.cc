// fill and arange, each read top to bottom: shape inference, CPU kernel,
// OpDef, builder. Neither has inputs or a gradient; the planner evaluates
// them once, when compiling. Their values are attributes of the type the
// dtype's kernel reads (int64 for integer and bool dtypes, double for
// floats), so that an int64 never passes through a double.

#include "ops/fill.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <variant>

#include "ops/cpu/parallel.h"
#include "ops/op_util.h"
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

const AttrValue* FindAttr(const Attrs& attrs, absl::string_view name) {
  for (const auto& [n, v] : attrs.entries()) {
    if (n == name) return &v;
  }
  return nullptr;
}

// SetValueAttr stores `v` as attribute `name` of the type `dtype`'s kernel
// reads. A double that an integer dtype cannot hold stays a double, for
// CheckValueAttr to refuse with CheckValueFits's reason.
void SetValueAttr(Attrs& attrs, absl::string_view name, FillValue v, DType dtype) {
  if (IsFloating(dtype)) {
    attrs.Float(name, v.ToDouble());
  } else if (v.is_integer()) {
    attrs.Int(name, v.integer());  // its range is checked by shape inference
  } else if (absl::StatusOr<int64_t> i = v.ToInteger(dtype, name); i.ok()) {
    attrs.Int(name, *i);
  } else {
    attrs.Float(name, v.ToDouble());
  }
}

// CheckValueAttr returns OK when attribute `name` holds a value `dtype`
// holds, in the type its kernel reads; else InvalidArgument naming `what`
// and the value. Only a node built by hand has an attribute of the other
// type or none.
absl::Status CheckValueAttr(const Attrs& attrs, absl::string_view name, DType dtype,
                            absl::string_view what) {
  const AttrValue* v = FindAttr(attrs, name);
  const int64_t* i = v ? std::get_if<int64_t>(v) : nullptr;
  const double* d = v ? std::get_if<double>(v) : nullptr;
  if (i && !IsFloating(dtype)) return CheckIntegerFits(*i, dtype, what);
  if (d) {
    absl::Status fits = CheckValueFits(*d, dtype, what);
    if (!fits.ok() || IsFloating(dtype)) return fits;
  }
  return absl::InvalidArgumentError(absl::StrCat(what, " must be an attribute of type ",
                                                 IsFloating(dtype) ? "double" : "int64",
                                                 " for dtype ", DTypeName(dtype)));
}

// AttrText prints attribute `name`, whichever its type.
std::string AttrText(const Attrs& attrs, absl::string_view name) {
  const AttrValue* v = FindAttr(attrs, name);
  if (const int64_t* i = v ? std::get_if<int64_t>(v) : nullptr) return absl::StrCat(*i);
  if (const double* d = v ? std::get_if<double>(v) : nullptr) return ShortestDecimal(*d);
  return "(none)";
}

}  // namespace

absl::StatusOr<int64_t> FillValue::ToInteger(DType dtype, absl::string_view what) const {
  if (IsFloating(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", DTypeName(dtype), " is not an integer dtype"));
  }
  if (is_integer_) {
    if (absl::Status st = CheckIntegerFits(integer_, dtype, what); !st.ok()) return st;
    return integer_;
  }
  if (absl::Status st = CheckValueFits(double_, dtype, what); !st.ok()) return st;
  return static_cast<int64_t>(double_);  // an integer the dtype holds: exact
}

FillValue FillValueAttr(const Attrs& attrs, absl::string_view name, DType dtype) {
  if (IsFloating(dtype)) return attrs.GetFloat(name);
  return attrs.GetInt(name);
}

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
  if (absl::Status st = CheckValueAttr(ctx.attrs, "value", *dtype, "value"); !st.ok()) return st;
  return TensorType{*dtype, shape};
}

absl::Status FillKernel(const KernelContext& ctx) {
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = FillElement<T>(ctx.attrs());
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
                     .differentiable = false,
                     .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kFill, fill);

Value Fill(Graph& g, const Shape& shape, FillValue value, DType dtype) {
  Attrs attrs;
  attrs.Ints("shape", std::vector<int64_t>(shape.dims().begin(), shape.dims().end()))
      .Str("dtype", std::string(DTypeName(dtype)));
  SetValueAttr(attrs, "value", value, dtype);
  return BuildOpIn(g, kFill, {}, std::move(attrs));
}

Value ZerosLike(Value x) {
  if (!x.ok()) return x;
  return Fill(*x.graph(), x.shape(), 0, x.dtype());
}

Value OnesLike(Value x) {
  if (!x.ok()) return x;
  return Fill(*x.graph(), x.shape(), 1, x.dtype());
}

// ---- arange -----------------------------------------------------------------

namespace {

// FloatArangeLength returns ceil((stop - start) / step) clamped at 0, as a
// double (it may be far beyond int64 before it is checked).
double FloatArangeLength(const Attrs& a) {
  const double len = std::ceil((a.GetFloat("stop") - a.GetFloat("start")) / a.GetFloat("step"));
  return len > 0 ? len : 0;
}

// IntegerArangeLength is the same count exactly, in 128 bits: int64 bounds
// may be 2^64 apart.
__int128 IntegerArangeLength(const Attrs& a) {
  const __int128 span = static_cast<__int128>(a.GetInt("stop")) - a.GetInt("start");
  const int64_t step = a.GetInt("step");
  __int128 n = span / step;
  if (span % step != 0 && (span < 0) == (step < 0)) ++n;  // the quotient rounded up
  return n > 0 ? n : 0;
}

// CheckRange checks what ArangeLength needs: finite values of the dtype's
// attribute types, which the dtype holds, and a step that is not 0.
absl::Status CheckRange(const Attrs& a, DType dtype, const std::string& range) {
  for (const char* name : {"start", "stop", "step"}) {
    const AttrValue* v = FindAttr(a, name);
    const double* d = v ? std::get_if<double>(v) : nullptr;
    if (d && !std::isfinite(*d)) {
      return absl::InvalidArgumentError(
          absl::StrCat("start, stop and step must be finite, got ", range));
    }
  }
  for (const char* name : {"start", "stop", "step"}) {
    if (absl::Status st = CheckValueAttr(a, name, dtype, name); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(st.message(), ", ", range));
    }
  }
  if (IsFloating(dtype) ? a.GetFloat("step") == 0 : a.GetInt("step") == 0) {
    return absl::InvalidArgumentError(absl::StrCat("step must not be 0, got ", range));
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorType> InferArange(const InferContext& ctx) {
  auto dtype = DTypeAttr(ctx.attrs);
  if (!dtype.ok()) return dtype.status();
  if (*dtype == DType::kBool) return absl::InvalidArgumentError("dtype bool has no ranges");
  const Attrs& a = ctx.attrs;
  const std::string range = absl::StrCat("start=", AttrText(a, "start"), ", stop=",
                                         AttrText(a, "stop"), ", step=", AttrText(a, "step"));
  if (absl::Status st = CheckRange(a, *dtype, range); !st.ok()) return st;
  const bool floats = IsFloating(*dtype);
  const double len = floats ? FloatArangeLength(a) : static_cast<double>(IntegerArangeLength(a));
  // (stop - start) may itself overflow to inf: !(len < limit) catches it.
  if (absl::Status st = CheckBytes(len, *dtype, absl::StrCat("length ", len, " (", range, ")"));
      !st.ok()) {
    return st;
  }
  // A float length below 2^62 is an integer its double holds exactly.
  const int64_t n = floats ? static_cast<int64_t>(len) : static_cast<int64_t>(IntegerArangeLength(a));
  return TensorType{*dtype, Shape({n})};
}

absl::Status ArangeKernel(const KernelContext& ctx) {
  const ArangeFn fn(ctx.attrs());
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* y = ctx.output.as<T>();
    ParallelFor(ctx.output.num_elements(), kElementGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = fn.At<T>(i);
    });
    return absl::OkStatus();
  });
}

const OpDef kArange = {.name = "arange",
                       .dot_label = "Arange",
                       .infer = InferArange,
                       .cpu = ArangeKernel,
                       .differentiable = false,
                       .onnx = kOnnxExporter};

// IntegerStop returns an integer dtype's stop: a non-integer double stop
// becomes the integer next to it beyond the elements (ceil going up, floor
// going down), which leaves the same integers below it (or above).
FillValue IntegerStop(FillValue stop, FillValue step) {
  const double s = stop.ToDouble();
  if (stop.is_integer() || !std::isfinite(s) || std::trunc(s) == s) return stop;
  return step.ToDouble() < 0 ? std::floor(s) : std::ceil(s);
}

}  // namespace

DAGRAD_REGISTER_OP(kArange, arange);

Value Arange(Graph& g, FillValue start, FillValue stop, FillValue step, DType dtype) {
  Attrs attrs;
  attrs.Str("dtype", std::string(DTypeName(dtype)));
  SetValueAttr(attrs, "start", start, dtype);
  SetValueAttr(attrs, "stop", IsFloating(dtype) ? stop : IntegerStop(stop, step), dtype);
  SetValueAttr(attrs, "step", step, dtype);
  return BuildOpIn(g, kArange, {}, std::move(attrs));
}

}  // namespace dagrad
