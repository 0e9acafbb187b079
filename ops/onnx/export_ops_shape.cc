// Exporters of the shape, indexing, fill and reduction ops. Sizes that are
// dynamic symbols come from OnnxBuilder::ShapeOf and SymbolSize.

#include <algorithm>
#include <cstdint>
#include <string>

#include "engine/op.h"
#include "engine/status_macros.h"
#include "ops/fill.h"
#include "ops/onnx/export_ops.h"
#include "ops/op_util.h"

namespace dagrad::onnx_export {
namespace {

// reshape, broadcast_to: to the node's shape, dynamic sizes read at run time.
// A size of 0 in Reshape's target copies the input's size unless allowzero
// is set, so a target with an empty axis sets it.
absl::Status ExportReshape(OnnxBuilder& b, const Node& node) {
  const Dims& dims = node.shape.dims();
  onnx::NodeProto* reshape =
      b.AddNode("Reshape", {b.In(node, 0), b.ShapeOf(dims)}, b.Out(node));
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) {
    SetAttr(reshape, "allowzero", int64_t{1});
  }
  return absl::OkStatus();
}

absl::Status ExportBroadcastTo(OnnxBuilder& b, const Node& node) {
  b.Add("Expand", {b.In(node, 0), b.ShapeOf(node.shape.dims())}, b.Out(node));
  return absl::OkStatus();
}

absl::Status ExportPermute(OnnxBuilder& b, const Node& node) {
  SetAttr(b.AddNode("Transpose", {b.In(node, 0)}, b.Out(node)), "perm",
          node.attrs.GetInts("perm"));
  return absl::OkStatus();
}

absl::Status ExportConcat(OnnxBuilder& b, const Node& node) {
  std::vector<std::string> inputs;
  for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) inputs.push_back(b.In(node, i));
  SetAttr(b.AddNode("Concat", std::move(inputs), b.Out(node)), "axis",
          node.attrs.GetInt("axis"));
  return absl::OkStatus();
}

// SizeOrConstant is a 1-D int64 of `v`: the run-time size of the symbol
// whose size it is (the family export proved that such a value follows its
// symbol), else the constant.
std::string SizeOrConstant(OnnxBuilder& b, int64_t v) {
  if (std::optional<int> s = b.SymbolFor(v)) return b.SymbolSize(*s);
  return b.Ints({v});
}

// The slice's own bounds, which ONNX's Slice clamps to the axis as dagrad's
// do (a negative one counted from the end, as both count it): a bound that
// is a symbol's size is that size at run time (a prefix of a position
// table as long as the sequence), a fixed one stays fixed (a prefix of 3
// stays 3 where the axis grows past it).
absl::Status ExportSlice(OnnxBuilder& b, const Node& node) {
  const Shape& in = b.graph().node(node.inputs[0]).shape;
  DAGRAD_ASSIGN_OR_RETURN(SliceSpec s, ResolveSlice(node.attrs, in));
  b.Add("Slice", {b.In(node, 0), SizeOrConstant(b, node.attrs.GetInt("start")),
                  SizeOrConstant(b, node.attrs.GetInt("end")), b.Ints({s.axis}),
                  b.Ints({s.step})},
        b.Out(node));
  return absl::OkStatus();
}

absl::Status ExportGather(OnnxBuilder& b, const Node& node) {
  SetAttr(b.AddNode("Gather", {b.In(node, 0), b.In(node, 1)}, b.Out(node)), "axis",
          node.attrs.GetInt("axis"));
  return absl::OkStatus();
}

absl::Status ExportFill(OnnxBuilder& b, const Node& node) {
  DAGRAD_ASSIGN_OR_RETURN(
      Tensor value,
      FilledTensor(FillValueAttr(node.attrs, "value", node.dtype), node.dtype, Shape({1})));
  onnx::NodeProto* fill =
      b.AddNode("ConstantOfShape", {b.ShapeOf(node.shape.dims())}, b.Out(node));
  SetAttr(fill, "value", TensorToOnnx(value, "value"));
  return absl::OkStatus();
}

// arange: Range(start, limit, step) of the node's n elements, with limit =
// start + n * step for integers and start + (n - 0.5) * step for floats:
// Range counts ceil((limit - start) / step) in the dtype, which for floats
// the stop itself (Arange(0, 0.6, 0.2): 4 in float32, not 3) or start +
// n * step could round up by one. A length that is a dynamic symbol gives
// n at run time.
absl::Status ExportArange(OnnxBuilder& b, const Node& node) {
  const FillValue start = FillValueAttr(node.attrs, "start", node.dtype),
                  step = FillValueAttr(node.attrs, "step", node.dtype);
  const bool floats = IsFloating(node.dtype);
  std::string limit;
  if (std::optional<int> s = b.SymbolFor(node.shape[0])) {
    std::string n = b.Cast(b.Add("Squeeze", {b.SymbolSize(*s)}), node.dtype);
    if (floats) n = b.Add("Sub", {n, b.Scalar(0.5, node.dtype)});
    limit = b.Add("Add", {b.Add("Mul", {n, b.Scalar(step, node.dtype)}), b.Scalar(start, node.dtype)});
  } else if (floats) {
    const double n = static_cast<double>(node.shape[0]) - 0.5;
    limit = b.Scalar(start.ToDouble() + n * step.ToDouble(), node.dtype);
  } else {
    limit = b.Scalar(start.integer() + node.shape[0] * step.integer(), node.dtype);
  }
  b.Add("Range", {b.Scalar(start, node.dtype), limit, b.Scalar(step, node.dtype)}, b.Out(node));
  return absl::OkStatus();
}

// sum takes its axes as an input at opset 13+, mean and max as an attribute
// until opset 18; no axes reduces every axis in both.
absl::Status ExportReduce(OnnxBuilder& b, const Node& node) {
  const std::vector<int64_t> axes = node.attrs.GetInts("axes");
  const absl::string_view name = node.op->name;
  const bool sum = name == "sum";
  std::vector<std::string> inputs = {b.In(node, 0)};
  if (sum && !axes.empty()) inputs.push_back(b.Ints(axes));
  onnx::NodeProto* reduce = b.AddNode(
      sum ? "ReduceSum" : name == "mean" ? "ReduceMean" : "ReduceMax", inputs, b.Out(node));
  if (!sum && !axes.empty()) SetAttr(reduce, "axes", axes);
  SetAttr(reduce, "keepdims", int64_t{node.attrs.GetBool("keepdims")});
  return absl::OkStatus();
}

// CumSum takes its axis as a scalar int64 input.
absl::Status ExportCumSum(OnnxBuilder& b, const Node& node) {
  onnx::NodeProto* cumsum = b.AddNode(
      "CumSum", {b.In(node, 0), b.Scalar(node.attrs.GetInt("axis"), DType::kInt64)}, b.Out(node));
  SetAttr(cumsum, "exclusive", int64_t{node.attrs.GetBool("exclusive")});
  SetAttr(cumsum, "reverse", int64_t{node.attrs.GetBool("reverse")});
  return absl::OkStatus();
}

// argmax: ONNX's ArgMax without the reduced axis, the first maximum on ties.
absl::Status ExportArgMax(OnnxBuilder& b, const Node& node) {
  onnx::NodeProto* argmax = b.AddNode("ArgMax", {b.In(node, 0)}, b.Out(node));
  SetAttr(argmax, "axis", node.attrs.GetInt("axis"));
  SetAttr(argmax, "keepdims", int64_t{0});
  return absl::OkStatus();
}

// topk_values and topk_indices: each one ONNX TopK (largest, sorted: ties
// in index order, as dagrad's), the other output left unused.
absl::Status ExportTopK(OnnxBuilder& b, const Node& node) {
  const bool values = node.op->name == "topk_values";
  const std::string other = b.Fresh(values ? "topk_indices" : "topk_values");
  onnx::NodeProto* topk =
      b.AddNode("TopK", {b.In(node, 0), SizeOrConstant(b, node.attrs.GetInt("k"))},
                values ? b.Out(node) : other);
  topk->add_output(values ? other : b.Out(node));
  SetAttr(topk, "axis", node.attrs.GetInt("axis"));
  return absl::OkStatus();
}

}  // namespace

OnnxExporterList ShapeExporters() {
  return {{"reshape", ExportReshape}, {"broadcast_to", ExportBroadcastTo},
          {"permute", ExportPermute}, {"concat", ExportConcat},
          {"slice", ExportSlice},     {"gather", ExportGather},
          {"fill", ExportFill},       {"arange", ExportArange},
          {"sum", ExportReduce},      {"mean", ExportReduce},
          {"max", ExportReduce},      {"cumsum", ExportCumSum},
          {"argmax", ExportArgMax},   {"topk_values", ExportTopK},
          {"topk_indices", ExportTopK}};
}

}  // namespace dagrad::onnx_export
