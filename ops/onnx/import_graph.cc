// ops/onnx/import_graph.cc

#include "ops/onnx/import_graph.h"

#include <onnx/defs/schema.h>

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/status_macros.h"
#include "ops/onnx/onnx_tensor.h"

namespace dagrad {

absl::StatusOr<onnx::ModelProto> ParseOnnxModel(absl::string_view bytes) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not an ONNX model: the ", bytes.size(),
        " bytes do not parse as a ModelProto (truncated or damaged?)"));
  }
  if (!model.has_graph()) return absl::InvalidArgumentError("the ONNX model has no graph");
  return model;
}

absl::StatusOr<int64_t> DefaultOpset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (!IsDefaultDomain(id.domain())) continue;
    if (id.version() < 1) {
      return absl::InvalidArgumentError(absl::StrCat("ONNX opset ", id.version()));
    }
    if (id.version() > kMaxOnnxOpset) {
      return absl::UnimplementedError(absl::StrCat(
          "the model uses ONNX opset ", id.version(), "; dagrad knows opsets up to ",
          kMaxOnnxOpset));
    }
    return id.version();
  }
  return absl::InvalidArgumentError("the ONNX model imports no default-domain opset");
}

bool OnnxOpTypeSupported(absl::string_view domain, absl::string_view op_type) {
  return IsDefaultDomain(domain) && FindOnnxOp(op_type) != nullptr;
}

namespace {

// The definitions before opset 7 that the importer reads as they were:
// those that differ from opset 7's only by consumed_inputs (an attribute
// of no effect), by needing equal shapes where numpy broadcasting is
// defined for them too (Max-1, Gemm's C), by Dropout's is_test, or by the
// broadcast and axis attributes of the element-wise ops (LegacyBroadcast,
// import_ops_math.cc). Cast-1 (`to` a string), Concat-1, Reshape-1 and
// Split-1 are not read.
const absl::flat_hash_set<std::string>& LegacyDefinitionsRead() {
  static const auto* read = new absl::flat_hash_set<std::string>{
      "Abs-1", "Exp-1", "Log-1", "Neg-1", "Reciprocal-1", "Relu-1", "Sigmoid-1", "Sqrt-1",
      "Tanh-1", "LeakyRelu-1", "Clip-1", "Max-1", "Min-1", "Mean-1", "Sum-1", "Gemm-1",
      "Gemm-6", "Dropout-1", "Dropout-6", "Add-1", "Add-6", "Sub-1", "Sub-6", "Mul-1",
      "Mul-6", "Div-1", "Div-6", "Pow-1", "And-1", "Or-1", "Equal-1", "Greater-1", "Less-1"};
  return *read;
}

}  // namespace

absl::Status CheckOpsDefinedAsKnown(const onnx::GraphProto& graph, int64_t opset) {
  if (opset >= kMinOnnxOpset) return absl::OkStatus();
  std::set<std::string> older;
  for (const onnx::NodeProto& node : graph.node()) {
    if (!IsDefaultDomain(node.domain())) continue;
    const onnx::OpSchema* then = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "");
    const onnx::OpSchema* known =
        onnx::OpSchemaRegistry::Schema(node.op_type(), kMinOnnxOpset, "");
    if (then != nullptr && known != nullptr && then->since_version() == known->since_version()) {
      continue;
    }
    const std::string version =
        then == nullptr ? node.op_type() : absl::StrCat(node.op_type(), "-", then->since_version());
    if (!LegacyDefinitionsRead().contains(version)) older.insert(version);
  }
  if (older.empty()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      "the model uses ONNX opset ", opset, ", where ", absl::StrJoin(older, ", "),
      " meant otherwise than dagrad knows it: dagrad knows the ops as opsets ", kMinOnnxOpset,
      " to ", kMaxOnnxOpset, " define them"));
}

absl::Status CheckOpsSupported(const onnx::GraphProto& graph) {
  std::map<std::string, int> missing;
  for (const onnx::NodeProto& node : graph.node()) {
    if (OnnxOpTypeSupported(node.domain(), node.op_type())) continue;
    std::string type = IsDefaultDomain(node.domain())
                           ? node.op_type()
                           : absl::StrCat(node.domain(), ".", node.op_type());
    ++missing[type];
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      "dagrad cannot import ", missing.size(), " ONNX op type(s) of this model: ",
      absl::StrJoin(missing, ", ", [](std::string* out, const auto& entry) {
        absl::StrAppend(out, entry.first, " (", entry.second,
                        entry.second == 1 ? " node)" : " nodes)");
      })));
}

namespace {

absl::Status InputError(const onnx::ValueInfoProto& info, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("input '", info.name(), "': ", why));
}

}  // namespace

absl::StatusOr<InputDecl> InputDeclOf(const onnx::ValueInfoProto& info) {
  if (!info.type().has_tensor_type()) {
    return absl::UnimplementedError(absl::StrCat(
        "input '", info.name(), "' is not a tensor (a sequence, map or optional)"));
  }
  const onnx::TypeProto::Tensor& type = info.type().tensor_type();
  absl::StatusOr<DType> dtype = DTypeFromOnnx(type.elem_type());
  if (!dtype.ok()) {
    return absl::UnimplementedError(
        absl::StrCat("input '", info.name(), "': ", dtype.status().message()));
  }
  InputDecl decl{*dtype, type.has_shape(), {}};
  for (const onnx::TensorShapeProto::Dimension& d : type.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() < 0) {
      return InputError(info, absl::StrCat("negative dim ", d.dim_value()));
    }
    decl.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return decl;
}

absl::StatusOr<InputSpec> InputSpecOf(const onnx::ValueInfoProto& info,
                                      const OnnxInputShapes& shapes) {
  DAGRAD_ASSIGN_OR_RETURN(InputDecl decl, InputDeclOf(info));
  auto given = shapes.find(info.name());
  if (given == shapes.end() && !decl.has_shape) {
    return InputError(info, "the file gives no shape; pass one");
  }
  const int rank = static_cast<int>(decl.dims.size());
  if (given != shapes.end() && decl.has_shape && given->second.rank() != rank) {
    return InputError(info, absl::StrCat("shape ", given->second.ToString(),
                                         " given for an input of rank ", rank));
  }
  Shape shape = given != shapes.end() ? given->second : Shape(decl.dims);
  for (int i = 0; i < rank; ++i) {
    if (decl.dims[i] >= 0 && decl.dims[i] != shape.dim(i)) {
      return InputError(info, absl::StrCat("shape ", shape.ToString(),
                                           " given, but the file fixes dim ", i, " at ",
                                           decl.dims[i]));
    }
    if (shape.dim(i) < 0) {
      return InputError(info, absl::StrCat("dim ", i, " ('",
                                           info.type().tensor_type().shape().dim(i).dim_param(),
                                           "') is symbolic: give the input's shape"));
    }
  }
  absl::StatusOr<int64_t> bytes = ValidateBytes(shape, decl.dtype);
  if (!bytes.ok()) return InputError(info, bytes.status().message());
  return InputSpec{decl.dtype, shape};
}

absl::Status CheckShapesNameInputs(const onnx::GraphProto& graph,
                                   const OnnxInputShapes& shapes) {
  for (const auto& [name, shape] : shapes) {
    bool found = false;
    for (const onnx::ValueInfoProto& info : graph.input()) found = found || info.name() == name;
    if (!found) {
      std::vector<std::string> names;
      for (const onnx::ValueInfoProto& info : graph.input()) names.push_back(info.name());
      return absl::InvalidArgumentError(absl::StrCat(
          "a shape is given for '", name, "', which is not an input of the model (",
          absl::StrJoin(names, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return absl::StrCat("ONNX node ", index, " '", node.name(), "' (", node.op_type(), ")");
}

namespace {

// Producers maps each node output to its node, refusing a name made twice.
absl::StatusOr<absl::flat_hash_map<std::string, int>> Producers(
    const onnx::GraphProto& graph, const OnnxValues& values) {
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (values.contains(out) || !producer.emplace(out, i).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            NodeLabel(graph.node(i), i), " produces '", out, "', which is already defined"));
      }
    }
  }
  return producer;
}

}  // namespace

absl::StatusOr<std::vector<int>> TopologicalOrder(const onnx::GraphProto& graph,
                                                  const OnnxValues& values) {
  DAGRAD_ASSIGN_OR_RETURN(auto producer, Producers(graph, values));
  const int n = graph.node_size();
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : graph.node(i).input()) {
      if (in.empty() || values.contains(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            NodeLabel(graph.node(i), i), " reads '", in,
            "', which no node, graph input or initializer produces"));
      }
      consumers[it->second].push_back(i);
      ++waiting[i];
    }
  }
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) if (waiting[i] == 0) ready.push_back(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (int c : consumers[i]) if (--waiting[c] == 0) ready.push_back(c);
  }
  if (static_cast<int>(order.size()) == n) return order;
  std::vector<std::string> stuck;
  for (int i = 0; i < n && stuck.size() < 5; ++i) {
    if (waiting[i] > 0) stuck.push_back(NodeLabel(graph.node(i), i));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the ONNX graph has a cycle through ", n - order.size(), " nodes: ",
      absl::StrJoin(stuck, ", ")));
}

}  // namespace dagrad
