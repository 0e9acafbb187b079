// The op table (export_ops.h) and the elementwise ops' exporters.

#include "ops/onnx/export_ops.h"

#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/op.h"

namespace dagrad::onnx_export {
namespace {

// The ops whose ONNX op computes the same function on the same inputs.
absl::string_view OnnxTwin(absl::string_view op) {
  static const auto* twins = new absl::flat_hash_map<absl::string_view, absl::string_view>{
      {"add", "Add"},           {"sub", "Sub"},         {"mul", "Mul"},
      {"div", "Div"},           {"maximum", "Max"},     {"minimum", "Min"},
      {"equal", "Equal"},       {"less", "Less"},       {"greater", "Greater"},
      {"logical_and", "And"},   {"logical_or", "Or"},   {"logical_not", "Not"},
      {"neg", "Neg"},           {"exp", "Exp"},         {"log", "Log"},
      {"sqrt", "Sqrt"},         {"relu", "Relu"},       {"tanh", "Tanh"},
      {"sigmoid", "Sigmoid"},   {"sin", "Sin"},         {"cos", "Cos"},
      {"where", "Where"},       {"dropout", "Identity"}};
  auto it = twins->find(op);
  return it == twins->end() ? absl::string_view() : it->second;
}

// An op with an ONNX twin; dropout is the identity at inference.
absl::Status ExportTwin(OnnxBuilder& b, const Node& node) {
  std::vector<std::string> inputs;
  for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) inputs.push_back(b.In(node, i));
  b.Add(OnnxTwin(node.op->name), std::move(inputs), b.Out(node));
  return absl::OkStatus();
}

// rsqrt(x) = 1 / sqrt(x).
absl::Status ExportRsqrt(OnnxBuilder& b, const Node& node) {
  b.Add("Reciprocal", {b.Add("Sqrt", {b.In(node, 0)})}, b.Out(node));
  return absl::OkStatus();
}

absl::Status ExportPow(OnnxBuilder& b, const Node& node) {
  const std::string p = b.Scalar(node.attrs.GetFloat("exponent"), node.dtype);
  b.Add("Pow", {b.In(node, 0), p}, b.Out(node));
  return absl::OkStatus();
}

// scale(x) = alpha * x + beta.
absl::Status ExportScale(OnnxBuilder& b, const Node& node) {
  const double alpha = node.attrs.GetFloat("alpha", 1.0), beta = node.attrs.GetFloat("beta");
  std::string y = b.In(node, 0);
  if (beta == 0) {
    b.Add("Mul", {y, b.Scalar(alpha, node.dtype)}, b.Out(node));
    return absl::OkStatus();
  }
  if (alpha != 1.0) y = b.Add("Mul", {y, b.Scalar(alpha, node.dtype)});
  b.Add("Add", {y, b.Scalar(beta, node.dtype)}, b.Out(node));
  return absl::OkStatus();
}

absl::Status ExportCast(OnnxBuilder& b, const Node& node) {
  onnx::NodeProto* cast = b.AddNode("Cast", {b.In(node, 0)}, b.Out(node));
  SetAttr(cast, "to", int64_t{OnnxTypeOf(node.dtype)});
  return absl::OkStatus();
}

}  // namespace

OnnxExporterList ElementwiseExporters() {
  OnnxExporterList list = {{"rsqrt", ExportRsqrt}, {"pow", ExportPow},
                           {"scale", ExportScale}, {"cast", ExportCast}};
  for (absl::string_view op :
       {"add", "sub", "mul", "div", "maximum", "minimum", "equal", "less", "greater",
        "logical_and", "logical_or", "logical_not", "neg", "exp", "log", "sqrt", "relu", "tanh",
        "sigmoid", "sin", "cos", "where", "dropout"}) {
    list.push_back({op, ExportTwin});
  }
  return list;
}

OnnxExporter FindOnnxExporter(absl::string_view op_name) {
  static const auto* table = [] {
    auto* t = new absl::flat_hash_map<absl::string_view, OnnxExporter>();
    for (const OnnxExporterList& list :
         {ElementwiseExporters(), ShapeExporters(), NnExporters()}) {
      for (const auto& [name, exporter] : list) (*t)[name] = exporter;
    }
    return t;
  }();
  auto it = table->find(op_name);
  return it == table->end() ? nullptr : it->second;
}

}  // namespace dagrad::onnx_export
