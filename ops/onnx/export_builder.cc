#include "ops/onnx/export_builder.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"

namespace dagrad::onnx_export {

OnnxBuilder::OnnxBuilder(const Graph& graph, onnx::GraphProto* proto,
                         std::vector<OnnxSymbol> symbols)
    : graph_(graph), proto_(proto), symbols_(std::move(symbols)) {}

std::string OnnxBuilder::Out(const Node& node) {
  auto it = names_.find(node.id);
  if (it != names_.end()) return it->second;
  return names_[node.id] = node.path();
}

std::string OnnxBuilder::In(const Node& node, int i) {
  if (!Has(node, i)) return "";
  return Out(graph_.node(node.inputs[i]));
}

std::string OnnxBuilder::Fresh(absl::string_view base) {
  const std::string stem = current_.empty() ? std::string(base) : absl::StrCat(current_, "/", base);
  const int n = fresh_counts_[stem]++;
  return absl::StrCat(stem, "_", n);
}

onnx::NodeProto* OnnxBuilder::AddNode(absl::string_view op_type,
                                      std::vector<std::string> inputs, std::string output) {
  onnx::NodeProto* node = proto_->add_node();
  node->set_op_type(std::string(op_type));
  if (output.empty()) output = Fresh(absl::AsciiStrToLower(op_type));
  node->set_name(output);
  // Trailing absent optional inputs are left out; inner ones stay "".
  while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
  for (std::string& in : inputs) node->add_input(std::move(in));
  node->add_output(std::move(output));
  return node;
}

std::string OnnxBuilder::Add(absl::string_view op_type, std::vector<std::string> inputs,
                             std::string output) {
  return AddNode(op_type, std::move(inputs), std::move(output))->output(0);
}

std::string OnnxBuilder::Cast(std::string x, DType to, std::string output) {
  onnx::NodeProto* cast = AddNode("Cast", {std::move(x)}, std::move(output));
  SetAttr(cast, "to", int64_t{OnnxTypeOf(to)});
  return cast->output(0);
}

std::string OnnxBuilder::Initializer(const Tensor& t, std::string name) {
  *proto_->add_initializer() = TensorToOnnx(t, name);
  return name;
}

absl::StatusOr<Tensor> FilledTensor(FillValue value, DType dtype, const Shape& shape) {
  int64_t integer = 0;  // the element of an integer or bool dtype
  if (!IsFloating(dtype)) {
    DAGRAD_ASSIGN_OR_RETURN(integer, value.ToInteger(dtype, "value"));
  }
  DAGRAD_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(dtype, shape));
  for (int64_t i = 0, count = t.num_elements(); i < count; ++i) {
    switch (dtype) {
      case DType::kFloat32: t.data<float>()[i] = static_cast<float>(value.ToDouble()); break;
      case DType::kFloat64: t.data<double>()[i] = value.ToDouble(); break;
      case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(integer); break;
      case DType::kInt64: t.data<int64_t>()[i] = integer; break;
      case DType::kBool: t.data<bool>()[i] = integer != 0; break;
      case DType::kBFloat16: t.data<BFloat16>()[i] = DoubleToBFloat16(value.ToDouble()); break;
      case DType::kFloat16: t.data<Float16>()[i] = DoubleToFloat16(value.ToDouble()); break;
    }
  }
  return t;
}

std::string OnnxBuilder::Scalar(FillValue value, DType dtype) {
  absl::StatusOr<Tensor> t = FilledTensor(value, dtype, Shape());
  if (!t.ok()) return "";  // the caller's dtype holds its value: unreachable
  return Initializer(*t, Fresh("const"));
}

std::string OnnxBuilder::Ints(const std::vector<int64_t>& values) {
  absl::StatusOr<Tensor> t =
      Tensor::FromVector<int64_t>(Shape({static_cast<int64_t>(values.size())}), values);
  if (!t.ok()) return "";  // sizes match: unreachable
  return Initializer(*t, Fresh("ints"));
}

std::optional<int> OnnxBuilder::SymbolFor(int64_t size) const {
  for (size_t s = 0; s < symbols_.size(); ++s) {
    if (symbols_[s].size == size) return static_cast<int>(s);
  }
  return std::nullopt;
}

std::string OnnxBuilder::SymbolSize(int s) {
  auto it = symbol_sizes_.find(s);
  if (it != symbol_sizes_.end()) return it->second;
  const OnnxSymbol& sym = symbols_[s];
  const std::string saved = std::exchange(current_, "");
  onnx::NodeProto* shape = AddNode("Shape", {sym.input}, absl::StrCat("size/", sym.name));
  SetAttr(shape, "start", int64_t{sym.axis});
  SetAttr(shape, "end", int64_t{sym.axis + 1});
  current_ = saved;
  return symbol_sizes_[s] = shape->output(0);
}

std::string OnnxBuilder::ShapeOf(const Dims& dims) {
  std::vector<std::string> parts;
  std::vector<int64_t> run;  // static sizes not yet added to `parts`
  bool dynamic = false;
  for (int64_t d : dims) {
    std::optional<int> s = SymbolFor(d);
    if (!s) {
      run.push_back(d);
      continue;
    }
    dynamic = true;
    if (!run.empty()) parts.push_back(Ints(std::exchange(run, {})));
    parts.push_back(SymbolSize(*s));
  }
  if (!dynamic) return Ints(run);
  if (!run.empty()) parts.push_back(Ints(run));
  if (parts.size() == 1) return parts[0];
  onnx::NodeProto* concat = AddNode("Concat", parts, Fresh("shape"));
  SetAttr(concat, "axis", int64_t{0});
  return concat->output(0);
}

void SetAttr(onnx::NodeProto* node, absl::string_view name, int64_t value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(std::string(name));
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void SetAttr(onnx::NodeProto* node, absl::string_view name, float value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(std::string(name));
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

void SetAttr(onnx::NodeProto* node, absl::string_view name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(std::string(name));
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void SetAttr(onnx::NodeProto* node, absl::string_view name, const onnx::TensorProto& value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(std::string(name));
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = value;
}

}  // namespace dagrad::onnx_export
