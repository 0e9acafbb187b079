// ops/onnx/export_builder.h
//
// OnnxBuilder: what an op's exporter (ops/onnx/export_ops.h) writes ONNX
// nodes with. It names every dagrad node's ONNX value, makes fresh names for
// the values an exporter adds, adds constants as initializers, and turns a
// shape whose sizes may be dynamic symbols (export.h) into a 1-D int64
// tensor computed from the inputs' shapes at run time.
//
//   std::string y = b.Add("Mul", {b.In(node, 0), b.Scalar(2.0, node.dtype)});
//   b.Add("Reshape", {y, b.ShapeOf(node.shape.dims())}, b.Out(node));

#ifndef DAGRAD_OPS_ONNX_EXPORT_BUILDER_H_
#define DAGRAD_OPS_ONNX_EXPORT_BUILDER_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dtype.h"
#include "engine/graph.h"
#include "engine/tensor.h"
#include "ops/fill.h"
#include "ops/onnx/onnx_tensor.h"

namespace dagrad::onnx_export {

// OnnxSymbol is a dynamic size: its name (dim_param), its size in the
// dagrad graph, and the input axis it is read from.
struct OnnxSymbol {
  std::string name;
  int64_t size = 0;
  std::string input;
  int axis = 0;
};

// FilledTensor returns a tensor of `shape` holding `value` everywhere. An
// integer reaches an integer dtype exactly; InvalidArgument for a value an
// integer or bool dtype cannot hold (2^63 or 1.5 as int64, 2 as bool). A
// float dtype rounds the value, as dagrad's kernels convert their
// attributes.
//
//   absl::StatusOr<Tensor> t = FilledTensor(INT64_MAX, DType::kInt64, Shape({1}));  // exact
absl::StatusOr<Tensor> FilledTensor(FillValue value, DType dtype, const Shape& shape);


class OnnxBuilder {
 public:
  OnnxBuilder(const Graph& graph, onnx::GraphProto* proto, std::vector<OnnxSymbol> symbols);

  const Graph& graph() const { return graph_; }
  const std::vector<OnnxSymbol>& symbols() const { return symbols_; }

  // SetName names node `id`'s ONNX value (inputs, initializers, outputs).
  void SetName(NodeId id, std::string name) { names_[id] = std::move(name); }
  // Out is the name of `node`'s ONNX value; In that of its input i.
  std::string Out(const Node& node);
  std::string In(const Node& node, int i);
  bool Has(const Node& node, int i) const {
    return i < static_cast<int>(node.inputs.size()) && node.inputs[i] != kNoNode;
  }
  // Fresh returns a new value name "<scope of the node exported>/<base>_<n>".
  std::string Fresh(absl::string_view base);
  void SetCurrent(const Node& node) { current_ = node.path(); }

  // Add appends a node `op_type`; returns its output's name (`output`, or a
  // fresh one). Empty input names mark absent optional inputs.
  std::string Add(absl::string_view op_type, std::vector<std::string> inputs,
                  std::string output = "");
  // AddNode is Add returning the node, to set attributes on.
  onnx::NodeProto* AddNode(absl::string_view op_type, std::vector<std::string> inputs,
                           std::string output);
  // Cast adds a Cast of `x` to `to`; returns its output's name (`output`, or
  // a fresh one).
  std::string Cast(std::string x, DType to, std::string output = "");

  // Constants, added as initializers: a scalar of `dtype` (whose value the
  // dtype holds: an op's attribute that shape inference checked), a 1-D
  // int64.
  std::string Scalar(FillValue value, DType dtype);
  std::string Ints(const std::vector<int64_t>& values);
  std::string Initializer(const Tensor& t, std::string name);

  // SymbolFor returns the symbol whose size is `size`, if any.
  std::optional<int> SymbolFor(int64_t size) const;
  // SymbolSize returns symbol s's run-time size as a 1-D int64 of one.
  std::string SymbolSize(int s);
  // ShapeOf returns `dims` as a 1-D int64 tensor: a constant when no size is
  // a symbol's, else the sizes concatenated with the symbols' run-time sizes.
  std::string ShapeOf(const Dims& dims);

 private:
  const Graph& graph_;
  onnx::GraphProto* proto_;
  std::vector<OnnxSymbol> symbols_;
  absl::flat_hash_map<NodeId, std::string> names_;
  absl::flat_hash_map<int, std::string> symbol_sizes_;
  absl::flat_hash_map<std::string, int> fresh_counts_;
  std::string current_;
};

// Attribute setters for a node made by AddNode.
void SetAttr(onnx::NodeProto* node, absl::string_view name, int64_t value);
void SetAttr(onnx::NodeProto* node, absl::string_view name, float value);
void SetAttr(onnx::NodeProto* node, absl::string_view name, const std::vector<int64_t>& values);
void SetAttr(onnx::NodeProto* node, absl::string_view name, const onnx::TensorProto& value);

}  // namespace dagrad::onnx_export

#endif  // DAGRAD_OPS_ONNX_EXPORT_BUILDER_H_
