// engine/onnx/import_context.cc

#include "engine/onnx/import_context.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"

namespace dagrad {

Value OnnxNodeContext::input(int i) {
  if (!has_input(i)) {
    return g_.Error(Error(absl::StrCat("input ", i, " is missing")));
  }
  OnnxOperand& operand = *inputs_[i];
  if (operand.value.is_null() && operand.known) {
    operand.value = g_.Constant(*operand.known, "onnx_constant");
  }
  return operand.value;
}

const Tensor* OnnxNodeContext::known(int i) const {
  if (!has_input(i) || !inputs_[i]->known) return nullptr;
  return &*inputs_[i]->known;
}

absl::StatusOr<Tensor> OnnxNodeContext::KnownInput(int i,
                                                   absl::string_view what) const {
  if (!has_input(i)) return Error(absl::StrCat("the ", what, " input is missing"));
  if (const Tensor* t = known(i)) return *t;
  return Unsupported(absl::StrCat("the ", what,
                                  " must be known when importing (a constant, an "
                                  "initializer or shape arithmetic), not computed "
                                  "at run time"));
}

absl::StatusOr<std::vector<int64_t>> OnnxNodeContext::KnownInts(
    int i, absl::string_view what) const {
  DAGRAD_ASSIGN_OR_RETURN(Tensor t, KnownInput(i, what));
  if (t.dtype() == DType::kInt64) return t.ToVector<int64_t>();
  if (t.dtype() == DType::kInt32) {
    std::vector<int32_t> v = t.ToVector<int32_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  }
  return Error(absl::StrCat("the ", what, " must be int32 or int64, not ",
                            t.TypeString()));
}

const onnx::AttributeProto* OnnxNodeContext::attr(absl::string_view name) const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t OnnxNodeContext::Int(absl::string_view name, int64_t fallback) const {
  const onnx::AttributeProto* a = attr(name);
  return a ? a->i() : fallback;
}

float OnnxNodeContext::Float(absl::string_view name, float fallback) const {
  const onnx::AttributeProto* a = attr(name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> OnnxNodeContext::Ints(absl::string_view name) const {
  const onnx::AttributeProto* a = attr(name);
  if (a == nullptr) return {};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

absl::Status OnnxNodeContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(message);
}

absl::Status OnnxNodeContext::Unsupported(absl::string_view message) const {
  return absl::UnimplementedError(message);
}

absl::StatusOr<int64_t> OnnxNodeContext::Axis(int64_t axis, int rank) const {
  if (axis < -rank || axis >= rank) {
    return Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<Value>> OnnxNodeContext::Outputs(
    std::vector<Value> values) const {
  for (const Value& v : values) {
    if (!v.ok()) return v.status();
  }
  return values;
}

absl::Status RequireFloatInput(const OnnxNodeContext& c, const Value& x) {
  if (!x.ok()) return x.status();
  if (IsFloating(x.dtype())) return absl::OkStatus();
  return c.Unsupported(absl::StrCat("dagrad's ", c.node().op_type(),
                                    " takes float and double, not ",
                                    DTypeName(x.dtype())));
}

Value ScalarConstant(Graph& g, DType dtype, double value) {
  absl::StatusOr<Tensor> t = Tensor::Zeros(dtype, Shape());
  if (!t.ok()) return g.Error(t.status());
  switch (dtype) {
    case DType::kFloat32: *t->data<float>() = static_cast<float>(value); break;
    case DType::kFloat64: *t->data<double>() = value; break;
    case DType::kInt32: *t->data<int32_t>() = static_cast<int32_t>(value); break;
    case DType::kInt64: *t->data<int64_t>() = static_cast<int64_t>(value); break;
    case DType::kBool: *t->data<bool>() = value != 0; break;
  }
  return g.Constant(*t, "onnx_scalar");
}

absl::StatusOr<std::vector<double>> TensorAsDoubles(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat32: { auto v = t.ToVector<float>(); return std::vector<double>(v.begin(), v.end()); }
    case DType::kFloat64: return t.ToVector<double>();
    case DType::kInt32: { auto v = t.ToVector<int32_t>(); return std::vector<double>(v.begin(), v.end()); }
    case DType::kInt64: { auto v = t.ToVector<int64_t>(); return std::vector<double>(v.begin(), v.end()); }
    case DType::kBool: break;
  }
  return absl::InvalidArgumentError(absl::StrCat("expected a number, got ", t.TypeString()));
}

bool IsDefaultDomain(absl::string_view domain) {
  return domain.empty() || domain == "ai.onnx";
}

const OnnxOpEntry* FindOnnxOp(absl::string_view op_type) {
  static const auto* table = [] {
    auto* t = new absl::flat_hash_map<std::string, OnnxOpEntry>();
    for (auto family : {OnnxMathOps, OnnxShapeOps, OnnxNnOps, OnnxConstantOps}) {
      for (const OnnxOpEntry& e : family()) t->emplace(e.op_type, e);
    }
    return t;
  }();
  auto it = table->find(op_type);
  return it == table->end() ? nullptr : &it->second;
}

}  // namespace dagrad
