// ops/onnx/import_context.cc

#include "ops/onnx/import_context.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/bfloat16.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"
#include "ops/fill.h"

namespace dagrad {

Value OnnxNodeContext::input(int i) {
  if (!has_input(i)) {
    return g_.Error(Error(absl::StrCat("input ", i, " is missing")));
  }
  OnnxOperand& operand = *inputs_[i];
  if (operand.value.is_null() && operand.known) {
    operand.value = g_.Constant(*operand.known, "onnx_constant");
  } else if (operand.value.is_null() && operand.trainable) {
    operand.value = InitializerParameter(g_, *operand.trainable);
  }
  return operand.value;
}

const Tensor* OnnxNodeContext::known(int i) const {
  if (!has_input(i)) return nullptr;
  const OnnxOperand& operand = *inputs_[i];
  if (operand.known) return &*operand.known;
  return operand.trainable ? &operand.trainable->value : nullptr;
}

absl::StatusOr<Tensor> OnnxNodeContext::KnownInput(int i,
                                                   absl::string_view what) const {
  if (!has_input(i)) return Error(absl::StrCat("the ", what, " input is missing"));
  if (const Tensor* t = known(i)) return *t;
  return Unsupported(absl::StrCat(
      "the ", what, " '", node_.input(i),
      "' must be known when importing (a Constant, an initializer, or shape arithmetic on "
      "the given input shapes); here it is computed at run time. Export with "
      "torch.onnx.export(..., do_constant_folding=True) so that it is a constant, or give "
      "the graph input it comes from a value at import (OnnxInputValues, as dagrad eval "
      "does with the values it is fed)"));
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

const onnx::AttributeProto* OnnxNodeContext::Typed(
    absl::string_view name, onnx::AttributeProto::AttributeType type) const {
  const onnx::AttributeProto* a = attr(name);
  if (a == nullptr || a->type() == type) return a;
  if (attr_error_.ok()) {
    attr_error_ = absl::InvalidArgumentError(absl::StrCat(
        "attribute '", name, "' is ", onnx::AttributeProto::AttributeType_Name(a->type()),
        ", not ", onnx::AttributeProto::AttributeType_Name(type)));
  }
  return nullptr;
}

int64_t OnnxNodeContext::Int(absl::string_view name, int64_t fallback) const {
  const onnx::AttributeProto* a = Typed(name, onnx::AttributeProto::INT);
  return a ? a->i() : fallback;
}

float OnnxNodeContext::Float(absl::string_view name, float fallback) const {
  const onnx::AttributeProto* a = Typed(name, onnx::AttributeProto::FLOAT);
  return a ? a->f() : fallback;
}

std::vector<int64_t> OnnxNodeContext::Ints(absl::string_view name) const {
  const onnx::AttributeProto* a = Typed(name, onnx::AttributeProto::INTS);
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

Value ScalarConstant(Graph& g, DType dtype, int64_t value) {
  if (absl::Status fits = CheckIntegerFits(value, dtype, "the constant"); !fits.ok()) {
    return g.Error(fits);
  }
  absl::StatusOr<Tensor> t = Tensor::Zeros(dtype, Shape());
  if (!t.ok()) return g.Error(t.status());
  switch (dtype) {
    case DType::kFloat32: *t->data<float>() = static_cast<float>(value); break;
    case DType::kFloat64: *t->data<double>() = static_cast<double>(value); break;
    case DType::kInt64: *t->data<int64_t>() = value; break;
    case DType::kInt32: *t->data<int32_t>() = static_cast<int32_t>(value); break;
    case DType::kBool: *t->data<bool>() = value != 0; break;
    case DType::kBFloat16: *t->data<BFloat16>() = ConvertElement<BFloat16>(value); break;
    case DType::kFloat16: *t->data<Float16>() = ConvertElement<Float16>(value); break;
  }
  return g.Constant(*t, "onnx_scalar");
}

// CheckValueFits refuses what the dtype cannot hold (0.5 or 2^63 as int64,
// 2 as bool), so that each conversion below is defined; an integer dtype
// takes the value through the int64 overload.
Value ScalarConstant(Graph& g, DType dtype, double value) {
  if (absl::Status fits = CheckValueFits(value, dtype, "the constant"); !fits.ok()) {
    return g.Error(fits);
  }
  switch (dtype) {
    case DType::kFloat32: return g.Constant(Tensor::Scalar(ConvertElement<float>(value)), "onnx_scalar");
    case DType::kFloat64: return g.Constant(Tensor::Scalar(value), "onnx_scalar");
    case DType::kBFloat16:
      return g.Constant(Tensor::Scalar(ConvertElement<BFloat16>(value)), "onnx_scalar");
    case DType::kFloat16:
      return g.Constant(Tensor::Scalar(ConvertElement<Float16>(value)), "onnx_scalar");
    case DType::kInt32:
    case DType::kInt64:
    case DType::kBool: break;
  }
  return ScalarConstant(g, dtype, static_cast<int64_t>(value));
}

absl::StatusOr<Value> IndexRange(Graph& g, int64_t start, int64_t limit, int64_t step) {
  Value y = Arange(g, start, limit, step, DType::kInt64);
  if (!y.ok()) return y.status();
  return y;
}

std::optional<std::pair<std::string, std::string>> CleanParameterPath(const std::string& name) {
  std::vector<std::string> parts = absl::StrSplit(name, '.');
  for (const std::string& p : parts) {
    if (p.empty() || p.find('/') != std::string::npos) return std::nullopt;
  }
  std::string last = parts.back();
  parts.pop_back();
  return std::make_pair(absl::StrJoin(parts, "/"), last);
}

std::string NameApart(absl::string_view name, absl::flat_hash_set<std::string>& taken) {
  std::string flat = absl::StrReplaceAll(name, {{"/", "_"}, {".", "_"}});
  if (flat.empty()) flat = "onnx_value";
  std::string apart = flat;
  for (int i = 2; taken.contains(apart); ++i) apart = absl::StrCat(flat, "_", i);
  taken.insert(apart);
  return apart;
}

Value InitializerParameter(Graph& g, const OnnxInitializer& init) {
  Graph::ScopePathGuard guard(g, init.scope);
  Value p = g.Parameter(init.leaf, init.value.shape(), Initializer::Zeros(), init.value.dtype());
  if (p.ok()) return p;
  return g.Error(absl::Status(p.status().code(), absl::StrCat("initializer '", init.name,
                                                              "': ", p.status().message())));
}

absl::StatusOr<std::vector<double>> TensorAsDoubles(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat32: { auto v = t.ToVector<float>(); return std::vector<double>(v.begin(), v.end()); }
    case DType::kFloat64: return t.ToVector<double>();
    case DType::kInt32: { auto v = t.ToVector<int32_t>(); return std::vector<double>(v.begin(), v.end()); }
    case DType::kInt64: { auto v = t.ToVector<int64_t>(); return std::vector<double>(v.begin(), v.end()); }
    case DType::kBFloat16: {
      std::vector<double> out;
      for (BFloat16 x : t.ToVector<BFloat16>()) out.push_back(BFloat16ToFloat(x));
      return out;
    }
    case DType::kFloat16: {
      std::vector<double> out;
      for (Float16 x : t.ToVector<Float16>()) out.push_back(Float16ToFloat(x));
      return out;
    }
    case DType::kBool:
      break;
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
