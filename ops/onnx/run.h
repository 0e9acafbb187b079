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
// graph input of its name: InvalidArgument naming the file and tensor for
// an input of `model` the file lacks, or a tensor that is not one.
absl::StatusOr<OnnxInputValues> ReadOnnxInputs(const std::string& model,
                                               const std::string& input);

// ImportOnnxForInputs imports `model` with the shapes of the tensors in
// `input` (ReadOnnxInputs), or, when `input` is "", with every symbolic
// dimension of size 1.
absl::StatusOr<OnnxModel> ImportOnnxForInputs(const std::string& model,
                                              const std::string& input);

// EvaluateOnnxFiles runs `model` in eval mode on the tensors of `input`
// and writes each graph output, under its ONNX name, to `output`. Errors:
// ReadOnnxInputs's, ImportOnnx's (a shape or dtype the model refuses) and
// the executor's.
absl::Status EvaluateOnnxFiles(const std::string& model, const std::string& input,
                               const std::string& output, std::unique_ptr<Device> device,
                               const ExecutorOptions& options);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_RUN_H_
