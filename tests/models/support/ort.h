// ONNX Runtime for the models' export tests: tools/onnx/ort_run.js (npm's
// onnxruntime-node, `bash tools/setup.sh --onnx`) run on a model file and
// a safetensors file of its inputs.

#ifndef DAGRAD_TESTS_MODELS_SUPPORT_ORT_H_
#define DAGRAD_TESTS_MODELS_SUPPORT_ORT_H_

#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"

namespace dagrad {

// OrtRunner is tools/onnx/ort_run.js, or "" when ONNX Runtime is not installed.
inline std::string OrtRunner() {
  const std::string dir = std::string(DAGRAD_TEST_DATA_DIR) + "/../../tools/onnx";
  const std::string probe =
      "cd '" + dir + "' && node -e \"require('onnxruntime-node')\" > /dev/null 2>&1";
  return std::system(probe.c_str()) == 0 ? dir + "/ort_run.js" : "";
}

// RunOrt runs `model` under ONNX Runtime (`runner`) on `inputs`, through
// files beside the model, and returns its outputs by name.
inline absl::StatusOr<SafetensorsFile> RunOrt(const std::string& runner, const std::string& model,
                                              const SafetensorsFile& inputs) {
  const std::string in = model + ".in.safetensors", out = model + ".out.safetensors";
  DAGRAD_RETURN_IF_ERROR(WriteSafetensors(in, inputs));
  const std::string run = absl::StrCat("node '", runner, "' --model=", model, " --input=", in,
                                       " --output=", out);
  if (std::system(run.c_str()) != 0) return absl::InternalError("failed: " + run);
  return ReadSafetensors(out);
}

}  // namespace dagrad

#endif  // DAGRAD_TESTS_MODELS_SUPPORT_ORT_H_
