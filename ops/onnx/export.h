// ops/onnx/export.h
//
// ExportOnnx: writes the forward graph that computes `outputs` as an ONNX
// model (opset 17) for inference: dropout becomes the identity, variables
// become initializers under their checkpoint names (PyTorch's state_dict
// names: "encoder.layers.0.self_attn.in_proj_weight"), inputs keep their
// names. Each dagrad op maps to standard ONNX ops through one table
// (ops/onnx/export_ops.h); an op without an entry (a loss, a gradient
// or optimizer op, a multinomial draw) is an error naming it.
//
// The exported model computes what the graph does, edges included (a row
// that every mask or a -inf bias masks is zeros; Pow as its kernel rounds),
// except where the runtime defines an op otherwise: ONNX Runtime's
// ReduceMax, ArgMax and TopK skip a NaN that dagrad, as PyTorch, propagates.
//
// Dynamic sizes. The graph is built at fixed shapes; each OnnxDynamicDim
// names an input axis whose size becomes a symbol (dim_param) in the
// model. Every size in the graph equal to that axis's size — a reshape or
// broadcast target, a fill's shape, an arange's length, an output's dim —
// is taken to be the symbol and computed from the input's shape at run
// time, so build the graph at sizes that no other dimension has (the
// export refuses a size of 1, two symbols of one size, and a variable
// with a dim of a symbol's size). ExportOnnxFamily (ops/onnx/
// export_family.h) picks such sizes itself and proves them, from a
// declaration of the symbols as a ShapeFamily's: the way to export a
// model whose sizes vary.
//
//   OnnxExportOptions options;
//   options.variables = &checkpoint;        // values by checkpoint name
//   options.output_names = {"logits"};
//   options.dynamic_dims = {{"tokens", 0, "batch"}, {"tokens", 1, "sequence"}};
//   absl::Status st = ExportOnnx(g, {logits}, "model.onnx", options);

#ifndef DAGRAD_OPS_ONNX_EXPORT_H_
#define DAGRAD_OPS_ONNX_EXPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/graph.h"
#include "engine/io/safetensors.h"

namespace dagrad {

// OnnxDynamicDim makes axis `axis` of input `input` the symbol `name`.
struct OnnxDynamicDim {
  std::string input;  // the input node's name, e.g. "tokens"
  int axis = 0;
  std::string name;   // the dim_param, e.g. "batch"
};

struct OnnxExportOptions {
  // variables: the values of the graph's variables by checkpoint name
  // (a checkpoint read with ReadCheckpoint); required when the exported
  // graph reads a variable. Values the graph does not read are left out
  // (a graph of part of a model exports with the whole model's file), so
  // a caller that builds its model from a checkpoint checks the file
  // against that model first (MatchVariables; `dagrad export` does so
  // through the models' FromCheckpoint).
  const SafetensorsFile* variables = nullptr;
  // output_names: the ONNX names of `outputs`, one each; empty: the
  // outputs' node paths.
  std::vector<std::string> output_names;
  std::vector<OnnxDynamicDim> dynamic_dims;
  std::string producer = "dagrad";
};

// SerializeOnnx returns the ONNX model (ModelProto bytes) of the forward
// graph that computes `outputs`, checked with onnx::checker::check_model.
// Errors: Unimplemented naming an op with no ONNX mapping and its node;
// InvalidArgument for a missing variable value, a bad option or an output
// that is not a node; Internal when the checker rejects the model.
//
//   absl::StatusOr<std::string> bytes = SerializeOnnx(g, {logits}, options);
absl::StatusOr<std::string> SerializeOnnx(const Graph& graph, absl::Span<const Value> outputs,
                                          const OnnxExportOptions& options);

// ExportOnnx writes SerializeOnnx's model to `path` atomically: on any
// error no file (and no partial file) is left at `path`.
//
//   DAGRAD_RETURN_IF_ERROR(ExportOnnx(g, {logits}, "model.onnx", options));
absl::Status ExportOnnx(const Graph& graph, absl::Span<const Value> outputs,
                        const std::string& path, const OnnxExportOptions& options);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_EXPORT_H_
