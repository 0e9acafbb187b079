// ops/onnx/export_ops.h
//
// The table from dagrad ops to ONNX (opset 17): one exporter per op, a small
// function that writes the op's node as standard ONNX nodes with an
// OnnxBuilder (ops/onnx/export_builder.h), its result named b.Out(node).
// Adding an op to the export is one entry in its family's list.
//
//   absl::Status ExportRelu(OnnxBuilder& b, const Node& node) {
//     b.Add("Relu", {b.In(node, 0)}, b.Out(node));
//     return absl::OkStatus();
//   }

#ifndef DAGRAD_OPS_ONNX_EXPORT_OPS_H_
#define DAGRAD_OPS_ONNX_EXPORT_OPS_H_

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "ops/onnx/export_builder.h"

namespace dagrad::onnx_export {

using OnnxExporter = absl::Status (*)(OnnxBuilder& b, const Node& node);
using OnnxExporterList = std::vector<std::pair<absl::string_view, OnnxExporter>>;

// FindOnnxExporter returns the exporter of the op called `op_name`, or null
// for an op ONNX export does not cover.
OnnxExporter FindOnnxExporter(absl::string_view op_name);

// Per-family lists: elementwise (export_ops.cc), shapes and indexing
// (export_ops_shape.cc), matmul, normalisation and softmax (export_ops_nn.cc).
OnnxExporterList ElementwiseExporters();
OnnxExporterList ShapeExporters();
OnnxExporterList NnExporters();

}  // namespace dagrad::onnx_export

#endif  // DAGRAD_OPS_ONNX_EXPORT_OPS_H_
