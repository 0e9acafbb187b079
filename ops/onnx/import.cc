// ops/onnx/import.cc
//
// The import driver: parse, check the opset and the op table, add
// initializers and inputs, then import the nodes in dependency order
// (folding what is known) and name the outputs.

#include "ops/onnx/import.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "ops/onnx/import_context.h"
#include "ops/onnx/import_fold.h"
#include "ops/onnx/import_gelu.h"
#include "ops/onnx/import_graph.h"
#include "ops/onnx/onnx_tensor.h"

namespace dagrad {
namespace {

struct Importer {
  const onnx::GraphProto& proto;
  std::string model_dir;
  OnnxModel model;
  OnnxValues values;
  // file_index[i]: the index in the file of proto's node i (FuseGelu).
  std::vector<int> file_index;
  Graph& g() { return *model.graph; }
};

absl::Status WithContext(const absl::Status& s, absl::string_view where) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
}

// IsParameter: float initializers stand for trainable parameters, except
// those named by a node path ("scale/const_0"): dagrad's exporter writes its
// constants so, while a variable's checkpoint name, like a PyTorch
// state_dict name, never holds '/'.
bool IsParameter(const onnx::TensorProto& proto, const Tensor& value) {
  return IsFloating(value.dtype()) && proto.name().find('/') == std::string::npos;
}

// AddInitializer makes an initializer known. A trainable one becomes its
// Parameter only where an op reads it as data (OnnxNodeContext::input): an
// initializer that ops read only as a value they build with (a Pow
// exponent, a Dropout ratio, a Range bound, as onnx-simplifier writes them)
// is that value and no parameter, since training it could change nothing.
// One read both ways is a parameter whose file value the other reads fix.
absl::Status AddInitializer(Importer& im, const onnx::TensorProto& proto) {
  DAGRAD_ASSIGN_OR_RETURN(Tensor value, TensorFromOnnx(proto, im.model_dir));
  OnnxOperand& operand = im.values[proto.name()];
  if (IsParameter(proto, value)) {
    operand.trainable = OnnxInitializer{proto.name(), std::move(value)};
  } else {
    operand.known = std::move(value);
  }
  return absl::OkStatus();
}

// PlaceParameters gives each trainable initializer its Parameter's path:
// the clean ones theirs (CleanParameterPath), then the others a flattened
// name apart from every path taken, in `taken` for the inputs to avoid.
void PlaceParameters(Importer& im, absl::flat_hash_set<std::string>& taken) {
  std::vector<OnnxInitializer*> flattened;
  for (const onnx::TensorProto& init : im.proto.initializer()) {
    std::optional<OnnxInitializer>& trainable = im.values[init.name()].trainable;
    if (!trainable) continue;
    if (auto path = CleanParameterPath(init.name())) {
      std::tie(trainable->scope, trainable->leaf) = *path;
      taken.insert(path->first.empty() ? path->second : path->first + "/" + path->second);
    } else {
      flattened.push_back(&*trainable);
    }
  }
  for (OnnxInitializer* init : flattened) init->leaf = NameApart(init->name, taken);
}

absl::Status AddInitializers(Importer& im, absl::flat_hash_set<std::string>& taken) {
  for (const onnx::TensorProto& init : im.proto.initializer()) {
    if (im.values.contains(init.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat("two initializers are named '", init.name(), "'"));
    }
    DAGRAD_RETURN_IF_ERROR(AddInitializer(im, init));
  }
  PlaceParameters(im, taken);
  return absl::OkStatus();
}

// InputNames gives each graph input its Input's name: its ONNX name when it
// holds no '/', else a flattened one apart from every name taken.
std::vector<std::string> InputNames(const onnx::GraphProto& graph,
                                    absl::flat_hash_set<std::string>& taken) {
  auto clean = [](const std::string& name) {
    return !name.empty() && name.find('/') == std::string::npos;
  };
  for (const onnx::ValueInfoProto& info : graph.input()) {
    if (clean(info.name())) taken.insert(info.name());
  }
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto& info : graph.input()) {
    names.push_back(clean(info.name()) ? info.name() : NameApart(info.name(), taken));
  }
  return names;
}

absl::Status AddInputs(Importer& im, OnnxInputShapes shapes, const OnnxInputValues& fixed,
                       absl::flat_hash_set<std::string>& taken) {
  for (const auto& [name, value] : fixed) shapes[name] = value.shape();
  DAGRAD_RETURN_IF_ERROR(CheckShapesNameInputs(im.proto, shapes));
  const std::vector<std::string> names = InputNames(im.proto, taken);
  absl::flat_hash_set<std::string> declared;
  for (int i = 0; i < im.proto.input_size(); ++i) {
    const onnx::ValueInfoProto& info = im.proto.input(i);
    if (!declared.insert(info.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("the graph declares the input '", info.name(), "' twice"));
    }
    if (im.values.contains(info.name())) {
      // An initializer is the input's default; given a shape or a value, the
      // input replaces it, as an ONNX runtime's feed does.
      if (!shapes.contains(info.name())) continue;
      im.values[info.name()] = OnnxOperand{};
    }
    DAGRAD_ASSIGN_OR_RETURN(InputSpec spec, InputSpecOf(info, shapes));
    if (auto it = fixed.find(info.name()); it != fixed.end()) {
      if (it->second.dtype() != spec.dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", info.name(), "' is ", DTypeName(spec.dtype), ", given ",
            it->second.TypeString()));
      }
      im.values[info.name()].known = it->second;
      im.model.fixed_inputs[info.name()] = it->second;
      continue;
    }
    Value v = im.g().Input(names[i], spec.dtype, spec.shape);
    DAGRAD_RETURN_IF_ERROR(WithContext(v.status(), absl::StrCat("input '", info.name(), "'")));
    im.values[info.name()].value = v;
    im.model.inputs.push_back({info.name(), v});
  }
  return absl::OkStatus();
}

absl::Status RecordOutputs(Importer& im, const onnx::NodeProto& node,
                           const std::vector<Value>& outputs) {
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    if (i >= static_cast<int>(outputs.size())) {
      return absl::UnimplementedError(absl::StrCat("output ", i, " is not supported"));
    }
    OnnxOperand& operand = im.values[node.output(i)];
    operand.value = outputs[i];
    if (outputs[i].node().kind == NodeKind::kConstant) operand.known = outputs[i].node().value;
  }
  return absl::OkStatus();
}

absl::Status ImportNode(Importer& im, const onnx::NodeProto& node) {
  const OnnxOpEntry* entry = FindOnnxOp(node.op_type());
  std::vector<OnnxOperand*> inputs;
  for (const std::string& name : node.input()) {
    inputs.push_back(name.empty() ? nullptr : &im.values[name]);
  }
  DAGRAD_ASSIGN_OR_RETURN(auto folded, FoldNode(*entry, node, im.model.opset, inputs));
  if (folded) {
    for (int i = 0; i < node.output_size() && i < static_cast<int>(folded->size()); ++i) {
      if (!node.output(i).empty()) im.values[node.output(i)].known = (*folded)[i];
    }
    return absl::OkStatus();
  }
  OnnxNodeContext context(im.g(), node, im.model.opset, std::move(inputs));
  // Under the node's name, so that an error when running names it.
  Graph::Scope scope(im.g(), node.name());
  absl::StatusOr<std::vector<Value>> outputs = entry->import(context);
  DAGRAD_RETURN_IF_ERROR(context.attr_error());  // what the import's own error follows from
  DAGRAD_RETURN_IF_ERROR(outputs.status());
  return RecordOutputs(im, node, *outputs);
}

absl::Status ImportNodes(Importer& im) {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int> order, TopologicalOrder(im.proto, im.values));
  for (int i : order) {
    const onnx::NodeProto& node = im.proto.node(i);
    DAGRAD_RETURN_IF_ERROR(WithContext(ImportNode(im, node), NodeLabel(node, im.file_index[i])));
  }
  return absl::OkStatus();
}

absl::Status AddOutputs(Importer& im) {
  for (const onnx::ValueInfoProto& info : im.proto.output()) {
    auto it = im.values.find(info.name());
    if (it == im.values.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", info.name(), "' is produced by no node"));
    }
    OnnxOperand& operand = it->second;
    if (operand.value.is_null() && operand.known) {
      operand.value = im.g().Constant(*operand.known, "onnx_output");
    } else if (operand.value.is_null() && operand.trainable) {
      operand.value = InitializerParameter(im.g(), *operand.trainable);
    }
    DAGRAD_RETURN_IF_ERROR(operand.value.status());
    im.model.outputs.push_back({info.name(), operand.value});
  }
  return im.g().status();
}

// CollectParameters lists, in the file's order, the trainable initializers
// that became Parameters while importing.
void CollectParameters(Importer& im) {
  for (const onnx::TensorProto& init : im.proto.initializer()) {
    const OnnxOperand& operand = im.values.at(init.name());
    if (!operand.trainable || operand.value.is_null()) continue;
    im.model.parameters.push_back({init.name(), operand.value, operand.trainable->value});
  }
}

}  // namespace

absl::Status OnnxModel::LoadParameters(Executor& executor) const {
  for (const OnnxParameter& p : parameters) {
    DAGRAD_RETURN_IF_ERROR(WithContext(executor.Assign(p.value, p.initial), p.name));
  }
  return absl::OkStatus();
}

absl::StatusOr<OnnxModel> ImportOnnxFromBytes(absl::string_view bytes,
                                              const std::string& model_dir,
                                              const OnnxInputShapes& input_shapes,
                                              const OnnxInputValues& input_values) {
  DAGRAD_ASSIGN_OR_RETURN(onnx::ModelProto proto, ParseOnnxModel(bytes));
  std::vector<int> file_index;
  FuseGelu(*proto.mutable_graph(), &file_index);
  DAGRAD_RETURN_IF_ERROR(CheckOpsSupported(proto.graph()));
  DAGRAD_ASSIGN_OR_RETURN(int64_t opset, DefaultOpset(proto));
  DAGRAD_RETURN_IF_ERROR(CheckOpsDefinedAsKnown(proto.graph(), opset));
  Importer im{proto.graph(), model_dir, OnnxModel{std::make_unique<Graph>()}, {},
              std::move(file_index)};
  im.model.opset = opset;
  absl::flat_hash_set<std::string> taken;  // graph paths of parameters and inputs
  DAGRAD_RETURN_IF_ERROR(AddInitializers(im, taken));
  DAGRAD_RETURN_IF_ERROR(AddInputs(im, input_shapes, input_values, taken));
  DAGRAD_RETURN_IF_ERROR(ImportNodes(im));
  DAGRAD_RETURN_IF_ERROR(AddOutputs(im));
  CollectParameters(im);
  return std::move(im.model);
}

absl::StatusOr<OnnxModel> ImportOnnx(const std::string& path,
                                     const OnnxInputShapes& input_shapes,
                                     const OnnxInputValues& input_values) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  absl::StatusOr<OnnxModel> model = ImportOnnxFromBytes(bytes, dir, input_shapes, input_values);
  if (!model.ok()) return WithContext(model.status(), path);
  return model;
}

absl::StatusOr<std::vector<OnnxInputInfo>> OnnxInputs(const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  absl::StatusOr<onnx::ModelProto> proto = ParseOnnxModel(bytes);
  if (!proto.ok()) return WithContext(proto.status(), path);
  std::vector<OnnxInputInfo> inputs;
  for (const onnx::ValueInfoProto& info : proto->graph().input()) {
    bool has_default = false;
    for (const auto& init : proto->graph().initializer()) {
      has_default = has_default || init.name() == info.name();
    }
    DAGRAD_ASSIGN_OR_RETURN(InputDecl decl, InputDeclOf(info));
    inputs.push_back({info.name(), decl.dtype, decl.dims, has_default});
  }
  return inputs;
}

}  // namespace dagrad
