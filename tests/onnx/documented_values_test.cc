// The values the examples of the ONNX headers (ops/onnx/import.h,
// ops/onnx/onnx_tensor.h) promise: the examples themselves run as
// HeaderExample.ops_onnx_*, extracted from the headers; these check what
// they give.
#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/onnx/import.h"
#include "ops/onnx/onnx_tensor.h"
#include "tests/support/test_util.h"

namespace dagrad {
namespace {

std::string TestModel(const std::string& name) {
  return absl::StrCat(DAGRAD_TEST_DATA_DIR, "/onnx/", name);
}

TEST(DocumentedValues, OnnxModelsImported) {
  ASSERT_OK_AND_ASSIGN(std::vector<OnnxInputInfo> ins, OnnxInputs(TestModel("encoder.onnx")));
  EXPECT_EQ(ins[0].name, "src");
  EXPECT_EQ(ins[0].dims, std::vector<int64_t>({-1, -1, 8}));
  ASSERT_OK_AND_ASSIGN(OnnxModel mha, ImportOnnx(TestModel("mha.onnx"), {{"query", {2, 5, 8}},
      {"key", {2, 4, 8}}, {"value", {2, 4, 8}}}));
  EXPECT_EQ(mha.outputs[0].value.shape(), Shape({2, 5, 8}));
}

TEST(DocumentedValues, OnnxTensors) {
  onnx::TensorProto proto = TensorToOnnx(Tensor::Scalar<float>(2.0f), "w");
  ASSERT_OK_AND_ASSIGN(Tensor w, TensorFromOnnx(proto, "/models/gpt"));
  EXPECT_EQ(w.data<float>()[0], 2.0f);
  EXPECT_EQ(*DTypeFromOnnx(onnx::TensorProto::INT64), DType::kInt64);
  EXPECT_EQ(OnnxTypeOf(DType::kFloat32), onnx::TensorProto::FLOAT);
  EXPECT_EQ(*ShapeFromOnnxDims(proto.dims(), DType::kFloat32, "w"), Shape());
}

}  // namespace
}  // namespace dagrad

#endif  // DAGRAD_HAVE_ONNX
