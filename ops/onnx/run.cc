#include "ops/onnx/run.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

// ShapesOf gives each input value's shape, by its ONNX name.
OnnxInputShapes ShapesOf(const OnnxInputValues& values) {
  OnnxInputShapes shapes;
  for (const auto& [name, t] : values) shapes[name] = t.shape();
  return shapes;
}

}  // namespace

absl::StatusOr<OnnxInputValues> ReadOnnxInputs(const std::string& model,
                                               const std::string& input) {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<OnnxInputInfo> wanted, OnnxInputs(model));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadSafetensors(input));
  OnnxInputValues values(file.tensors.begin(), file.tensors.end());
  for (const OnnxInputInfo& in : wanted) {
    if (!values.contains(in.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(input, ": no tensor '", in.name, "', an input of ", model));
    }
  }
  for (const auto& [name, t] : values) {
    bool known = false;
    for (const OnnxInputInfo& in : wanted) known = known || in.name == name;
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat(input, ": tensor '", name, "' is not an input of ", model));
    }
  }
  return values;
}

absl::StatusOr<OnnxModel> ImportOnnxForInputs(const std::string& model,
                                              const std::string& input) {
  OnnxInputShapes shapes;
  if (input.empty()) {
    DAGRAD_ASSIGN_OR_RETURN(std::vector<OnnxInputInfo> inputs, OnnxInputs(model));
    for (OnnxInputInfo& in : inputs) {
      for (int64_t& d : in.dims) d = d < 0 ? 1 : d;
      shapes[in.name] = Shape(in.dims);
    }
  } else {
    DAGRAD_ASSIGN_OR_RETURN(OnnxInputValues values, ReadOnnxInputs(model, input));
    shapes = ShapesOf(values);
  }
  return ImportOnnx(model, shapes);
}

absl::Status EvaluateOnnxFiles(const std::string& model, const std::string& input,
                               const std::string& output, std::unique_ptr<Device> device,
                               const ExecutorOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(OnnxInputValues values, ReadOnnxInputs(model, input));
  DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnx(model, ShapesOf(values)));
  Executor exec(*m.graph, std::move(device), options);
  DAGRAD_RETURN_IF_ERROR(m.LoadParameters(exec));
  std::vector<Value> fetches;
  for (const OnnxValue& out : m.outputs) fetches.push_back(out.value);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
  Feeds feeds;
  for (const OnnxValue& in : m.inputs) feeds.push_back({in.value, values.at(in.name)});
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> got, exec.Run(*plan, feeds));
  SafetensorsFile file;
  file.metadata = {{"model", model}, {"input", input}};
  for (size_t i = 0; i < got.size(); ++i) file.tensors.push_back({m.outputs[i].name, got[i]});
  return WriteSafetensors(output, file);
}

}  // namespace dagrad
