// engine/onnx/import_ops_constant.cc
//
// The ONNX importer's ops that make tensors from attributes: Constant,
// ConstantOfShape and Range. Their results are known at import, so what
// consumes them folds too.

#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/onnx/import_context.h"
#include "engine/onnx/onnx_tensor.h"
#include "engine/status_macros.h"
#include "ops/fill.h"

namespace dagrad {
namespace {

using Outputs = absl::StatusOr<std::vector<Value>>;

absl::StatusOr<Tensor> ConstantValue(OnnxNodeContext& c) {
  using A = onnx::AttributeProto;
  if (c.node().attribute_size() != 1) {
    return c.Error("a Constant needs exactly one value attribute");
  }
  const A& a = c.node().attribute(0);
  if (a.name() == "value") return TensorFromOnnx(a.t(), "");
  if (a.name() == "value_float") return Tensor::Scalar<float>(a.f());
  if (a.name() == "value_int") return Tensor::Scalar<int64_t>(a.i());
  if (a.name() == "value_floats") {
    return Tensor::FromVector<float>(Shape({a.floats_size()}),
                                     std::vector<float>(a.floats().begin(), a.floats().end()));
  }
  if (a.name() == "value_ints") {
    return Tensor::FromVector<int64_t>(Shape({a.ints_size()}),
                                       std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  }
  return c.Unsupported(absl::StrCat("a Constant given as '", a.name(), "'"));
}

Outputs ImportConstant(OnnxNodeContext& c) {
  DAGRAD_ASSIGN_OR_RETURN(Tensor value, ConstantValue(c));
  return c.Outputs({c.graph().Constant(value, "onnx_constant")});
}

Outputs ImportConstantOfShape(OnnxNodeContext& c) {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.KnownInts(0, "shape"));
  Tensor value = Tensor::Scalar<float>(0.0f);
  if (const onnx::AttributeProto* a = c.attr("value")) {
    DAGRAD_ASSIGN_OR_RETURN(value, TensorFromOnnx(a->t(), ""));
  }
  if (value.num_elements() != 1) return c.Error("value must hold one element");
  DAGRAD_ASSIGN_OR_RETURN(std::vector<double> v, TensorAsDoubles(
      value.dtype() == DType::kBool ? Tensor::Scalar<int64_t>(*value.data<bool>()) : value));
  return c.Outputs({Fill(c.graph(), Shape(dims), v[0], value.dtype())});
}

Outputs ImportRange(OnnxNodeContext& c) {
  double args[3];
  const char* names[3] = {"start", "limit", "delta"};
  DType dtype = DType::kInt64;
  for (int i = 0; i < 3; ++i) {
    DAGRAD_ASSIGN_OR_RETURN(Tensor t, c.KnownInput(i, names[i]));
    DAGRAD_ASSIGN_OR_RETURN(std::vector<double> v, TensorAsDoubles(t));
    if (v.size() != 1) return c.Error(absl::StrCat(names[i], " must be a scalar"));
    args[i] = v[0];
    dtype = t.dtype();
  }
  return c.Outputs({Arange(c.graph(), args[0], args[1], args[2], dtype)});
}

}  // namespace

std::vector<OnnxOpEntry> OnnxConstantOps() {
  return {
      {"Constant", ImportConstant},
      {"ConstantOfShape", ImportConstantOfShape},
      {"Range", ImportRange},
  };
}

}  // namespace dagrad
