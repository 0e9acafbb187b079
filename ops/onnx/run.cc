#include "ops/onnx/run.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

bool SameTensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// NeedsValues is true for an import that failed for want of a value known
// at import (OnnxNodeContext::KnownInput's message).
bool NeedsValues(const absl::Status& s) {
  return absl::IsUnimplemented(s) &&
         s.message().find("must be known when importing") != absl::string_view::npos;
}

}  // namespace

absl::StatusOr<OnnxModel> ImportOnnxForValues(const std::string& model,
                                              const OnnxInputValues& values) {
  absl::StatusOr<OnnxModel> m = ImportOnnx(model, ShapesOf(values));
  if (m.ok() || !NeedsValues(m.status())) return m;
  OnnxInputValues fixed;
  for (const auto& [name, t] : values) {
    if (IsInteger(t.dtype()) || t.shape().rank() == 0) fixed[name] = t;
  }
  absl::StatusOr<OnnxModel> specialised = ImportOnnx(model, ShapesOf(values), fixed);
  if (!specialised.ok() && NeedsValues(specialised.status())) return m;
  return specialised;
}

absl::StatusOr<Feeds> OnnxFeeds(const OnnxModel& m, const OnnxInputValues& values) {
  for (const auto& [name, t] : m.fixed_inputs) {
    auto it = values.find(name);
    if (it != values.end() && !SameTensor(it->second, t)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' is ", it->second.TypeString(), " with other values than the ",
          t.TypeString(), " the graph was specialised to when importing (a shape or axes "
          "input, folded): it would change a shape between runs; import the model again"));
    }
  }
  Feeds feeds;
  for (const OnnxValue& in : m.inputs) {
    auto it = values.find(in.name);
    if (it == values.end()) {
      return absl::InvalidArgumentError(absl::StrCat("no value for input '", in.name, "'"));
    }
    feeds.push_back({in.value, it->second});
  }
  return feeds;
}

absl::StatusOr<OnnxInputValues> ReadOnnxInputs(const std::string& model,
                                               const std::string& input) {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<OnnxInputInfo> wanted, OnnxInputs(model));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadSafetensors(input));
  OnnxInputValues values(file.tensors.begin(), file.tensors.end());
  for (const OnnxInputInfo& in : wanted) {
    if (!in.has_default && !values.contains(in.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(input, ": no tensor '", in.name, "', an input of ", model));
    }
  }
  std::vector<std::string> names;
  for (const OnnxInputInfo& in : wanted) names.push_back(in.name);
  for (const auto& [name, t] : values) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          input, ": tensor '", name, "' is not an input of ", model, " (its inputs: ",
          absl::StrJoin(names, ", "), ")"));
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
      if (in.has_default) continue;
      for (int64_t& d : in.dims) d = d < 0 ? 1 : d;
      shapes[in.name] = Shape(in.dims);
    }
  } else {
    DAGRAD_ASSIGN_OR_RETURN(OnnxInputValues values, ReadOnnxInputs(model, input));
    return ImportOnnxForValues(model, values);
  }
  return ImportOnnx(model, shapes);
}

absl::Status EvaluateOnnxFiles(const std::string& model, const std::string& input,
                               const std::string& output, std::unique_ptr<Device> device,
                               const ExecutorOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(OnnxInputValues values, ReadOnnxInputs(model, input));
  DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnxForValues(model, values));
  Executor exec(*m.graph, std::move(device), options);
  DAGRAD_RETURN_IF_ERROR(m.LoadParameters(exec));
  std::vector<Value> fetches;
  for (const OnnxValue& out : m.outputs) fetches.push_back(out.value);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
  DAGRAD_ASSIGN_OR_RETURN(Feeds feeds, OnnxFeeds(m, values));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> got, exec.Run(*plan, feeds));
  SafetensorsFile file;
  file.metadata = {{"model", model}, {"input", input}};
  for (size_t i = 0; i < got.size(); ++i) file.tensors.push_back({m.outputs[i].name, got[i]});
  return WriteSafetensors(output, file);
}

}  // namespace dagrad
