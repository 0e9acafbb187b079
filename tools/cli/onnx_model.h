// tools/cli/onnx_model.h
//
// The ONNX paths of the `dagrad` CLI: `--model=file.onnx` loads an ONNX
// model wherever a checkpoint loads.
//
//   dagrad eval --model=encoder.onnx --input=in.safetensors --output=out.safetensors
//   dagrad dot --model=encoder.onnx --input=in.safetensors --out=encoder.dot
//
// eval takes each graph input, by its ONNX name, from the input file with
// its shape, runs the model in eval mode, and writes each graph output
// under its ONNX name. dot draws the imported graph; its symbolic dims are
// the input file's shapes when --input is given, else 1. A dagrad built
// without ONNX (DAGRAD_ONNX=OFF) says so.

#ifndef DAGRAD_TOOLS_CLI_ONNX_MODEL_H_
#define DAGRAD_TOOLS_CLI_ONNX_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/graph.h"

namespace dagrad::cli {

// IsOnnxPath says whether a --model value names an ONNX file (".onnx").
bool IsOnnxPath(absl::string_view path);

// EvaluateOnnx writes `output` (each graph output by ONNX name) for the
// graph inputs found by ONNX name in `input`. InvalidArgument naming the
// file and tensor for an input missing from `input`, an unexpected tensor,
// or a shape or dtype the model refuses; the import's errors otherwise.
absl::Status EvaluateOnnx(const std::string& model, const std::string& input,
                          const std::string& output, std::unique_ptr<Device> device,
                          const ExecutorOptions& options);

// OnnxDotGraph is an imported model to draw: its graph, what to draw from
// (the outputs; with backward, the gradients of the sum of the first
// output with respect to the parameters) and that sum, drawn as the loss.
struct OnnxDotGraph {
  std::unique_ptr<Graph> graph;
  std::vector<Value> roots;
  Value loss;
};

// ImportOnnxForDot imports `model` with shapes from `input` ("" for none:
// symbolic dims are 1).
absl::StatusOr<OnnxDotGraph> ImportOnnxForDot(const std::string& model,
                                              const std::string& input, bool backward);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_ONNX_MODEL_H_
