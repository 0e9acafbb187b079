// ops/onnx/import.h
//
// ImportOnnx reads an ONNX model (what torch.onnx.export writes, opsets 7
// to 17) into a dagrad Graph that runs, draws (engine/dot/dot.h), and
// differentiates and trains like a graph built by hand.
//
//   - Graph inputs become Inputs with the ONNX names; a dimension the file
//     leaves symbolic ("batch") takes its size from `input_shapes`.
//   - Float initializers that ops read as data become trainable Parameters
//     named as in the file: PyTorch's "layers.0.self_attn.in_proj_weight"
//     is the parameter at path "layers/0/self_attn/in_proj_weight", whose
//     checkpoint name (engine/io/checkpoint.h) is the ONNX name again. Their
//     values are in OnnxModel::parameters; LoadParameters assigns them to
//     an Executor. One that ops read only as a value they need to build
//     (a Pow exponent, a Dropout ratio, a Range bound) is that value, not a
//     parameter. Integer initializers are constants, and so are float ones
//     named by a node path with '/' (as dagrad's exporter writes constants;
//     no state_dict or checkpoint name holds one).
//   - Shape arithmetic (Shape, Gather of shapes, Unsqueeze, Concat,
//     ConstantOfShape, Slice, ...) is folded while importing: every node
//     whose inputs are all known for the given input shapes is evaluated
//     then, and only the data path reaches the graph.
//   - Each op maps onto dagrad builders through a table keyed by op type
//     (ops/onnx/import_ops_*.cc). A file with ops outside the table is
//     an Unimplemented error that lists every such op type, with counts.
//
//   DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnx("encoder.onnx", {{"src", {2, 16, 8}}}));
//   Executor exec(*m.graph);
//   DAGRAD_RETURN_IF_ERROR(m.LoadParameters(exec));
//   DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({m.outputs[0].value}));
//
// A hostile file gives an error, never a crash or a hang: truncated or
// malformed protobufs, cycles, inputs no node produces, initializers whose
// data disagrees with their dims, external data outside the model's
// folder, dimensions whose bytes overflow, opsets above 17, and ops an
// opset below 7 defines otherwise than 7 does are
// each an error naming what is wrong and where.

#ifndef DAGRAD_OPS_ONNX_IMPORT_H_
#define DAGRAD_OPS_ONNX_IMPORT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dtype.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/shape.h"
#include "engine/tensor.h"

namespace dagrad {

// The oldest and newest default-domain opsets the importer knows. A model
// of an older opset imports when each of its ops is defined there as at
// kMinOnnxOpset (Not-1 is; Add-6, which broadcast along an axis, is not).
inline constexpr int64_t kMinOnnxOpset = 7;
inline constexpr int64_t kMaxOnnxOpset = 17;

// OnnxValue is a graph input or output with its ONNX name.
struct OnnxValue {
  std::string name;
  Value value;
};

// OnnxParameter is an initializer that became a Parameter: its ONNX name,
// its Parameter, and the value the file holds.
struct OnnxParameter {
  std::string name;
  Value value;
  Tensor initial;
};

// OnnxModel is an imported model. The graph is behind a pointer so that
// the Values stay valid when the model moves.
struct OnnxModel {
  std::unique_ptr<Graph> graph;
  std::vector<OnnxValue> inputs;   // in the file's order
  std::vector<OnnxValue> outputs;  // in the file's order
  std::vector<OnnxParameter> parameters;  // in the file's order
  int64_t opset = 0;
  // The graph inputs fixed at import to values (ImportOnnx's input_values):
  // constants in the graph, which a run cannot feed anew.
  std::map<std::string, Tensor> fixed_inputs;

  // LoadParameters assigns every parameter its value from the file.
  //
  //   DAGRAD_RETURN_IF_ERROR(m.LoadParameters(exec));
  absl::Status LoadParameters(Executor& executor) const;
};

// OnnxInputShapes gives the shape of graph inputs by ONNX name. Inputs the
// file gives fixed shapes need no entry; one given must agree with them.
using OnnxInputShapes = std::map<std::string, Shape>;

// OnnxInputValues fixes graph inputs, by ONNX name, to values known at
// import: they become constants, not Inputs, and fold like initializers
// (a shape or an axes list a file takes as an input).
using OnnxInputValues = std::map<std::string, Tensor>;

// ImportOnnx reads the model at `path`; external data is read from its
// folder.
//
// Errors: NotFound for a missing file; InvalidArgument for a file that is
// not an ONNX model or an inconsistent one (the message names the node,
// tensor or input); Unimplemented for an opset above kMaxOnnxOpset, ops
// that an opset below kMinOnnxOpset defines otherwise, ops outside the
// table (all listed), or a feature of a supported op dagrad lacks;
// InvalidArgument when a symbolic dimension has no size in `input_shapes`,
// or a value in `input_values` whose dtype or shape the file contradicts.
//
//   DAGRAD_ASSIGN_OR_RETURN(OnnxModel mha, ImportOnnx("mha.onnx", {{"query", {2, 5, 8}},
//       {"key", {2, 4, 8}}, {"value", {2, 4, 8}}}));
absl::StatusOr<OnnxModel> ImportOnnx(const std::string& path,
                                     const OnnxInputShapes& input_shapes = {},
                                     const OnnxInputValues& input_values = {});

// ImportOnnxFromBytes imports a serialized ModelProto held in memory;
// `model_dir` is where external data is read from ("" refuses it).
//
//   DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnxFromBytes(bytes, "", {}));
absl::StatusOr<OnnxModel> ImportOnnxFromBytes(absl::string_view bytes,
                                              const std::string& model_dir,
                                              const OnnxInputShapes& input_shapes,
                                              const OnnxInputValues& input_values = {});

// OnnxInputInfo describes a graph input as the file declares it: its ONNX
// name, dtype and dims, -1 for a symbolic one, and whether an initializer
// of its name gives it a default value.
struct OnnxInputInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> dims;
  bool has_default = false;
};

// OnnxInputs lists the model's graph inputs, in the file's order, for
// callers that choose shapes before importing. An input with a default
// keeps it unless `input_shapes` or `input_values` name it: then, as an
// ONNX runtime's feed does, the input replaces its initializer.
//
// Errors: those of reading and parsing the file; Unimplemented for an input
// that is not a tensor or of a type dagrad lacks.
//
//   DAGRAD_ASSIGN_OR_RETURN(std::vector<OnnxInputInfo> ins, OnnxInputs("encoder.onnx"));
//   // ins[0]: "src", float32, {-1, -1, 8}, no default
absl::StatusOr<std::vector<OnnxInputInfo>> OnnxInputs(const std::string& path);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_IMPORT_H_
