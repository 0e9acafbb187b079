// ONNX import against ONNX's semantics, op by op, on models built here with
// the protobuf API, one section per class of fault an audit found. The
// expected values are worked by hand from ONNX's definitions, as numpy and
// ONNX Runtime compute them.

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "engine/autodiff/autodiff.h"
#include "engine/onnx/import.h"
#include "engine/onnx/import_gelu.h"
#include "engine/onnx/onnx_tensor.h"
#include "engine/op.h"
#include "engine/status_macros.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// OnnxTestModel is an ONNX model built op by op; Run imports it, loads its
// parameters, feeds each input the value it was declared with, and returns
// the outputs.
class OnnxTestModel {
 public:
  explicit OnnxTestModel(int64_t opset = 17) { proto_.add_opset_import()->set_version(opset); }

  void Input(const std::string& name, const Tensor& value) {
    onnx::ValueInfoProto* in = g()->add_input();
    in->set_name(name);
    onnx::TypeProto::Tensor* type = in->mutable_type()->mutable_tensor_type();
    type->set_elem_type(OnnxTypeOf(value.dtype()));
    type->mutable_shape();
    for (int64_t d : value.shape().dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
    feeds_[name] = value;
  }
  void Initializer(const std::string& name, const Tensor& value) {
    *g()->add_initializer() = TensorToOnnx(value, name);
  }
  void Constant(const std::string& name, const Tensor& value) {
    TensorAttr(Node("Constant", {}, {name}), "value", value);
  }
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    onnx::NodeProto* n = g()->add_node();
    n->set_op_type(op);
    for (const std::string& in : inputs) n->add_input(in);
    for (const std::string& out : outputs) n->add_output(out);
    return *n;
  }
  void Output(const std::string& name) { g()->add_output()->set_name(name); }
  const onnx::GraphProto& graph() const { return proto_.graph(); }

  // Import fixes every input to its value when `fixed` (so what reads only
  // inputs folds at import), else makes them graph inputs.
  absl::StatusOr<OnnxModel> Import(bool fixed = false) const {
    OnnxInputValues values(feeds_.begin(), feeds_.end());
    return ImportOnnxFromBytes(proto_.SerializeAsString(), "", {},
                               fixed ? values : OnnxInputValues());
  }
  absl::StatusOr<std::vector<Tensor>> Run(bool fixed = false) const {
    DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, Import(fixed));
    Executor exec(*m.graph);
    DAGRAD_RETURN_IF_ERROR(m.LoadParameters(exec));
    std::vector<Value> fetches;
    for (const OnnxValue& out : m.outputs) fetches.push_back(out.value);
    DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
    Feeds feeds;
    for (const OnnxValue& in : m.inputs) feeds.push_back({in.value, feeds_.at(in.name)});
    return exec.Run(*plan, feeds);
  }

  static void IntAttr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void TensorAttr(onnx::NodeProto& n, const std::string& name, const Tensor& v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = TensorToOnnx(v, name);
  }

 private:
  onnx::GraphProto* g() { return proto_.mutable_graph(); }
  onnx::ModelProto proto_;
  std::map<std::string, Tensor> feeds_;
};

// ---- comparisons -------------------------------------------------------------
// NaN compares false, as IEEE, numpy and ONNX Runtime have it.

// a <= b and a >= b for a = [NaN, 1, 2, NaN, 0], b = [1, 1, 1, NaN, -0]:
// numpy gives [F, T, F, F, T] and [F, T, T, F, T]. Run at run time and
// folded at import (inputs fixed): both paths agree.
TEST(OnnxImportAudit, OrEqualComparisonsAreFalseForNaN) {
  for (bool fixed : {false, true}) {
    OnnxTestModel m;
    m.Input("a", T<float>({5}, {kNaN, 1, 2, kNaN, 0.0f}));
    m.Input("b", T<float>({5}, {1, 1, 1, kNaN, -0.0f}));
    m.Node("LessOrEqual", {"a", "b"}, {"le"});
    m.Node("GreaterOrEqual", {"a", "b"}, {"ge"});
    m.Output("le");
    m.Output("ge");
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run(fixed));
    EXPECT_THAT(y[0].ToVector<bool>(), ElementsAre(false, true, false, false, true)) << fixed;
    EXPECT_THAT(y[1].ToVector<bool>(), ElementsAre(false, true, true, false, true)) << fixed;
  }
}

TEST(OnnxImportAudit, OrEqualComparisonsOfIntegersBroadcast) {
  OnnxTestModel m;
  m.Input("a", T<int64_t>({3, 1}, {1, 2, 3}));
  m.Constant("b", Tensor::Scalar<int64_t>(2));
  m.Node("LessOrEqual", {"a", "b"}, {"le"});
  m.Node("GreaterOrEqual", {"a", "b"}, {"ge"});
  m.Output("le");
  m.Output("ge");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_EQ(y[0].shape(), Shape({3, 1}));
  EXPECT_THAT(y[0].ToVector<bool>(), ElementsAre(true, true, false));
  EXPECT_THAT(y[1].ToVector<bool>(), ElementsAre(false, true, true));
}

// LeakyRelu and Clip keep a NaN a NaN (numpy's where and clip).
TEST(OnnxImportAudit, LeakyReluAndClipPropagateNaN) {
  OnnxTestModel m;
  m.Input("x", T<float>({3}, {kNaN, -2, 3}));
  m.Constant("lo", Tensor::Scalar<float>(-1));
  m.Constant("hi", Tensor::Scalar<float>(1));
  m.Node("LeakyRelu", {"x"}, {"leaky"});
  m.Node("Clip", {"x", "lo", "hi"}, {"clip"});
  m.Output("leaky");
  m.Output("clip");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  std::vector<float> leaky = y[0].ToVector<float>(), clip = y[1].ToVector<float>();
  EXPECT_TRUE(std::isnan(leaky[0]) && std::isnan(clip[0]));
  EXPECT_FLOAT_EQ(leaky[1], -0.02f);
  EXPECT_EQ(leaky[2], 3.0f);
  EXPECT_EQ(clip[1], -1.0f);
  EXPECT_EQ(clip[2], 1.0f);
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
