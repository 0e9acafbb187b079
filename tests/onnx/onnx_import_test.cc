// ONNX import against PyTorch: nn.MultiheadAttention, a 2-layer
// nn.TransformerEncoder and the GPT of tools/reference/gpt.py, exported by
// torch.onnx.export (tools/goldens/onnx_models.py), are imported, run,
// differentiated and trained; outputs and the gradients of sum(output * R)
// with respect to every parameter and float input equal PyTorch's within
// 1e-4. Also: the shape arithmetic is folded away, parameters keep their
// PyTorch names, and a file with ops outside the table lists them all.

#ifdef DAGRAD_HAVE_ONNX

#include "ops/onnx/import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/op.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/optimizer.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

std::string ModelPath(const std::string& name) {
  return absl::StrCat(DAGRAD_TEST_DATA_DIR, "/onnx/", name, ".onnx");
}

// Imported is a golden model imported with its golden inputs' shapes, its
// loss sum(output * R), and the feeds of those inputs.
struct Imported {
  GoldenCase golden;
  OnnxModel model;
  Value output, loss;
  Feeds feeds;
};

absl::StatusOr<Imported> ImportGolden(const std::string& name) {
  Imported im;
  DAGRAD_ASSIGN_OR_RETURN(im.golden, LoadGolden("onnx_models", name));
  OnnxInputShapes shapes;
  for (const auto& [input, t] : im.golden.inputs) {
    if (input != "R") shapes[input] = t.shape();
  }
  DAGRAD_ASSIGN_OR_RETURN(im.model, ImportOnnx(ModelPath(name), shapes));
  im.output = im.model.outputs.at(0).value;
  Value r = im.model.graph->Constant(im.golden.inputs.at("R"), "R");
  im.loss = Sum(Mul(im.output, r));
  DAGRAD_RETURN_IF_ERROR(im.loss.status());
  for (const OnnxValue& in : im.model.inputs) {
    im.feeds.push_back({in.value, im.golden.inputs.at(in.name)});
  }
  return im;
}

class OnnxParity : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxParity, OutputAndGradientsEqualPyTorchs) {
  ASSERT_OK_AND_ASSIGN(Imported im, ImportGolden(GetParam()));
  std::vector<Value> wrt;
  std::vector<std::string> names;
  for (const OnnxParameter& p : im.model.parameters) wrt.push_back(p.value), names.push_back(p.name);
  for (const OnnxValue& in : im.model.inputs) {
    if (IsFloating(in.value.dtype())) wrt.push_back(in.value), names.push_back(in.name);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(im.loss, wrt));
  std::vector<Value> fetches = {im.output};
  fetches.insert(fetches.end(), grads.begin(), grads.end());
  Executor exec(*im.model.graph);
  ASSERT_OK(im.model.LoadParameters(exec));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(fetches));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exec.Run(*plan, im.feeds));
  const auto& want = im.golden.outputs;
  ExpectAllClose(got[0], AsDoubles(want.at("output")), 1e-4, 1e-4, "output");
  ASSERT_EQ(want.size(), names.size() + 1) << "a gradient PyTorch has is not a parameter here";
  double worst_grad = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const Tensor& torch_grad = want.at("grad." + names[i]);
    ExpectAllClose(got[i + 1], AsDoubles(torch_grad), 1e-4, 1e-4, "grad." + names[i]);
    worst_grad = std::max(worst_grad, MaxAbsDifference(got[i + 1], torch_grad));
  }
  std::cout << "onnx parity " << GetParam() << ": output max |dagrad - torch| "
            << MaxAbsDifference(got[0], want.at("output")) << ", gradients (" << names.size()
            << " tensors) max |dagrad - torch| " << worst_grad << "\n";
}

// One SGD step of BuildTrainingStep moves each parameter by -lr times
// PyTorch's gradient.
TEST_P(OnnxParity, TrainingStepFollowsPyTorchsGradients) {
  ASSERT_OK_AND_ASSIGN(Imported im, ImportGolden(GetParam()));
  std::vector<Value> params;
  for (const OnnxParameter& p : im.model.parameters) params.push_back(p.value);
  ASSERT_OK_AND_ASSIGN(TrainingStep ts, BuildTrainingStep(im.loss, params,
                                                          {.kind = OptimizerKind::kSgd,
                                                           .momentum = 0.0}));
  Executor exec(*im.model.graph);
  ASSERT_OK(im.model.LoadParameters(exec));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({im.loss}, ts.updates));
  Feeds feeds = im.feeds;
  const double lr = 0.5;
  feeds.push_back({ts.lr, Tensor::Scalar<double>(lr)});
  feeds.push_back({ts.step, Tensor::Scalar<double>(1)});
  ASSERT_OK(exec.Run(*plan, feeds, {.training = true}).status());
  for (const OnnxParameter& p : im.model.parameters) {
    ASSERT_OK_AND_ASSIGN(Tensor now, exec.Read(p.value));
    std::vector<double> want = AsDoubles(p.initial);
    std::vector<double> grad = AsDoubles(im.golden.outputs.at("grad." + p.name));
    for (size_t i = 0; i < want.size(); ++i) want[i] -= lr * grad[i];
    ExpectAllClose(now, want, 1e-4, 1e-4, p.name);
  }
}

INSTANTIATE_TEST_SUITE_P(TorchExports, OnnxParity,
                         ::testing::Values("mha", "encoder", "gpt"));

// The encoder's file holds 60 Constant, 28 Unsqueeze, 14 Shape and 14
// Gather nodes; for given shapes none of that arithmetic reaches the graph:
// no op computes an integer, and the products remain (10 MatMul, 2 Gemm).
TEST(OnnxImport, FoldsTheShapeArithmeticOfATorchExport) {
  ASSERT_OK_AND_ASSIGN(OnnxModel m, ImportOnnx(ModelPath("encoder"), {{"src", {2, 5, 8}}}));
  int matmuls = 0;
  for (NodeId id = 0; id < m.graph->num_nodes(); ++id) {
    const Node& node = m.graph->node(id);
    if (node.kind != NodeKind::kOp) continue;
    EXPECT_TRUE(IsFloating(node.dtype)) << node.path() << " computes " << DTypeName(node.dtype);
    matmuls += node.op->name == "matmul";
  }
  EXPECT_EQ(matmuls, 12);
  // Another batch and length: the same file, other folded shapes.
  ASSERT_OK_AND_ASSIGN(OnnxModel longer, ImportOnnx(ModelPath("encoder"), {{"src", {3, 7, 8}}}));
  EXPECT_EQ(longer.outputs[0].value.shape(), Shape({3, 7, 8}));
}

TEST(OnnxImport, ParametersKeepTheirPyTorchNames) {
  ASSERT_OK_AND_ASSIGN(OnnxModel m, ImportOnnx(ModelPath("encoder"), {{"src", {2, 5, 8}}}));
  ASSERT_EQ(m.parameters.size(), 24u);
  for (const OnnxParameter& p : m.parameters) {
    EXPECT_EQ(CheckpointName(p.value.node()), p.name);
  }
  EXPECT_EQ(m.parameters[0].value.path(), "layers/0/self_attn/in_proj_weight");
  EXPECT_EQ(m.graph->Parameters().size(), 24u);
}

TEST(OnnxImport, SymbolicDimensionsNeedAShape) {
  EXPECT_STATUS(ImportOnnx(ModelPath("encoder")).status(), absl::StatusCode::kInvalidArgument,
                "is symbolic: give the input's shape");
  EXPECT_STATUS(ImportOnnx(ModelPath("encoder"), {{"source", {2, 5, 8}}}).status(),
                absl::StatusCode::kInvalidArgument, "not an input of the model (src)");
  EXPECT_STATUS(ImportOnnx(ModelPath("encoder"), {{"src", {2, 5, 9}}}).status(),
                absl::StatusCode::kInvalidArgument, "fixes dim 2 at 8");
}

TEST(OnnxImport, UnsupportedOpsAreAllListed) {
  onnx::ModelProto model;
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  for (const char* op : {"Conv", "MaxPool", "Relu", "Conv"}) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
  }
  onnx::NodeProto* custom = g->add_node();
  custom->set_op_type("FusedGemm");
  custom->set_domain("com.microsoft");
  std::string bytes = model.SerializeAsString();
  EXPECT_STATUS(ImportOnnxFromBytes(bytes, "", {}).status(), absl::StatusCode::kUnimplemented,
                "3 ONNX op type(s) of this model: Conv (2 nodes), MaxPool (1 node), "
                "com.microsoft.FusedGemm (1 node)");
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
