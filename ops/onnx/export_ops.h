// ops/onnx/export_ops.h
//
// The exporters from dagrad ops to ONNX (opset 17), by the OpDef's `onnx`
// field (engine/op.h): an op whose ONNX twin computes the same function on
// the same inputs (OnnxTwin("Relu")) needs nothing here; an op marked
// kOnnxExporter has a small function that writes its node as standard ONNX
// nodes with an OnnxBuilder (ops/onnx/export_builder.h), its result
// named b.Out(node), listed in its family's list below. The lists name ops
// once; the table resolves the names to OpDefs (FindOp), and
// tests/onnx/onnx_coverage_test.cc fails when an op has no ONNX form declared,
// when a kOnnxExporter op has no exporter, or when a list names an op that
// does not exist or is not kOnnxExporter.
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
#include "engine/op.h"
#include "ops/onnx/export_builder.h"

namespace dagrad::onnx_export {

using OnnxExporter = absl::Status (*)(OnnxBuilder& b, const Node& node);
using OnnxExporterList = std::vector<std::pair<absl::string_view, OnnxExporter>>;

// FindOnnxExporter returns the exporter of `op`: the twin exporter for an
// OnnxTwin op, the listed function for a kOnnxExporter one, and null for an
// op ONNX export does not cover (NoOnnx, or none declared).
OnnxExporter FindOnnxExporter(const OpDef& op);

// Per-family lists: elementwise (export_ops.cc), shapes and indexing
// (export_ops_shape.cc), matmul, normalisation and softmax (export_ops_nn.cc).
OnnxExporterList ElementwiseExporters();
OnnxExporterList ShapeExporters();
OnnxExporterList NnExporters();

}  // namespace dagrad::onnx_export

#endif  // DAGRAD_OPS_ONNX_EXPORT_OPS_H_
