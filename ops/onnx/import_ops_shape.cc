// ops/onnx/import_ops_shape.cc
//
// The ONNX importer's shape ops. Their shape arguments (Reshape's shape,
// Slice's starts, Unsqueeze's axes from opset 13) must be known at import:
// constants, or shape arithmetic folded for the given input shapes.

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/status_macros.h"
#include "ops/cumsum.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/onnx/import_context.h"
#include "ops/onnx/onnx_tensor.h"
#include "ops/sampling.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

using Outputs = absl::StatusOr<std::vector<Value>>;

Value Int64Constant(Graph& g, const std::vector<int64_t>& values, bool scalar) {
  absl::StatusOr<Tensor> t = Tensor::FromVector<int64_t>(
      scalar ? Shape() : Shape({static_cast<int64_t>(values.size())}), values);
  if (!t.ok()) return g.Error(t.status());
  return g.Constant(*t, "onnx_shape");
}

// AxesOf returns the node's axes: an attribute before `input_since`, input
// 1 from then on; empty when absent.
absl::StatusOr<std::vector<int64_t>> AxesOf(OnnxNodeContext& c, int64_t input_since) {
  if (c.opset() < input_since) return c.Ints("axes");
  if (!c.has_input(1)) return std::vector<int64_t>();
  return c.KnownInts(1, "axes");
}

Outputs ImportShape(OnnxNodeContext& c) {
  std::vector<int64_t> dims = DimsOf(c.input(0));
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [rank](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
  const int64_t start = clamp(c.Int("start", 0)), end = clamp(c.Int("end", rank));
  std::vector<int64_t> kept(dims.begin() + start, dims.begin() + std::max(start, end));
  return c.Outputs({Int64Constant(c.graph(), kept, false)});
}

Outputs ImportSize(OnnxNodeContext& c) {
  return c.Outputs({Int64Constant(c.graph(), {c.input(0).shape().num_elements()}, true)});
}

Outputs ImportReshape(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.KnownInts(1, "shape"));
  if (c.Int("allowzero", 0) == 0) {
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 0 && static_cast<int>(i) < x.rank()) dims[i] = x.dim(i);
    }
  }
  return c.Outputs({Reshape(x, dims)});
}

Outputs ImportFlatten(OnnxNodeContext& c) {
  Value x = c.input(0);
  const int64_t given = c.Int("axis", 1);
  const int64_t axis = given < 0 ? given + x.rank() : given;
  if (axis < 0 || axis > x.rank()) {
    return c.Error(absl::StrCat("axis ", given, " is outside [", -x.rank(), ", ", x.rank(), "]"));
  }
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < x.rank(); ++i) (i < axis ? outer : inner) *= x.dim(i);
  return c.Outputs({Reshape(x, {outer, inner})});
}

Outputs ImportTranspose(OnnxNodeContext& c) {
  Value x = c.input(0);
  std::vector<int64_t> perm = c.Ints("perm");
  if (c.attr("perm") == nullptr) {
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  return c.Outputs({Permute(x, perm)});
}

Outputs ImportSqueeze(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(c, 13));
  std::vector<bool> drop(x.rank(), axes.empty());
  for (int64_t a : axes) {
    DAGRAD_ASSIGN_OR_RETURN(int64_t axis, c.Axis(a, x.rank()));
    if (x.dim(axis) != 1) return c.Error(absl::StrCat("axis ", a, " has size ", x.dim(axis)));
    drop[axis] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < x.rank(); ++i) {
    if (!(drop[i] && x.dim(i) == 1)) dims.push_back(x.dim(i));
  }
  return c.Outputs({Reshape(x, dims)});
}

Outputs ImportUnsqueeze(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(c, 13));
  const int rank = x.rank() + static_cast<int>(axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    DAGRAD_ASSIGN_OR_RETURN(int64_t axis, c.Axis(a, rank));
    if (inserted[axis]) return c.Error(absl::StrCat("axis ", a, " repeated"));
    inserted[axis] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0, j = 0; i < rank; ++i) dims.push_back(inserted[i] ? 1 : x.dim(j++));
  return c.Outputs({Reshape(x, dims)});
}

Outputs ImportConcat(OnnxNodeContext& c) {
  std::vector<Value> parts;
  for (int i = 0; i < c.num_inputs(); ++i) parts.push_back(c.input(i));
  return c.Outputs({Concat(parts, c.Int("axis", 0))});
}

Outputs ImportSplit(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_ASSIGN_OR_RETURN(int64_t axis, c.Axis(c.Int("axis", 0), x.rank()));
  std::vector<int64_t> sizes = c.Ints("split");
  if (c.opset() >= 13 && c.has_input(1)) {
    DAGRAD_ASSIGN_OR_RETURN(sizes, c.KnownInts(1, "split"));
  }
  const int n = c.node().output_size();
  if (sizes.empty()) {
    if (n == 0 || x.dim(axis) % n != 0) {
      return c.Error(absl::StrCat("cannot split ", x.dim(axis), " into ", n, " equal parts"));
    }
    sizes.assign(n, x.dim(axis) / n);
  }
  if (static_cast<int>(sizes.size()) != n) {
    return c.Error(absl::StrCat(sizes.size(), " split sizes for ", n, " outputs"));
  }
  std::vector<Value> parts;
  const absl::Status mismatch = c.Error(absl::StrCat(
      "split sizes (", absl::StrJoin(sizes, ", "), ") do not add up to ", x.dim(axis)));
  int64_t start = 0;
  for (int64_t size : sizes) {
    if (size < 0) return c.Error(absl::StrCat("negative split size ", size));
    if (size > x.dim(axis) - start) return mismatch;  // checked so, start + size cannot overflow
    parts.push_back(Slice(x, axis, start, start + size));
    start += size;
  }
  if (start != x.dim(axis)) return mismatch;
  return c.Outputs(parts);
}

// ReversedSlice is Slice with a negative step, as ONNX clamps it, built as
// a Gather of the indices it visits: an IndexRange, made when the plan is
// compiled, whatever size the file declares.
absl::StatusOr<Value> ReversedSlice(Value x, int64_t axis, int64_t start, int64_t end,
                                    int64_t step) {
  const int64_t n = x.dim(axis);
  if (n == 0) return Slice(x, axis, 0, 0);
  start = std::clamp(start < 0 ? start + n : start, int64_t{0}, n - 1);
  end = std::clamp(end < 0 ? end + n : end, int64_t{-1}, n - 1);
  if (start <= end) return Slice(x, axis, 0, 0);
  DAGRAD_ASSIGN_OR_RETURN(Value indices, IndexRange(*x.graph(), start, end, step));
  return Gather(x, indices, axis);
}

absl::Status SliceArgs(OnnxNodeContext& c, std::vector<int64_t> (&args)[4]) {
  if (c.opset() < 10) {
    args[0] = c.Ints("starts"), args[1] = c.Ints("ends"), args[2] = c.Ints("axes");
    return absl::OkStatus();
  }
  const char* names[4] = {"starts", "ends", "axes", "steps"};
  for (int i = 0; i < 4; ++i) {
    if (!c.has_input(i + 1)) continue;
    DAGRAD_ASSIGN_OR_RETURN(args[i], c.KnownInts(i + 1, names[i]));
  }
  return absl::OkStatus();
}

Outputs ImportSlice(OnnxNodeContext& c) {
  Value x = c.input(0);
  std::vector<int64_t> args[4];  // starts, ends, axes, steps
  DAGRAD_RETURN_IF_ERROR(SliceArgs(c, args));
  const size_t n = args[0].size();
  if (args[2].empty()) for (size_t i = 0; i < n; ++i) args[2].push_back(i);
  if (args[3].empty()) args[3].assign(n, 1);
  if (args[1].size() != n || args[2].size() != n || args[3].size() != n) {
    return c.Error("starts, ends, axes and steps differ in length");
  }
  for (size_t i = 0; i < n; ++i) {
    DAGRAD_ASSIGN_OR_RETURN(int64_t axis, c.Axis(args[2][i], x.rank()));
    const int64_t step = args[3][i];
    if (step == 0) return c.Error("a step of 0");
    if (step > 0) {
      x = Slice(x, axis, args[0][i], args[1][i], step);
    } else {
      DAGRAD_ASSIGN_OR_RETURN(x, ReversedSlice(x, axis, args[0][i], args[1][i], step));
    }
  }
  return c.Outputs({x});
}

// Gather counts negative indices from the end, as ONNX does: known ones
// when importing, computed ones when running (GatherFromEnd).
Outputs ImportGather(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_ASSIGN_OR_RETURN(int64_t axis, c.Axis(c.Int("axis", 0), x.rank()));
  const Tensor* known = c.known(1);
  if (known == nullptr) return c.Outputs({GatherFromEnd(x, c.input(1), axis)});
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> indices, c.KnownInts(1, "indices"));
  for (int64_t& i : indices) {
    if (i < -x.dim(axis) || i >= x.dim(axis)) {
      return c.Error(absl::StrCat("index ", i, " is out of range for ", x.dim(axis)));
    }
    if (i < 0) i += x.dim(axis);
  }
  absl::StatusOr<Tensor> t = Tensor::FromVector<int64_t>(known->shape(), indices);
  if (!t.ok()) return t.status();
  return c.Outputs({Gather(x, c.graph().Constant(*t, "onnx_indices"), axis)});
}

Outputs ImportExpand(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.KnownInts(1, "shape"));
  std::vector<int64_t> dims = DimsOf(x);
  if (shape.size() > dims.size()) dims.insert(dims.begin(), shape.size() - dims.size(), 1);
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t& d = dims[dims.size() - shape.size() + i];
    if (d == 1) {
      d = shape[i];
    } else if (shape[i] != 1 && shape[i] != d) {
      return c.Error(absl::StrCat("cannot expand ", x.shape().ToString(), " to (",
                                  absl::StrJoin(shape, ", "), ")"));
    }
  }
  Shape out(dims);
  return c.Outputs({out == x.shape() ? x : BroadcastTo(x, out)});
}

// ElementOffsets returns, for each position of `index` (int64, the rank
// of data's `dims`), its flat offset into data with the `axis` coordinate
// replaced by the index: index * stride(axis) plus, over the other axes, the
// position's coordinate * stride, each an IndexRange broadcast along its axis.
absl::StatusOr<Value> ElementOffsets(Graph& g, Value index, const std::vector<int64_t>& dims,
                                     int64_t axis) {
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> strides(rank, 1);
  for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  Value offsets = Mul(index, ScalarConstant(g, DType::kInt64, strides[axis]));
  for (int d = 0; d < rank; ++d) {
    if (d == axis || index.dim(d) == 1) continue;
    DAGRAD_ASSIGN_OR_RETURN(Value coord,
                            IndexRange(g, 0, index.dim(d) * strides[d], strides[d]));
    std::vector<int64_t> along(rank, 1);
    along[d] = index.dim(d);
    offsets = Add(offsets, Reshape(coord, along));
  }
  return offsets;
}

// GatherElements is torch.gather: out[p] = data[p with p[axis] = index[p]],
// index of data's rank and no larger on any other axis; a negative index
// counts from the end. Composed: a Gather from data flattened, at the
// offsets ElementOffsets computes, so its gradient is Gather's (a
// ScatterAdd). The index is first checked against [-n, n) and counted from
// the start by a GatherFromEnd from 0..n-1, so an index out of range fails
// the run, named as the file holds it.
Outputs ImportGatherElements(OnnxNodeContext& c) {
  Value data = c.input(0), index = c.input(1);
  DAGRAD_RETURN_IF_ERROR(data.status());
  DAGRAD_RETURN_IF_ERROR(index.status());
  DAGRAD_ASSIGN_OR_RETURN(int64_t axis, c.Axis(c.Int("axis", 0), data.rank()));
  const std::vector<int64_t> dims = DimsOf(data);
  bool fits = index.rank() == data.rank() && IsInteger(index.dtype());
  for (int d = 0; fits && d < data.rank(); ++d) fits = d == axis || index.dim(d) <= dims[d];
  if (!fits) {
    return c.Error(absl::StrCat("indices ", DTypeName(index.dtype()), " ",
                                index.shape().ToString(), " do not fit data ",
                                data.shape().ToString(), " (int32 or int64, of data's rank, "
                                "no larger on the axes but ", axis, ")"));
  }
  Graph& g = c.graph();
  if (index.dtype() != DType::kInt64) index = Cast(index, DType::kInt64);
  DAGRAD_ASSIGN_OR_RETURN(Value positions, IndexRange(g, 0, dims[axis], 1));
  index = GatherFromEnd(positions, index);
  DAGRAD_ASSIGN_OR_RETURN(Value offsets, ElementOffsets(g, index, dims, axis));
  return c.Outputs({Gather(Reshape(data, {data.shape().num_elements()}), offsets, 0)});
}

// CumSum: the axis a known scalar (or one-element) integer input.
Outputs ImportCumSum(OnnxNodeContext& c) {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> axis, c.KnownInts(1, "axis"));
  if (axis.size() != 1) return c.Error(absl::StrCat("axis must hold one value, got ", axis.size()));
  Value x = c.input(0);
  DAGRAD_ASSIGN_OR_RETURN(int64_t a, c.Axis(axis[0], x.rank()));
  return c.Outputs({CumSum(x, a, {.exclusive = c.Int("exclusive", 0) != 0,
                                  .reverse = c.Int("reverse", 0) != 0})});
}

// TopK: k a known input (an attribute before opset 10); largest (dagrad's),
// or smallest as the largest of -x (ties stay in index order either way);
// always sorted.
Outputs ImportTopK(OnnxNodeContext& c) {
  std::vector<int64_t> k;
  if (c.opset() < 10) {
    if (!c.attr("k")) return c.Error("the k attribute is missing");
    k = {c.Int("k", 0)};
  } else {
    DAGRAD_ASSIGN_OR_RETURN(k, c.KnownInts(1, "k"));
  }
  if (k.size() != 1) return c.Error(absl::StrCat("k must hold one value, got ", k.size()));
  Value x = c.input(0);
  DAGRAD_ASSIGN_OR_RETURN(int64_t axis, c.Axis(c.Int("axis", -1), x.rank()));
  if (c.Int("sorted", 1) == 0) return c.Unsupported("TopK with sorted=0");
  const bool largest = c.Int("largest", 1) != 0;
  if (!largest && !IsFloating(x.dtype())) return c.Unsupported("TopK smallest of integers");
  TopKResult top = TopK(largest ? x : Neg(x), k[0], axis);
  return c.Outputs({largest ? top.values : Neg(top.values), top.indices});
}

}  // namespace

std::vector<OnnxOpEntry> OnnxShapeOps() {
  return {
      {"Shape", ImportShape},         {"Size", ImportSize},
      {"Reshape", ImportReshape},     {"Flatten", ImportFlatten},
      {"Transpose", ImportTranspose}, {"Squeeze", ImportSqueeze},
      {"Unsqueeze", ImportUnsqueeze}, {"Concat", ImportConcat},
      {"Split", ImportSplit},         {"Slice", ImportSlice},
      {"Gather", ImportGather},       {"Expand", ImportExpand},
      {"GatherElements", ImportGatherElements},
      {"CumSum", ImportCumSum},       {"TopK", ImportTopK},
  };
}

}  // namespace dagrad
