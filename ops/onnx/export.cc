#include "ops/onnx/export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <exception>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/op.h"
#include "engine/status_macros.h"
#include "ops/onnx/export_builder.h"
#include "ops/onnx/export_ops.h"

namespace dagrad {
namespace {

using onnx_export::OnnxBuilder;
using onnx_export::OnnxSymbol;

constexpr int64_t kOpset = 17;

// AddSymbol appends the symbol `d` names to `symbols` unless it is there;
// errors for an input the graph does not read, a bad axis, a size of 1, or
// a size or name another symbol has with another name or size.
absl::Status AddSymbol(const Graph& g, const std::vector<NodeId>& nodes, const OnnxDynamicDim& d,
                       std::vector<OnnxSymbol>& symbols) {
  const Node* input = nullptr;
  for (NodeId id : nodes) {
    if (g.node(id).kind == NodeKind::kInput && g.node(id).name == d.input) input = &g.node(id);
  }
  const std::string what = absl::StrCat("ONNX export: dynamic dim '", d.name, "' (input '",
                                        d.input, "' axis ", d.axis, ")");
  if (input == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the exported graph has no such input"));
  }
  if (d.axis < 0 || d.axis >= input->shape.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the input's shape is ", input->shape.ToString()));
  }
  const int64_t size = input->shape[d.axis];
  for (const OnnxSymbol& s : symbols) {
    if (s.name == d.name && s.size == size) return absl::OkStatus();
    if (s.name == d.name || s.size == size) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " has size ", size, ", and dynamic dim '", s.name, "' has size ", s.size,
          ": build the graph at a distinct size for each dynamic dim"));
    }
  }
  if (size == 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " has size 1, which cannot be told from a broadcast axis: build the graph at "
              "a larger size"));
  }
  symbols.push_back({d.name, size, input->name, d.axis});
  return absl::OkStatus();
}

// Symbols returns the options' dynamic dims; a variable with a dim of a
// symbol's size is an error (its size would be taken for the symbol).
absl::StatusOr<std::vector<OnnxSymbol>> Symbols(const Graph& g, const std::vector<NodeId>& nodes,
                                                const OnnxExportOptions& options) {
  std::vector<OnnxSymbol> symbols;
  for (const OnnxDynamicDim& d : options.dynamic_dims) {
    DAGRAD_RETURN_IF_ERROR(AddSymbol(g, nodes, d, symbols));
  }
  for (NodeId id : nodes) {
    const Node& n = g.node(id);
    if (!n.is_variable()) continue;
    for (const OnnxSymbol& s : symbols) {
      for (int64_t dim : n.shape.dims()) {
        if (dim != s.size) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            "ONNX export: variable ", CheckpointName(n), " ", n.shape.ToString(),
            " has a dim of dynamic dim '", s.name, "''s size ", s.size,
            ": build the graph at another size"));
      }
    }
  }
  return symbols;
}

// SetValueInfo describes a graph input or output; sizes of symbols are
// dim_params.
void SetValueInfo(onnx::ValueInfoProto* info, const std::string& name, const Node& node,
                  const OnnxBuilder& b) {
  info->set_name(name);
  onnx::TypeProto::Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(OnnxTypeOf(node.dtype));
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (int64_t d : node.shape.dims()) {
    std::optional<int> s = b.SymbolFor(d);
    if (s) {
      shape->add_dim()->set_dim_param(b.symbols()[*s].name);
    } else {
      shape->add_dim()->set_dim_value(d);
    }
  }
}

// AddLeaf adds an input as a graph input, a variable (from the options'
// values) or a constant as an initializer.
absl::Status AddLeaf(OnnxBuilder& b, onnx::GraphProto* graph, const Node& node,
                     const OnnxExportOptions& options) {
  if (node.kind == NodeKind::kInput) {
    b.SetName(node.id, node.name);
    SetValueInfo(graph->add_input(), node.name, node, b);
    return absl::OkStatus();
  }
  if (node.kind == NodeKind::kConstant) {
    b.SetName(node.id, b.Initializer(node.value, node.path()));
    return absl::OkStatus();
  }
  const std::string name = CheckpointName(node);
  const Tensor* value = options.variables ? options.variables->Find(name) : nullptr;
  if (value == nullptr || value->dtype() != node.dtype || value->shape() != node.shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: no value for variable ", name, " (", node.TypeString(),
        ") in the options' variables",
        value ? absl::StrCat(", which hold ", value->TypeString()) : ""));
  }
  b.SetName(node.id, b.Initializer(*value, name));
  return absl::OkStatus();
}

absl::Status AddNodes(OnnxBuilder& b, onnx::GraphProto* graph, const std::vector<NodeId>& ids,
                      const OnnxExportOptions& options) {
  for (NodeId id : ids) {
    const Node& node = b.graph().node(id);
    if (node.kind != NodeKind::kOp) {
      DAGRAD_RETURN_IF_ERROR(AddLeaf(b, graph, node, options));
      continue;
    }
    onnx_export::OnnxExporter exporter = onnx_export::FindOnnxExporter(*node.op);
    if (exporter == nullptr) {
      const OnnxForm& form = node.op->onnx;
      return absl::UnimplementedError(absl::StrCat(
          "ONNX export: op '", node.op->name, "' (node ", node.path(), ") has no ONNX form",
          form.kind == OnnxKind::kNone ? absl::StrCat(" (", form.text, ")") : "",
          "; export the graph of the model's outputs without it"));
    }
    b.SetCurrent(node);
    DAGRAD_RETURN_IF_ERROR(exporter(b, node));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputs(const Graph& graph, absl::Span<const Value> outputs,
                          const OnnxExportOptions& options) {
  if (outputs.empty()) return absl::InvalidArgumentError("ONNX export: no outputs");
  for (const Value& v : outputs) {
    if (!v.ok() || v.graph() != &graph) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ONNX export: an output is not a node of the graph: ", v.status().ToString()));
    }
  }
  if (!options.output_names.empty() && options.output_names.size() != outputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("ONNX export: ", options.output_names.size(),
                                                   " output names for ", outputs.size(),
                                                   " outputs"));
  }
  absl::flat_hash_map<std::string, size_t> named;  // an ONNX graph's outputs differ by name
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name =
        options.output_names.empty() ? outputs[i].node().path() : options.output_names[i];
    if (auto [it, fresh] = named.emplace(name, i); !fresh) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ONNX export: outputs ", it->second, " and ", i, " are both named '", name, "'",
          options.output_names.empty() ? " (the same value: name them with output_names)" : ""));
    }
  }
  return absl::OkStatus();
}

// CheckInputNames refuses two inputs of one name in different scopes: an
// ONNX graph input has its name alone.
absl::Status CheckInputNames(const Graph& graph, const std::vector<NodeId>& ids) {
  absl::flat_hash_map<std::string, std::string> paths;
  for (NodeId id : ids) {
    const Node& node = graph.node(id);
    if (node.kind != NodeKind::kInput) continue;
    if (auto [it, fresh] = paths.emplace(node.name, node.path()); !fresh) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ONNX export: inputs '", it->second, "' and '", node.path(), "' are both named '",
          node.name, "', and an ONNX graph input has its name alone: rename one"));
    }
  }
  return absl::OkStatus();
}

// KeepInferredSizes leaves an output's static size declared only where ONNX's
// shape inference (`inferred`, run without the outputs' shapes) finds the
// same size; a size computed from a dynamic one (T + 2 keys) becomes unknown.
void KeepInferredSizes(const onnx::ModelProto& inferred, onnx::ModelProto& model) {
  for (int i = 0; i < model.graph().output_size(); ++i) {
    onnx::TensorShapeProto* shape =
        model.mutable_graph()->mutable_output(i)->mutable_type()->mutable_tensor_type()
            ->mutable_shape();
    const onnx::TensorShapeProto& found = inferred.graph().output(i).type().tensor_type().shape();
    for (int d = 0; d < shape->dim_size(); ++d) {
      onnx::TensorShapeProto::Dimension* dim = shape->mutable_dim(d);
      const bool same = d < found.dim_size() && found.dim(d).has_dim_value() &&
                        found.dim(d).dim_value() == dim->dim_value();
      if (dim->has_dim_value() && !same) dim->clear_dim_value();
    }
  }
}

// CheckModel runs ONNX's checker and strict shape inference (with data
// propagation, for the shapes computed from Shape) on the model, and
// declares the outputs' static sizes that inference confirms.
absl::Status CheckModel(onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
    onnx::ModelProto inferred = model;
    for (onnx::ValueInfoProto& out : *inferred.mutable_graph()->mutable_output()) {
      out.mutable_type()->mutable_tensor_type()->clear_shape();
    }
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, true));
    KeepInferredSizes(inferred, model);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("ONNX export: the model fails ONNX's checker: ",
                                            e.what()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> SerializeOnnx(const Graph& graph, absl::Span<const Value> outputs,
                                          const OnnxExportOptions& options) {
  DAGRAD_RETURN_IF_ERROR(CheckOutputs(graph, outputs, options));
  const std::vector<NodeId> ids = AncestorsOf(graph, outputs);
  DAGRAD_RETURN_IF_ERROR(CheckInputNames(graph, ids));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<OnnxSymbol> symbols, Symbols(graph, ids, options));
  onnx::ModelProto model;
  model.set_ir_version(onnx::IR_VERSION);
  model.set_producer_name(options.producer);
  model.add_opset_import()->set_version(kOpset);
  onnx::GraphProto* proto = model.mutable_graph();
  proto->set_name("dagrad");
  OnnxBuilder b(graph, proto, std::move(symbols));
  DAGRAD_RETURN_IF_ERROR(AddNodes(b, proto, ids, options));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Node& node = outputs[i].node();
    const std::string name =
        options.output_names.empty() ? node.path() : options.output_names[i];
    if (name != b.Out(node)) b.Add("Identity", {b.Out(node)}, name);
    SetValueInfo(proto->add_output(), name, node, b);
  }
  DAGRAD_RETURN_IF_ERROR(CheckModel(model));
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return absl::InternalError("ONNX export: the model does not serialize (over 2 GiB?)");
  }
  return bytes;
}

absl::Status ExportOnnx(const Graph& graph, absl::Span<const Value> outputs,
                        const std::string& path, const OnnxExportOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, SerializeOnnx(graph, outputs, options));
  return WriteFileAtomically(path, bytes);
}

}  // namespace dagrad
