// ops/onnx/run.h
//
// Running an ONNX model on tensors from a safetensors file, by the ONNX
// names of its graph inputs and outputs: what `dagrad eval --model=FILE.onnx`
// and `dagrad dot --model=FILE.onnx` do.
//
//   DAGRAD_RETURN_IF_ERROR(EvaluateOnnxFiles("encoder.onnx", "in.safetensors",
//                                            "out.safetensors", CpuDevice(), {}));

#ifndef DAGRAD_OPS_ONNX_RUN_H_
#define DAGRAD_OPS_ONNX_RUN_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "ops/onnx/import.h"

namespace dagrad {

// ReadOnnxInputs reads every tensor of the safetensors file `input` as the
// graph input of its name (one that replaces an input's default, its
// initializer, too): InvalidArgument naming the file and tensor for an
// input of `model` without a default that the file lacks, or a tensor that
// is not an input.
absl::StatusOr<OnnxInputValues> ReadOnnxInputs(const std::string& model,
                                               const std::string& input);

// ImportOnnxForValues imports `model` for the tensors in `values`, by ONNX
// input name, and specialises the graph to them where it must: when an op
// needs at import a value that a graph input carries (Reshape's shape,
// Slice's starts, Squeeze's axes, Expand's shape, Dropout's training_mode,
// fed as inputs, as ONNX's node tests do), the model is imported again with
// its integer and scalar inputs fixed to the values given, and folded
// (OnnxModel::fixed_inputs lists them; OnnxFeeds refuses other values).
// Errors: ImportOnnx's; the first import's when fixing the values does not
// help either.
//
//   DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnxForValues("reshape.onnx", values));
//   DAGRAD_ASSIGN_OR_RETURN(Feeds feeds, OnnxFeeds(m, values));
absl::StatusOr<OnnxModel> ImportOnnxForValues(const std::string& model,
                                              const OnnxInputValues& values);

// OnnxFeeds returns the feeds of m's graph inputs from `values`, by ONNX
// name. InvalidArgument naming the input when `values` lacks one, or gives
// an input the graph was specialised to (fixed_inputs) another value: that
// value would change a shape the graph was built with, so the model must be
// imported again for it.
absl::StatusOr<Feeds> OnnxFeeds(const OnnxModel& m, const OnnxInputValues& values);

// ImportOnnxForInputs imports `model` with the shapes of the tensors in
// `input` (ReadOnnxInputs), or, when `input` is "", with every symbolic
// dimension of size 1.
absl::StatusOr<OnnxModel> ImportOnnxForInputs(const std::string& model,
                                              const std::string& input);

// EvaluateOnnxFiles runs `model` in eval mode on the tensors of `input`
// and writes each graph output, under its ONNX name, to `output`. Errors:
// ReadOnnxInputs's, ImportOnnxForValues's (a shape or dtype the model
// refuses) and the executor's.
absl::Status EvaluateOnnxFiles(const std::string& model, const std::string& input,
                               const std::string& output, std::unique_ptr<Device> device,
                               const ExecutorOptions& options);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_RUN_H_
