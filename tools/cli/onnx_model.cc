// tools/cli/onnx_model.cc

#include "tools/cli/onnx_model.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/reduce.h"

#ifdef DAGRAD_HAVE_ONNX
#include "ops/onnx/import.h"
#endif

namespace dagrad::cli {

bool IsOnnxPath(absl::string_view path) { return absl::EndsWith(path, ".onnx"); }

#ifdef DAGRAD_HAVE_ONNX
namespace {

// InputValues takes every tensor of `input` as the graph input of its
// name, checking that the model has each and that each input is given.
absl::StatusOr<OnnxInputValues> InputValues(const std::string& model,
                                            const std::string& input) {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<OnnxInputInfo> wanted, OnnxInputs(model));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadSafetensors(input));
  OnnxInputValues values(file.tensors.begin(), file.tensors.end());
  for (const OnnxInputInfo& in : wanted) {
    if (!values.contains(in.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          input, ": no tensor '", in.name, "', an input of ", model));
    }
  }
  for (const auto& [name, t] : values) {
    bool known = false;
    for (const OnnxInputInfo& in : wanted) known = known || in.name == name;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          input, ": tensor '", name, "' is not an input of ", model));
    }
  }
  return values;
}

OnnxInputShapes ShapesOf(const OnnxInputValues& values) {
  OnnxInputShapes shapes;
  for (const auto& [name, t] : values) shapes[name] = t.shape();
  return shapes;
}

// SymbolicAsOne gives every symbolic dim of every input the size 1.
absl::StatusOr<OnnxInputShapes> SymbolicAsOne(const std::string& model) {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<OnnxInputInfo> inputs, OnnxInputs(model));
  OnnxInputShapes shapes;
  for (OnnxInputInfo& in : inputs) {
    for (int64_t& d : in.dims) d = d < 0 ? 1 : d;
    shapes[in.name] = Shape(in.dims);
  }
  return shapes;
}

}  // namespace

absl::Status EvaluateOnnx(const std::string& model, const std::string& input,
                          const std::string& output, std::unique_ptr<Device> device,
                          const ExecutorOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(OnnxInputValues values, InputValues(model, input));
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

absl::StatusOr<OnnxDotGraph> ImportOnnxForDot(const std::string& model,
                                              const std::string& input, bool backward) {
  OnnxInputShapes shapes;
  if (input.empty()) {
    DAGRAD_ASSIGN_OR_RETURN(shapes, SymbolicAsOne(model));
  } else {
    DAGRAD_ASSIGN_OR_RETURN(OnnxInputValues values, InputValues(model, input));
    shapes = ShapesOf(values);
  }
  DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnx(model, shapes));
  OnnxDotGraph dot{std::move(m.graph), {}, Value()};
  for (const OnnxValue& out : m.outputs) dot.roots.push_back(out.value);
  if (!backward) return dot;
  if (m.outputs.empty() || !IsFloating(m.outputs[0].value.dtype())) {
    return absl::InvalidArgumentError("--backward needs a model whose first output is float");
  }
  dot.loss = Sum(m.outputs[0].value);
  dot.roots.push_back(dot.loss);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(dot.loss, dot.graph->Parameters()));
  for (const Value& v : grads) {
    if (!v.is_null()) dot.roots.push_back(v);
  }
  return dot;
}

#else  // DAGRAD_HAVE_ONNX

namespace {
absl::Status NoOnnx(const std::string& model) {
  return absl::FailedPreconditionError(absl::StrCat(
      model, ": this dagrad was built without ONNX (DAGRAD_ONNX=OFF or libonnx-dev missing)"));
}
}  // namespace

absl::Status EvaluateOnnx(const std::string& model, const std::string&, const std::string&,
                          std::unique_ptr<Device>, const ExecutorOptions&) {
  return NoOnnx(model);
}

absl::StatusOr<OnnxDotGraph> ImportOnnxForDot(const std::string& model, const std::string&,
                                              bool) {
  return NoOnnx(model);
}

#endif  // DAGRAD_HAVE_ONNX

}  // namespace dagrad::cli
