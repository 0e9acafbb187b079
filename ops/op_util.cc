#include "ops/op_util.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "engine/checked_math.h"
#include "ops/registry.h"

namespace dagrad {

absl::Status RequireFloat(const InferContext& ctx, int i, const char* what) {
  if (!IsFloating(ctx.in(i).dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be float32 or float64, got ", DTypeName(ctx.in(i).dtype)));
  }
  return absl::OkStatus();
}

absl::Status RequireIndex(const InferContext& ctx, int i, const char* what) {
  if (!IsInteger(ctx.in(i).dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be int32 or int64, got ", DTypeName(ctx.in(i).dtype)));
  }
  return absl::OkStatus();
}

absl::Status RequireSameDType(const InferContext& ctx, int i, int j) {
  if (ctx.in(i).dtype != ctx.in(j).dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtypes differ: ", DTypeName(ctx.in(i).dtype), " vs ",
                     DTypeName(ctx.in(j).dtype)));
  }
  return absl::OkStatus();
}

std::string FormatIndex(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.rank());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return absl::StrJoin(idx, ", ");
}

Rows RowsOf(const Shape& shape) {
  const int64_t d = shape.rank() == 0 ? 1 : shape[shape.rank() - 1];
  return {d == 0 ? 0 : shape.num_elements() / d, d};
}

MatrixDims OperandDims(const Shape& s, bool transpose) {
  const int64_t r = s[s.rank() - 2], c = s[s.rank() - 1];
  return transpose ? MatrixDims{c, r} : MatrixDims{r, c};
}

Shape BatchOf(const Shape& s) {
  return Shape(absl::Span<const int64_t>(s.dims().data(), s.rank() - 2));
}

MatMulProblem MatMulProblemOf(const KernelContext& ctx) {
  const Shape& a = *ctx.in(0).shape;
  const Shape& b = *ctx.in(1).shape;
  const bool ta = ctx.attrs().GetBool("transpose_a"), tb = ctx.attrs().GetBool("transpose_b");
  const MatrixDims da = OperandDims(a, ta), db = OperandDims(b, tb);
  Shape batch = BatchOf(*ctx.output.shape);
  const int64_t batches = batch.num_elements();
  return {a,          b,       ta,
          tb,         da.rows, da.cols,
          db.cols,    std::move(batch), batches,
          a[a.rank() - 2] * a[a.rank() - 1], b[b.rank() - 2] * b[b.rank() - 1]};
}

LinearDims LinearDimsOf(const KernelContext& ctx) {
  const int64_t in = ctx.in(1).dim(1), out = ctx.in(1).dim(0);
  const int64_t rows = in == 0 ? ctx.output.num_elements() / std::max<int64_t>(out, 1)
                               : ctx.in(0).num_elements() / in;
  return {rows, in, out};
}

absl::StatusOr<SliceSpec> ResolveSlice(const Attrs& a, const Shape& in) {
  auto axis = NormalizeAxis(a.GetInt("axis"), in.rank());
  if (!axis.ok()) return axis.status();
  const int64_t step = a.GetInt("step", 1);
  if (step < 1) return absl::InvalidArgumentError(absl::StrCat("step ", step, " < 1"));
  const int64_t len = in[*axis];
  auto clamp = [len](int64_t v) {
    if (v < 0) v += len;
    return std::clamp<int64_t>(v, 0, len);
  };
  const int64_t start = clamp(a.GetInt("start"));
  const int64_t count = SliceLength(len, a.GetInt("start"), a.GetInt("end"), step);
  return SliceSpec{*axis, start, count, step};
}

absl::StatusOr<std::vector<int>> NormalizeAxes(const std::vector<int64_t>& axes,
                                               int rank) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) {
    auto n = NormalizeAxis(a, rank);
    if (!n.ok()) return n.status();
    if (std::find(out.begin(), out.end(), *n) != out.end()) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", a, " is repeated"));
    }
    out.push_back(*n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dagrad

namespace dagrad {

namespace {

// ReducedFloatRefusal is the error of `op` meeting the 16-bit float `d`:
// `what` it does not do with it, and what to do instead.
absl::Status ReducedFloatRefusal(const OpDef& op, DType d, absl::string_view what) {
  std::vector<absl::string_view> takers;
  for (const OpDef* other : AllOps()) {
    if (other->reduced_floats & DTypeBit(d)) takers.push_back(other->name);
  }
  return absl::InvalidArgumentError(absl::StrCat(op.name, ": ", what, "; the ops that take ",
                                                 DTypeName(d), " are ",
                                                 absl::StrJoin(takers, ", ")));
}

}  // namespace

absl::Status CheckReducedFloats(const OpDef& op, absl::Span<const Value> inputs,
                                const Attrs& attrs) {
  std::vector<TensorType> types(inputs.size());
  std::vector<const TensorType*> pointers(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_null()) continue;
    types[i] = {inputs[i].dtype(), inputs[i].shape()};
    pointers[i] = &types[i];
    if (IsReducedFloat(types[i].dtype) && !(op.reduced_floats & DTypeBit(types[i].dtype))) {
      return ReducedFloatRefusal(
          op, types[i].dtype,
          absl::StrCat("takes no ", DTypeName(types[i].dtype), " (input ", i, " is ",
                       DTypeName(types[i].dtype), " ", types[i].shape.ToString(),
                       "): cast it to float32 first"));
    }
  }
  // An output dtype can come from an attribute (fill's): inference says.
  const absl::StatusOr<TensorType> out = op.infer(InferContext{attrs, pointers});
  if (out.ok() && IsReducedFloat(out->dtype) && !(op.reduced_floats & DTypeBit(out->dtype))) {
    return ReducedFloatRefusal(
        op, out->dtype,
        absl::StrCat("gives no ", DTypeName(out->dtype), ": make float32 and cast that"));
  }
  return absl::OkStatus();
}

Value BuildOpIn(Graph& g, const OpDef& op, absl::Span<const Value> inputs, Attrs attrs,
                uint32_t optional) {
  for (const Value& v : inputs) {
    if (!v.is_null() && !v.ok()) return v;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_null() && !(i < 32 && (optional >> i & 1))) {
      return g.Error(absl::InvalidArgumentError(
          absl::StrCat(op.name, ": required input ", i, " is a null Value")));
    }
    if (!inputs[i].is_null() && inputs[i].graph() != &g) {
      return g.Error(absl::InvalidArgumentError(absl::StrCat(
          op.name, ": input ", i, " '", inputs[i].path(), "' belongs to another graph")));
    }
  }
  if (absl::Status st = CheckReducedFloats(op, inputs, attrs); !st.ok()) return g.Error(st);
  return g.AddOp(op, inputs, std::move(attrs));
}

Value BuildOp(const OpDef& op, absl::Span<const Value> inputs, Attrs attrs,
              uint32_t optional) {
  for (const Value& v : inputs) {
    if (!v.is_null()) return BuildOpIn(*v.graph(), op, inputs, std::move(attrs), optional);
  }
  return Value();
}

Value ScalarLike(Value like, double v) {
  if (!like.ok()) return like;
  Tensor t = like.dtype() == DType::kFloat64 ? Tensor::Scalar<double>(v)
                                             : Tensor::Scalar<float>(static_cast<float>(v));
  return like.graph()->Constant(t, "scalar");
}

absl::Status MustBe(absl::string_view field, absl::string_view range, double value) {
  return absl::InvalidArgumentError(absl::StrCat(field, " must be ", range, ", got ", value));
}

}  // namespace dagrad
