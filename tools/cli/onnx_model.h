// tools/cli/onnx_model.h
//
// `--model=file.onnx` runs an ONNX model (`dagrad eval`) or draws it
// (`dagrad dot`) with ops/onnx/run.h. A dagrad built without ONNX
// (DAGRAD_ONNX=OFF, or libonnx-dev missing) says so.

#ifndef DAGRAD_TOOLS_CLI_ONNX_MODEL_H_
#define DAGRAD_TOOLS_CLI_ONNX_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#ifdef DAGRAD_HAVE_ONNX
#include "ops/onnx/run.h"
#endif

namespace dagrad::cli {

// IsOnnxPath says whether a --model value names an ONNX file (".onnx").
inline bool IsOnnxPath(absl::string_view path) { return absl::EndsWith(path, ".onnx"); }

// NoOnnx is the error for an ONNX file given to a dagrad without ONNX.
inline absl::Status NoOnnx(const std::string& model) {
  return absl::FailedPreconditionError(absl::StrCat(
      model, ": this dagrad was built without ONNX (DAGRAD_ONNX=OFF or libonnx-dev missing)"));
}

// EvaluateOnnx is EvaluateOnnxFiles (ops/onnx/run.h), or NoOnnx.
inline absl::Status EvaluateOnnx(const std::string& model, const std::string& input,
                                 const std::string& output, std::unique_ptr<Device> device,
                                 const ExecutorOptions& options) {
#ifdef DAGRAD_HAVE_ONNX
  return EvaluateOnnxFiles(model, input, output, std::move(device), options);
#else
  return NoOnnx(model);
#endif
}

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_ONNX_MODEL_H_
