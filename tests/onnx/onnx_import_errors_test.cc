// ONNX import against ONNX Runtime on what a second audit found: indices
// out of range (checked as the file holds them, where the run fails), the
// ONNX node an error when running comes from, attributes of the wrong type,
// node numbers after GELU fusion, malformed graph inputs, and inputs ONNX
// Runtime takes (a broadcast LayerNormalization Scale, a float16 exponent).

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/bfloat16.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "ops/onnx/import.h"
#include "ops/onnx/import_gelu.h"
#include "ops/onnx/run.h"
#include "tests/onnx/support/onnx_test_model.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// GatherElements(data (2, 3), index (2, 1), axis 1) named "pick".
OnnxTestModel PickModel(const std::vector<int64_t>& index) {
  OnnxTestModel m;
  m.Input("data", T<float>({2, 3}, {0, 1, 2, 10, 11, 12}));
  m.Input("index", T<int64_t>({2, 1}, index));
  onnx::NodeProto& n = m.Node("GatherElements", {"data", "index"}, {"y"});
  n.set_name("pick");
  OnnxTestModel::IntAttr(n, "axis", 1);
  m.Output("y");
  return m;
}

// An index outside [-3, 3) read the neighbouring row's element; it fails
// the run now, named as the file holds it, under the node's name. -1 is
// the last element, as ONNX says.
TEST(OnnxImportErrors, GatherElementsChecksEachIndexAgainstItsAxis) {
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, PickModel({-1, 0}).Run());
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(2, 10));
  for (int64_t bad : {3, -4}) {
    absl::Status s = PickModel({0, bad}).Run().status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("] = ", bad, " is out of range [-3, 3)")));
    EXPECT_THAT(s.message(), HasSubstr("'pick/"));
  }
}

// Gather's index computed when running: counted from the end, and one out
// of range named as given (-4, not -4 + 3), under the ONNX node's name.
TEST(OnnxImportErrors, GatherNamesTheNodeAndTheIndexAsGiven) {
  auto model = [](int64_t i) {
    OnnxTestModel m;
    m.Input("x", T<float>({3}, {5, 6, 7}));
    m.Input("i", T<int64_t>({2}, {0, i}));
    m.Node("Gather", {"x", "i"}, {"y"}).set_name("embed/lookup");
    m.Output("y");
    return m;
  };
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, model(-1).Run());
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(5, 7));
  absl::Status s = model(-4).Run().status();
  EXPECT_THAT(s.message(), HasSubstr("gather 'embed/lookup/"));
  EXPECT_THAT(s.message(), HasSubstr("indices[1] = -4 is out of range [-3, 3)"));
}

// An attribute of another type than ONNX defines was read as 0 (LeakyRelu's
// alpha) or ignored (Softmax's axis); ONNX Runtime refuses it, and so does
// the import, naming it.
TEST(OnnxImportErrors, AnAttributeOfTheWrongTypeIsRefused) {
  OnnxTestModel leaky;
  leaky.Input("x", T<float>({2}, {-1, 1}));
  OnnxTestModel::IntAttr(leaky.Node("LeakyRelu", {"x"}, {"y"}), "alpha", 1);
  leaky.Output("y");
  EXPECT_STATUS(leaky.Run().status(), absl::StatusCode::kInvalidArgument,
                "(LeakyRelu): attribute 'alpha' is INT, not FLOAT");

  OnnxTestModel softmax;
  softmax.Input("x", T<float>({2, 2}, {1, 2, 3, 4}));
  onnx::AttributeProto* axis = softmax.Node("Softmax", {"x"}, {"y"}).add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::FLOAT);
  axis->set_f(1);
  softmax.Output("y");
  EXPECT_STATUS(softmax.Run().status(), absl::StatusCode::kInvalidArgument,
                "attribute 'axis' is FLOAT, not INT");
}

// A node after a fused GELU is named by its index in the file (9 here), not
// in the graph the fusion left (5).
TEST(OnnxImportErrors, NodeNumbersAreTheFilesAfterGeluFusion) {
  OnnxTestModel m;
  m.Input("x", T<float>({4}, {-1, 0, 1, 2}));
  m.Constant("sqrt2", Tensor::Scalar<float>(std::sqrt(2.0f)));
  m.Constant("one", Tensor::Scalar<float>(1));
  m.Constant("half", Tensor::Scalar<float>(0.5f));
  m.Node("Div", {"x", "sqrt2"}, {"scaled"});
  m.Node("Erf", {"scaled"}, {"erf"});
  m.Node("Add", {"erf", "one"}, {"one_plus"});
  m.Node("Mul", {"x", "one_plus"}, {"product"});
  m.Node("Mul", {"product", "half"}, {"gelu"});
  m.Constant("shape", T<int64_t>({1}, {3}));
  m.Node("Reshape", {"gelu", "shape"}, {"y"}).set_name("the_bad_reshape");
  m.Output("y");
  onnx::GraphProto graph = m.graph();
  ASSERT_EQ(FuseGelu(graph), 1);
  absl::Status s = m.Run().status();
  EXPECT_THAT(s.message(), HasSubstr("ONNX node 9 'the_bad_reshape' (Reshape)"));
}

TEST(OnnxImportErrors, AGraphInputDeclaredTwiceIsRefused) {
  OnnxTestModel m;
  m.Input("x", T<float>({2}, {1, 2}));
  m.Input("x", T<float>({3}, {1, 2, 3}));
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y");
  EXPECT_STATUS(m.Import().status(), absl::StatusCode::kInvalidArgument,
                "the graph declares the input 'x' twice");
}

// A graph input with an initializer of its name has it as a default, which
// a feed replaces (ONNX's IR: "a default value ... overridden by a value
// provided at runtime"; ONNX Runtime does so).
TEST(OnnxImportErrors, AFedValueReplacesAnInputsInitializer) {
  OnnxTestModel m;
  m.Input("x", T<float>({2}, {1, 2}));
  m.InputWithDefault("w", T<float>({2}, {3, 4}));
  m.Node("Mul", {"x", "w"}, {"y"});
  m.Output("y");
  const std::string dir = NewTempDir("onnx_initialized_input");
  ASSERT_OK(WriteFileAtomically(dir + "/m.onnx", m.Bytes()));
  ASSERT_OK_AND_ASSIGN(std::vector<OnnxInputInfo> inputs, OnnxInputs(dir + "/m.onnx"));
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_FALSE(inputs[0].has_default);
  EXPECT_TRUE(inputs[1].has_default);
  auto y_for = [&](const std::vector<std::pair<std::string, Tensor>>& fed) -> Tensor {
    SafetensorsFile in;
    for (const auto& [name, t] : fed) in.tensors.push_back({name, t});
    absl::Status s = WriteSafetensors(dir + "/in.safetensors", in);
    if (s.ok()) {
      s = EvaluateOnnxFiles(dir + "/m.onnx", dir + "/in.safetensors", dir + "/out.safetensors",
                            CpuDevice(), ExecutorOptions());
    }
    EXPECT_TRUE(s.ok()) << s;
    absl::StatusOr<SafetensorsFile> out = ReadSafetensors(dir + "/out.safetensors");
    return s.ok() && out.ok() && out->Find("y") ? *out->Find("y") : Tensor();
  };
  EXPECT_TRUE(SameBits(y_for({{"x", T<float>({2}, {1, 2})}}), T<float>({2}, {3, 8})));
  EXPECT_TRUE(SameBits(y_for({{"x", T<float>({2}, {1, 2})}, {"w", T<float>({2}, {5, -1})}}),
                       T<float>({2}, {5, -2})));
  // A feed still needs the other inputs, and names only inputs.
  SafetensorsFile only_w;
  only_w.tensors = {{"w", T<float>({2}, {0, 0})}};
  ASSERT_OK(WriteSafetensors(dir + "/w.safetensors", only_w));
  EXPECT_STATUS(ReadOnnxInputs(dir + "/m.onnx", dir + "/w.safetensors").status(),
                absl::StatusCode::kInvalidArgument, "no tensor 'x', an input of");
}

// A shape input with a default, fed another shape, reshapes to the fed one
// (the import is specialised to the fed value, as for any shape input).
TEST(OnnxImportErrors, AFedShapeReplacesAnInitializedShapeInput) {
  OnnxTestModel m;
  m.Input("x", T<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  m.InputWithDefault("shape", T<int64_t>({2}, {3, 2}));
  m.Node("Reshape", {"x", "shape"}, {"y"});
  m.Output("y");
  const std::string dir = NewTempDir("onnx_initialized_shape");
  ASSERT_OK(WriteFileAtomically(dir + "/m.onnx", m.Bytes()));
  ASSERT_OK_AND_ASSIGN(OnnxModel by_default, ImportOnnx(dir + "/m.onnx"));
  EXPECT_EQ(by_default.outputs[0].value.shape(), Shape({3, 2}));
  const OnnxInputValues values = {{"x", T<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                                  {"shape", T<int64_t>({2}, {1, 6})}};
  ASSERT_OK_AND_ASSIGN(OnnxModel fed, ImportOnnxForValues(dir + "/m.onnx", values));
  EXPECT_EQ(fed.outputs[0].value.shape(), Shape({1, 6}));
  EXPECT_EQ(fed.fixed_inputs.count("shape"), 1u);
}

// LayerNormalization over (3, 4) with Scale and B of shape (4): ONNX
// Runtime broadcasts them, as the import now does; the result equals the
// model whose Scale and B are written out as (3, 4).
TEST(OnnxImportErrors, LayerNormBroadcastsItsScaleAndBias) {
  auto model = [](const Shape& param) {
    OnnxTestModel m;
    std::vector<float> x(24);
    for (int i = 0; i < 24; ++i) x[i] = std::sin(i * 0.7f);
    m.Input("x", T<float>({2, 3, 4}, x));
    std::vector<float> scale, bias;
    for (int i = 0; i < param.num_elements(); ++i) {
      scale.push_back(1 + i % 4);
      bias.push_back(0.5f * (i % 4));
    }
    m.Constant("scale", T<float>(param, scale));
    m.Constant("bias", T<float>(param, bias));
    OnnxTestModel::IntAttr(m.Node("LayerNormalization", {"x", "scale", "bias"}, {"y"}), "axis",
                           -2);
    m.Output("y");
    return m.Run();
  };
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> broadcast, model(Shape({4})));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> full, model(Shape({3, 4})));
  ExpectAllClose(broadcast[0], AsDoubles(full[0]), 0, 0, "y");
}

// Pow's exponent may be float16 (Pow-15's T1), as ONNX Runtime takes it.
TEST(OnnxImportErrors, PowTakesAFloat16Exponent) {
  OnnxTestModel m;
  m.Input("x", T<float>({3}, {1, 2, 3}));
  m.Constant("e", *Tensor::FromVector<Float16>({}, {FloatToFloat16(2.0f)}));
  m.Node("Pow", {"x", "e"}, {"y"});
  m.Output("y");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(1, 4, 9));
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
