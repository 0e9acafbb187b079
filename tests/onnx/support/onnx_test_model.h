// tests/onnx/support/onnx_test_model.h
//
// OnnxTestModel: an ONNX model built op by op with the protobuf API, for the
// ONNX tests (tests/onnx/*_test.cc).
//
//   OnnxTestModel m;
//   m.Input("x", T<float>({2}, {1, 2}));
//   m.Node("Relu", {"x"}, {"y"});
//   m.Output("y");
//   ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());

#ifndef DAGRAD_TESTS_ONNX_SUPPORT_ONNX_TEST_MODEL_H_
#define DAGRAD_TESTS_ONNX_SUPPORT_ONNX_TEST_MODEL_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/executor.h"
#include "engine/status_macros.h"
#include "engine/tensor.h"
#include "ops/onnx/import.h"
#include "ops/onnx/onnx_tensor.h"

namespace dagrad::testing {

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
  // InputWithDefault declares an input and an initializer of its name,
  // which gives the input its default value.
  void InputWithDefault(const std::string& name, const Tensor& value) {
    Input(name, value);
    Initializer(name, value);
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
  std::string Bytes() const { return proto_.SerializeAsString(); }
  const std::map<std::string, Tensor>& feeds() const { return feeds_; }

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

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_ONNX_SUPPORT_ONNX_TEST_MODEL_H_
