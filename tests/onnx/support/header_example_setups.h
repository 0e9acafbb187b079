// The setup the examples of the ONNX headers (ops/onnx/import.h,
// ops/onnx/onnx_tensor.h) run in (tests/support/header_examples.h says how):
// the models they read, copied into the example's directory; `m`, the
// encoder imported, with its executor `exec`; a model's `bytes`, and a
// tensor's `proto`.

#ifndef DAGRAD_TESTS_ONNX_SUPPORT_HEADER_EXAMPLE_SETUPS_H_
#define DAGRAD_TESTS_ONNX_SUPPORT_HEADER_EXAMPLE_SETUPS_H_

#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "ops/onnx/import.h"
#include "ops/onnx/onnx_tensor.h"
#include "tests/support/header_examples.h"

namespace dagrad::examples {

inline std::string OnnxModelBytes() {
  onnx::ModelProto model;
  model.add_opset_import()->set_version(17);
  *model.mutable_graph()->add_initializer() = TensorToOnnx(Tensor::Scalar<float>(1.0f), "c");
  model.mutable_graph()->add_output()->set_name("c");
  return model.SerializeAsString();
}

inline std::string TestModel(const std::string& name) {
  return absl::StrCat(DAGRAD_TEST_DATA_DIR, "/onnx/", name);
}

struct Default {
  absl::StatusOr<OnnxModel> encoder = ImportOnnx(TestModel("encoder.onnx"), {{"src", {2, 16, 8}}});
  OnnxModel none;
  const OnnxModel& m = encoder.ok() ? *encoder : none;
  Graph empty;
  Executor exec{m.graph ? *m.graph : empty};
  std::string bytes = OnnxModelBytes();
  onnx::TensorProto proto = TensorToOnnx(Tensor::Scalar<float>(2.0f), "w");

  absl::Status Prepare() {
    for (const char* name : {"encoder.onnx", "mha.onnx"}) {
      DAGRAD_ASSIGN_OR_RETURN(std::string model, ReadFile(TestModel(name)));
      DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(name, model));
    }
    return encoder.status();
  }
  absl::Status Finish() { return absl::OkStatus(); }
};

}  // namespace dagrad::examples

#endif  // DAGRAD_TESTS_ONNX_SUPPORT_HEADER_EXAMPLE_SETUPS_H_
