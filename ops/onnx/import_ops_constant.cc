// ops/onnx/import_ops_constant.cc
//
// The ONNX importer's ops that make tensors from attributes: Constant,
// ConstantOfShape and Range. Their results are known at import, so what
// consumes them folds too.

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/onnx/import_context.h"
#include "ops/onnx/onnx_tensor.h"
#include "ops/shape_ops.h"

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

// ConstantOfShape broadcasts its one-element value, as the file's tensor
// holds it: no conversion, so an int64 2^53 + 1 or INT64_MAX stays exact.
Outputs ImportConstantOfShape(OnnxNodeContext& c) {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.KnownInts(0, "shape"));
  Tensor value = Tensor::Scalar<float>(0.0f);
  if (const onnx::AttributeProto* a = c.attr("value")) {
    DAGRAD_ASSIGN_OR_RETURN(value, TensorFromOnnx(a->t(), ""));
  }
  if (value.num_elements() != 1) return c.Error("value must hold one element");
  Value scalar = Reshape(c.graph().Constant(value, "onnx_fill_value"), {});
  return c.Outputs({BroadcastTo(scalar, Shape(dims))});
}

// Range reads its bounds when importing: an Arange of the bounds' dtype,
// whose integer bounds stay integers (exact to the ends of int64) and
// whose float ones are doubles.
Outputs ImportRange(OnnxNodeContext& c) {
  Tensor args[3];
  const char* names[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    DAGRAD_ASSIGN_OR_RETURN(args[i], c.KnownInput(i, names[i]));
    if (args[i].num_elements() != 1) return c.Error(absl::StrCat(names[i], " must be a scalar"));
    if (args[i].dtype() != args[0].dtype()) {
      return c.Error(absl::StrCat(names[i], " is ", args[i].TypeString(), ", start ",
                                  args[0].TypeString()));
    }
  }
  const DType dtype = args[0].dtype();
  std::vector<FillValue> bounds;
  for (int i = 0; i < 3; ++i) {
    if (IsInteger(dtype)) {
      DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> v, c.KnownInts(i, names[i]));
      bounds.push_back(v[0]);
    } else {
      DAGRAD_ASSIGN_OR_RETURN(std::vector<double> v, TensorAsDoubles(args[i]));
      bounds.push_back(v[0]);
    }
  }
  return c.Outputs({Arange(c.graph(), bounds[0], bounds[1], bounds[2], dtype)});
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
