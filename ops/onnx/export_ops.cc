// The op table (export_ops.h) and the elementwise ops' exporters.

#include "ops/onnx/export_ops.h"

#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/op.h"
#include "ops/registry.h"

namespace dagrad::onnx_export {
namespace {

// An op with an ONNX twin (OpDef::onnx); dropout's is Identity, as it is
// at inference.
absl::Status ExportTwin(OnnxBuilder& b, const Node& node) {
  std::vector<std::string> inputs;
  for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) inputs.push_back(b.In(node, i));
  b.Add(node.op->onnx.text, std::move(inputs), b.Out(node));
  return absl::OkStatus();
}

// rsqrt(x) = 1 / sqrt(x).
absl::Status ExportRsqrt(OnnxBuilder& b, const Node& node) {
  b.Add("Reciprocal", {b.Add("Sqrt", {b.In(node, 0)})}, b.Out(node));
  return absl::OkStatus();
}

// pow as its kernel computes it (PowFn): ONNX's Pow is C's pow (CPow), and
// Pow's exponents 2, 3, 0.5, -0.5, -1 and -2 are products, a Sqrt and
// Reciprocals, which differ from C's pow at -0 and -inf (sqrt(-inf) = NaN
// where pow(-inf, 0.5) = +inf) and round as the kernel does.
absl::Status ExportPow(OnnxBuilder& b, const Node& node) {
  const double p = node.attrs.GetFloat("exponent");
  const std::string x = b.In(node, 0), out = b.Out(node);
  const bool c_pow = node.attrs.GetBool("c_pow");
  if (!c_pow && p == 2) {
    b.Add("Mul", {x, x}, out);
  } else if (!c_pow && p == 3) {
    b.Add("Mul", {b.Add("Mul", {x, x}), x}, out);
  } else if (!c_pow && p == 0.5) {
    b.Add("Sqrt", {x}, out);
  } else if (!c_pow && p == -0.5) {
    b.Add("Reciprocal", {b.Add("Sqrt", {x})}, out);
  } else if (!c_pow && p == -1) {
    b.Add("Reciprocal", {x}, out);
  } else if (!c_pow && p == -2) {
    b.Add("Reciprocal", {b.Add("Mul", {x, x})}, out);
  } else {
    b.Add("Pow", {x, b.Scalar(p, node.dtype)}, out);
  }
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
  b.Cast(b.In(node, 0), node.dtype, b.Out(node));
  return absl::OkStatus();
}

}  // namespace

OnnxExporterList ElementwiseExporters() {
  return {{"rsqrt", ExportRsqrt}, {"pow", ExportPow}, {"scale", ExportScale}, {"cast", ExportCast}};
}

OnnxExporter FindOnnxExporter(const OpDef& op) {
  static const auto* table = [] {
    auto* t = new absl::flat_hash_map<const OpDef*, OnnxExporter>();
    for (const OnnxExporterList& list :
         {ElementwiseExporters(), ShapeExporters(), NnExporters()}) {
      for (const auto& [name, exporter] : list) (*t)[FindOp(name)] = exporter;
    }
    return t;
  }();
  if (op.onnx.kind == OnnxKind::kTwin) return ExportTwin;
  if (op.onnx.kind != OnnxKind::kExporter) return nullptr;
  auto it = table->find(&op);
  return it == table->end() ? nullptr : it->second;
}

}  // namespace dagrad::onnx_export
