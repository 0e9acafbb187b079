// The examples of the ONNX headers (ops/onnx/import.h,
// ops/onnx/onnx_tensor.h), line for line, run (tests/support/header_examples.h
// says how they are kept in step with the headers). The models they read
// are copied into the example's temporary directory first.

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "ops/onnx/import.h"
#include "ops/onnx/run.h"
#include "ops/onnx/onnx_tensor.h"
#include "tests/support/header_examples.h"

namespace dagrad {
namespace {

absl::Status CopyModel(const std::string& name) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes,
                          ReadFile(absl::StrCat(DAGRAD_TEST_DATA_DIR, "/onnx/", name)));
  return WriteFileAtomically(name, bytes);
}

HEADER_EXAMPLE(OnnxImport) {
  DAGRAD_RETURN_IF_ERROR(CopyModel("encoder.onnx"));
  DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnx("encoder.onnx", {{"src", {2, 16, 8}}}));
  Executor exec(*m.graph);
  DAGRAD_RETURN_IF_ERROR(m.LoadParameters(exec));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({m.outputs[0].value}));
  EXPECT_EQ(plan->info().steps.empty(), false);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OnnxRunFiles) {
  DAGRAD_RETURN_IF_ERROR(CopyModel("encoder.onnx"));
  DAGRAD_ASSIGN_OR_RETURN(Tensor src, Tensor::Zeros(DType::kFloat32, Shape({2, 16, 8})));
  SafetensorsFile in;
  in.tensors.push_back({"src", src});
  DAGRAD_RETURN_IF_ERROR(WriteSafetensors("in.safetensors", in));
  DAGRAD_RETURN_IF_ERROR(EvaluateOnnxFiles("encoder.onnx", "in.safetensors",
                                           "out.safetensors", CpuDevice(), {}));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile out, ReadSafetensors("out.safetensors"));
  EXPECT_EQ(out.tensors.size(), 1u);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OnnxImportMha) {
  DAGRAD_RETURN_IF_ERROR(CopyModel("mha.onnx"));
  DAGRAD_ASSIGN_OR_RETURN(OnnxModel mha, ImportOnnx("mha.onnx", {{"query", {2, 5, 8}},
      {"key", {2, 4, 8}}, {"value", {2, 4, 8}}}));
  EXPECT_EQ(mha.outputs[0].value.shape(), Shape({2, 5, 8}));
  return absl::OkStatus();
}

HEADER_EXAMPLE(OnnxImportFromBytes) {
  onnx::ModelProto model;
  model.add_opset_import()->set_version(17);
  *model.mutable_graph()->add_initializer() = TensorToOnnx(Tensor::Scalar<float>(1.0f), "c");
  model.mutable_graph()->add_output()->set_name("c");
  std::string bytes = model.SerializeAsString();
  DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnxFromBytes(bytes, "", {}));
  EXPECT_EQ(m.parameters.size(), 1u);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OnnxInputs) {
  DAGRAD_RETURN_IF_ERROR(CopyModel("encoder.onnx"));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<OnnxInputInfo> ins, OnnxInputs("encoder.onnx"));
  // ins[0]: "src", float32, {-1, -1, 8}
  EXPECT_EQ(ins[0].dims, std::vector<int64_t>({-1, -1, 8}));
  return absl::OkStatus();
}

HEADER_EXAMPLE(OnnxTensor) {
  onnx::TensorProto proto = TensorToOnnx(Tensor::Scalar<float>(2.0f), "w");
  DAGRAD_ASSIGN_OR_RETURN(Tensor w, TensorFromOnnx(proto, "/models/gpt"));  // float32 ()
  EXPECT_EQ(w.data<float>()[0], 2.0f);
  absl::StatusOr<DType> d = DTypeFromOnnx(onnx::TensorProto::INT64);   // kInt64
  int32_t t = OnnxTypeOf(DType::kFloat32);   // onnx::TensorProto::FLOAT
  absl::StatusOr<Shape> s = ShapeFromOnnxDims(proto.dims(), DType::kFloat32, "w");
  EXPECT_EQ(*d, DType::kInt64);
  EXPECT_EQ(t, onnx::TensorProto::FLOAT);
  EXPECT_EQ(*s, Shape());
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad

#endif  // DAGRAD_HAVE_ONNX
