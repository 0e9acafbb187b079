// ops/onnx/import_graph.h
//
// The checks the importer makes on a model before building anything
// (internal to ops/onnx/): the protobuf parses, the opset is one dagrad
// knows, every op is in the table, input types are dagrad's, and the nodes
// form a DAG whose every input is produced.
//
//   DAGRAD_ASSIGN_OR_RETURN(onnx::ModelProto m, ParseOnnxModel(bytes));
//   DAGRAD_ASSIGN_OR_RETURN(int64_t opset, DefaultOpset(m));
//   DAGRAD_RETURN_IF_ERROR(CheckOpsDefinedAsKnown(m.graph(), opset));
//   DAGRAD_RETURN_IF_ERROR(CheckOpsSupported(m.graph()));

#ifndef DAGRAD_OPS_ONNX_IMPORT_GRAPH_H_
#define DAGRAD_OPS_ONNX_IMPORT_GRAPH_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dtype.h"
#include "engine/shape.h"
#include "ops/onnx/import.h"
#include "ops/onnx/import_context.h"

namespace dagrad {

// ParseOnnxModel parses a ModelProto; InvalidArgument for bytes that are
// not one (truncated, malformed) or a model without a graph.
absl::StatusOr<onnx::ModelProto> ParseOnnxModel(absl::string_view bytes);

// DefaultOpset returns the model's opset of the default domain;
// Unimplemented above kMaxOnnxOpset, InvalidArgument when absent or < 1.
absl::StatusOr<int64_t> DefaultOpset(const onnx::ModelProto& model);

// CheckOpsDefinedAsKnown returns Unimplemented listing the ops of a model
// older than kMinOnnxOpset whose definition at its `opset` is neither the
// one kMinOnnxOpset has nor an older one the importer reads as it was
// (Add-6, whose broadcast and axis attributes it follows, is; Reshape-1,
// whose shape was an attribute, is not); OK for newer models.
absl::Status CheckOpsDefinedAsKnown(const onnx::GraphProto& graph, int64_t opset);

// CheckOpsSupported returns Unimplemented listing every op type of `graph`
// outside the import table, each with its node count.
absl::Status CheckOpsSupported(const onnx::GraphProto& graph);

// OnnxOpTypeSupported is true for an op of the import table.
bool OnnxOpTypeSupported(absl::string_view domain, absl::string_view op_type);

struct InputDecl {
  DType dtype;
  bool has_shape;
  std::vector<int64_t> dims;  // -1 for a symbolic dim
};

// InputDeclOf returns a graph input's declared type: Unimplemented for one
// that is not a tensor or of a type dagrad lacks, InvalidArgument for a
// negative dim.
absl::StatusOr<InputDecl> InputDeclOf(const onnx::ValueInfoProto& info);

struct InputSpec {
  DType dtype;
  Shape shape;
};

// InputSpecOf returns a graph input's dtype and shape, symbolic dims taken
// from `shapes`. Errors name the input: an element type dagrad lacks
// (Unimplemented), a symbolic dim without a size, a given shape that
// disagrees with the file's.
absl::StatusOr<InputSpec> InputSpecOf(const onnx::ValueInfoProto& info,
                                      const OnnxInputShapes& shapes);

// CheckShapesNameInputs returns InvalidArgument when `shapes` names
// something that is not an input of `graph`.
absl::Status CheckShapesNameInputs(const onnx::GraphProto& graph,
                                   const OnnxInputShapes& shapes);

// TopologicalOrder returns node indices with producers before consumers.
// InvalidArgument for an input that no node, graph input or initializer
// (`values`) produces, a name produced twice, or a cycle (naming nodes on
// it).
absl::StatusOr<std::vector<int>> TopologicalOrder(const onnx::GraphProto& graph,
                                                  const OnnxValues& values);

// NodeLabel names a node in messages: "ONNX node 'MatMul_3' (MatMul)".
std::string NodeLabel(const onnx::NodeProto& node, int index);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_IMPORT_GRAPH_H_
