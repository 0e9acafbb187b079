// Shape ops: reshape (a view), permute, broadcast_to, concat, slice and its
// adjoint unslice. None does arithmetic, so each takes every dtype, the
// 16-bit floats included (but unslice, which only gradients use, and
// gradients are never 16-bit: GradientDType); gradients are other shape
// ops.
// Each op reads top to bottom: shape inference, CPU kernel, gradient rule,
// OpDef, builder.

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_join.h"
#include "engine/checked_math.h"
#include "engine/status_macros.h"
#include "ops/cpu/internal/broadcast.h"
#include "ops/cpu/internal/tiled_permute.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

std::vector<int64_t> ToVector(const Shape& s) {
  return std::vector<int64_t>(s.dims().begin(), s.dims().end());
}

}  // namespace

// ---- reshape ----------------------------------------------------------------

namespace {

absl::StatusOr<TensorType> InferReshape(const InferContext& ctx) {
  std::vector<int64_t> dims = ctx.attrs.GetInts("shape");
  const int64_t total = ctx.in(0).shape.num_elements();
  int infer_at = -1;
  std::vector<int64_t> given;  // the dims but the -1
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer_at >= 0) return absl::InvalidArgumentError("more than one -1 in shape");
      infer_at = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("negative dimension ", dims[i]));
    } else {
      given.push_back(dims[i]);
    }
  }
  std::optional<int64_t> product = CheckedProduct(given);
  if (!product.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("target shape (", absl::StrJoin(dims, ", "),
                                                   ") has an element count that overflows int64"));
  }
  int64_t known = *product;
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot infer -1: ", total, " elements do not divide by ", known));
    }
    dims[infer_at] = total / known;
    known = total;
  }
  if (known != total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target shape (", absl::StrJoin(ctx.attrs.GetInts("shape"), ", "), ") holds ",
        known, " elements, input holds ", total));
  }
  return TensorType{ctx.in(0).dtype, Shape(dims)};
}

std::optional<int64_t> ReshapeView(const Node&, const Node&) { return 0; }

// Views are not run by the executor; the kernel runs where the output has
// bytes of its own (constant folding), and copies.
absl::Status ViewKernel(const KernelContext& ctx) {
  if (ctx.output.data != ctx.in(0).data && ctx.output.nbytes() > 0) {
    std::memcpy(ctx.output.data, ctx.in(0).data, ctx.output.nbytes());
  }
  return absl::OkStatus();
}

std::vector<Value> ReshapeBackward(const GradContext& c) {
  return {Reshape(c.grad, ToVector(c.inputs[0].shape()))};
}

const OpDef kReshape = {.name = "reshape", .dot_label = "Reshape",
                        .infer = InferReshape, .cpu = ViewKernel,
                        .grad = ReshapeBackward, .view = ReshapeView,
                        .reduced_floats = kReducedFloatBits,
                        .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kReshape, reshape);

Value Reshape(Value x, std::vector<int64_t> dims) {
  return BuildOp(kReshape, {x}, Attrs().Ints("shape", std::move(dims)));
}

// ---- detach: y = x, and no gradient through it ------------------------------

namespace {

absl::StatusOr<TensorType> InferDetach(const InferContext& ctx) { return ctx.in(0); }

// An OpDef, not a flag on Value: autodiff stops at a node whose op is not
// differentiable, and the planner aliases a view, so detach costs nothing.
const OpDef kDetach = {.name = "detach", .dot_label = "Detach",
                       .infer = InferDetach, .cpu = ViewKernel,
                       .differentiable = false, .view = ReshapeView,
                       .reduced_floats = kReducedFloatBits,
                       .onnx = OnnxTwin("Identity")};

}  // namespace

DAGRAD_REGISTER_OP(kDetach, detach);

Value Detach(Value x) { return BuildOp(kDetach, {x}); }

// ---- permute ----------------------------------------------------------------

namespace {

absl::StatusOr<TensorType> InferPermute(const InferContext& ctx) {
  const std::vector<int64_t> perm = ctx.attrs.GetInts("perm");
  const Shape& in = ctx.in(0).shape;
  if (static_cast<int>(perm.size()) != in.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "perm has ", perm.size(), " entries for rank ", in.rank()));
  }
  std::vector<bool> seen(in.rank(), false);
  Dims out;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.rank() || seen[p]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "perm [", absl::StrJoin(perm, ", "), "] is not a permutation of 0..",
          in.rank() - 1));
    }
    seen[p] = true;
    out.push_back(in[p]);
  }
  return TensorType{ctx.in(0).dtype, Shape(out)};
}

// CopyRuns copies each run of `loop` (one input) from x to y: a row copy
// where the run reads x contiguously, else CopyRun. broadcast_to's and
// permute's copy.
template <size_t Width>
void CopyRuns(const StridedLoop<1>& loop, const char* x, char* y) {
  loop.Run([&](int64_t o, const int64_t* in, const int64_t* step, int64_t n) {
    if (step[0] == 1) {
      std::memcpy(y + o * Width, x + in[0] * Width, n * Width);
    } else {
      CopyRun<Width>(y + o * Width, x + in[0] * Width, step[0], n);
    }
  });
}

// CopyRunsOfWidth is CopyRuns for elements of `width` bytes (1, 2, 4 or 8,
// every dtype's).
absl::Status CopyRunsOfWidth(const StridedLoop<1>& loop, size_t width, const char* x, char* y) {
  switch (width) {
    case 1: CopyRuns<1>(loop, x, y); break;
    case 2: CopyRuns<2>(loop, x, y); break;
    case 4: CopyRuns<4>(loop, x, y); break;
    case 8: CopyRuns<8>(loop, x, y); break;
    default: return absl::InternalError(absl::StrCat("a copy of ", width, "-byte elements"));
  }
  return absl::OkStatus();
}

absl::Status PermuteKernel(const KernelContext& ctx) {
  const std::vector<int64_t> perm = ctx.attrs().GetInts("perm");
  const Dims in_strides = RowMajorStrides(*ctx.in(0).shape);
  Dims strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[i] = in_strides[perm[i]];
  const size_t size = SizeOf(ctx.output.dtype);
  const char* x = static_cast<const char*>(ctx.in(0).data);
  char* y = static_cast<char*>(ctx.output.data);
  if (TiledPermute(x, y, size, *ctx.output.shape, strides)) return absl::OkStatus();
  return CopyRunsOfWidth(StridedLoop<1>(*ctx.output.shape, {strides}), size, x, y);
}

std::vector<Value> PermuteBackward(const GradContext& c) {
  const std::vector<int64_t> perm = c.attrs().GetInts("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return {Permute(c.grad, inverse)};
}

const OpDef kPermute = {.name = "permute", .dot_label = "Permute",
                        .infer = InferPermute, .cpu = PermuteKernel,
                        .grad = PermuteBackward, .reduced_floats = kReducedFloatBits,
                        .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kPermute, permute);

Value Permute(Value x, std::vector<int64_t> perm) {
  return BuildOp(kPermute, {x}, Attrs().Ints("perm", std::move(perm)));
}

Value Transpose(Value x, int64_t a, int64_t b) {
  if (!x.ok()) return x;
  auto na = NormalizeAxis(a, x.rank()), nb = NormalizeAxis(b, x.rank());
  if (!na.ok() || !nb.ok()) {
    return x.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "transpose of '", x.path(), "' ", x.shape().ToString(), ": axes (", a, ", ", b,
        ") out of range")));
  }
  std::vector<int64_t> perm(x.rank());
  for (int i = 0; i < x.rank(); ++i) perm[i] = i;
  std::swap(perm[*na], perm[*nb]);
  return Permute(x, perm);
}

// ---- broadcast_to -----------------------------------------------------------

namespace {

absl::StatusOr<TensorType> InferBroadcastTo(const InferContext& ctx) {
  const Shape target(ctx.attrs.GetInts("shape"));
  if (!IsBroadcastableTo(ctx.in(0).shape, target)) {
    return absl::InvalidArgumentError(absl::StrCat(
        ctx.in(0).shape.ToString(), " does not broadcast to ", target.ToString()));
  }
  return TensorType{ctx.in(0).dtype, target};
}

absl::Status BroadcastToKernel(const KernelContext& ctx) {
  return CopyRunsOfWidth(BroadcastLoop<1>(*ctx.output.shape, {ctx.in(0).shape}),
                         SizeOf(ctx.output.dtype), static_cast<const char*>(ctx.in(0).data),
                         static_cast<char*>(ctx.output.data));
}

// Autodiff sums the output-shaped gradient back to the input's shape.
std::vector<Value> BroadcastToBackward(const GradContext& c) { return {c.grad}; }

const OpDef kBroadcastTo = {.name = "broadcast_to", .dot_label = "BroadcastTo",
                            .infer = InferBroadcastTo, .cpu = BroadcastToKernel,
                            .grad = BroadcastToBackward, .reduced_floats = kReducedFloatBits,
                            .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kBroadcastTo, broadcast_to);

Value BroadcastTo(Value x, const Shape& shape) {
  if (x.ok() && x.shape() == shape) return x;
  return BuildOp(kBroadcastTo, {x}, Attrs().Ints("shape", ToVector(shape)));
}

// ---- concat -----------------------------------------------------------------

namespace {

absl::StatusOr<TensorType> InferConcat(const InferContext& ctx) {
  const TensorType& first = ctx.in(0);
  auto axis = NormalizeAxis(ctx.attrs.GetInt("axis"), first.shape.rank());
  if (!axis.ok()) return axis.status();
  Dims out = first.shape.dims();
  out[*axis] = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const TensorType& t = ctx.in(static_cast<int>(i));
    if (t.dtype != first.dtype) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has dtype ",
                                                     DTypeName(t.dtype), ", input 0 ",
                                                     DTypeName(first.dtype)));
    }
    bool match = t.shape.rank() == first.shape.rank();
    for (int d = 0; match && d < first.shape.rank(); ++d) {
      match = d == *axis || t.shape[d] == first.shape[d];
    }
    if (!match) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " ", t.shape.ToString(), " differs from input 0 ",
          first.shape.ToString(), " off axis ", *axis));
    }
    const std::optional<int64_t> sum = CheckedAdd(out[*axis], t.shape[*axis]);
    if (!sum) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the inputs' sizes along axis ", *axis, " sum past int64 at input ", i));
    }
    out[*axis] = *sum;
  }
  return TensorType{first.dtype, Shape(out)};
}

// Each output row (the axes before `axis`) is the inputs' rows one after
// another.
absl::Status ConcatKernel(const KernelContext& ctx) {
  if (ctx.output.num_elements() == 0) return absl::OkStatus();  // and `outer` may overflow
  DAGRAD_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ctx.attrs().GetInt("axis"), ctx.output.rank()));
  const size_t size = SizeOf(ctx.output.dtype);
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= ctx.output.dim(d);
  const int64_t out_row = ctx.output.num_elements() / std::max<int64_t>(outer, 1) * size;
  char* y = static_cast<char*>(ctx.output.data);
  ParallelFor(outer, 64, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      char* dst = y + o * out_row;
      for (const TensorRef& in : ctx.inputs) {
        const int64_t row = in.num_elements() / std::max<int64_t>(outer, 1) * size;
        std::memcpy(dst, static_cast<const char*>(in.data) + o * row, row);
        dst += row;
      }
    }
  });
  return absl::OkStatus();
}

std::vector<Value> ConcatBackward(const GradContext& c) {
  const int64_t axis = c.attrs().GetInt("axis");
  std::vector<Value> grads;
  int64_t offset = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const int64_t len = c.inputs[i].dim(static_cast<int>(axis));
    grads.push_back(c.needs[i] ? Slice(c.grad, axis, offset, offset + len) : Value());
    offset += len;
  }
  return grads;
}

const OpDef kConcat = {.name = "concat", .dot_label = "Concat",
                       .infer = InferConcat, .cpu = ConcatKernel,
                       .grad = ConcatBackward, .reduced_floats = kReducedFloatBits,
                       .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kConcat, concat);

Value Concat(const std::vector<Value>& values, int64_t axis) {
  if (values.empty()) return Value();
  return BuildOp(kConcat, values, Attrs().Int("axis", axis));
}

// ---- slice ------------------------------------------------------------------

namespace {

absl::StatusOr<TensorType> InferSlice(const InferContext& ctx) {
  auto spec = ResolveSlice(ctx.attrs, ctx.in(0).shape);
  if (!spec.ok()) return spec.status();
  Dims out = ctx.in(0).shape.dims();
  out[spec->axis] = spec->count;
  return TensorType{ctx.in(0).dtype, Shape(out)};
}

// Copies between a full tensor and its slice; `to_slice` picks the
// direction (slice reads the full tensor, unslice writes it).
void CopySlice(const SliceSpec& s, const Shape& full, size_t size, const char* src,
               char* dst, bool to_slice) {
  if (full.num_elements() == 0) return;  // nothing to copy; the products below could overflow
  int64_t outer = 1, inner = size;
  for (int d = 0; d < s.axis; ++d) outer *= full[d];
  for (int d = s.axis + 1; d < full.rank(); ++d) inner *= full[d];
  const int64_t len = full[s.axis];
  ParallelFor(outer, 16, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      for (int64_t i = 0; i < s.count; ++i) {
        const int64_t f = (o * len + s.start + i * s.step) * inner;
        const int64_t p = (o * s.count + i) * inner;
        if (to_slice) {
          std::memcpy(dst + p, src + f, inner);
        } else {
          std::memcpy(dst + f, src + p, inner);
        }
      }
    }
  });
}

absl::Status SliceKernel(const KernelContext& ctx) {
  auto spec = ResolveSlice(ctx.attrs(), *ctx.in(0).shape);
  if (!spec.ok()) return spec.status();
  CopySlice(*spec, *ctx.in(0).shape, SizeOf(ctx.output.dtype),
            static_cast<const char*>(ctx.in(0).data), static_cast<char*>(ctx.output.data),
            true);
  return absl::OkStatus();
}

Value Unslice(Value g, const Shape& full, const Attrs& slice_attrs);

std::vector<Value> SliceBackward(const GradContext& c) {
  return {Unslice(c.grad, c.inputs[0].shape(), c.attrs())};
}

// A slice with step 1 whose axes before `axis` all have extent 1 is one
// contiguous block of its input: a view at the block's offset.
std::optional<int64_t> SliceView(const Node& node, const Node& input) {
  auto spec = ResolveSlice(node.attrs, input.shape);
  // An empty input has nothing to view (and its dims' product may overflow).
  if (!spec.ok() || spec->step != 1 || input.shape.num_elements() == 0) return std::nullopt;
  int64_t inner = SizeOf(input.dtype);
  for (int d = 0; d < input.shape.rank(); ++d) {
    if (d < spec->axis && input.shape[d] != 1) return std::nullopt;
    if (d > spec->axis) inner *= input.shape[d];
  }
  return spec->start * inner;
}

const OpDef kSlice = {.name = "slice", .dot_label = "Slice", .infer = InferSlice,
                      .cpu = SliceKernel, .grad = SliceBackward, .view = SliceView,
                      .reduced_floats = kReducedFloatBits,
                      .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kSlice, slice);

Value Slice(Value x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  return BuildOp(kSlice, {x},
                 Attrs().Int("axis", axis).Int("start", start).Int("end", end).Int("step", step));
}

// ---- unslice: the adjoint of slice ------------------------------------------

namespace {

// unslice(g): zeros of the full shape with g written where the slice was.
absl::StatusOr<TensorType> InferUnslice(const InferContext& ctx) {
  const Shape full(ctx.attrs.GetInts("full_shape"));
  auto spec = ResolveSlice(ctx.attrs, full);
  if (!spec.ok()) return spec.status();
  Dims expect = full.dims();
  expect[spec->axis] = spec->count;
  if (Shape(expect) != ctx.in(0).shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient ", ctx.in(0).shape.ToString(), " does not match slice ",
        Shape(expect).ToString()));
  }
  return TensorType{ctx.in(0).dtype, full};
}

absl::Status UnsliceKernel(const KernelContext& ctx) {
  auto spec = ResolveSlice(ctx.attrs(), *ctx.output.shape);
  if (!spec.ok()) return spec.status();
  std::memset(ctx.output.data, 0, ctx.output.nbytes());
  CopySlice(*spec, *ctx.output.shape, SizeOf(ctx.output.dtype),
            static_cast<const char*>(ctx.in(0).data), static_cast<char*>(ctx.output.data),
            false);
  return absl::OkStatus();
}

std::vector<Value> UnsliceBackward(const GradContext& c) {
  const Attrs& a = c.attrs();
  return {Slice(c.grad, a.GetInt("axis"), a.GetInt("start"), a.GetInt("end"),
                a.GetInt("step", 1))};
}

// A step-1 unslice writes its input as one block of its output.
std::optional<Placement> UnslicePlacement(const Node& node) {
  auto spec = ResolveSlice(node.attrs, node.shape);
  if (!spec.ok() || spec->step != 1) return std::nullopt;
  return Placement{spec->axis, spec->start, spec->start + spec->count};
}

const OpDef kUnslice = {.name = "unslice", .dot_label = "Unslice",
                        .infer = InferUnslice, .cpu = UnsliceKernel,
                        .grad = UnsliceBackward, .placement = UnslicePlacement,
                        .onnx = NoOnnx("slice's backward op, not in inference graphs")};

Value Unslice(Value g, const Shape& full, const Attrs& slice_attrs) {
  Attrs a = slice_attrs;
  a.Ints("full_shape", ToVector(full));
  return BuildOp(kUnslice, {g}, a);
}

}  // namespace

DAGRAD_REGISTER_OP(kUnslice, unslice);

}  // namespace dagrad
