// The CLI's ONNX paths: `dagrad eval --model=F.onnx` takes each graph input
// by its ONNX name from the input file and writes each output under its
// ONNX name (compared with PyTorch's output for the exported
// nn.MultiheadAttention), and `dagrad dot --model=F.onnx` draws the model.

#ifdef DAGRAD_HAVE_ONNX

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "tests/support/cli_runner.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

const std::string kMha = absl::StrCat(DAGRAD_TEST_DATA_DIR, "/onnx/mha.onnx");

TEST(OnnxCli, EvalTakesInputsAndWritesOutputsByOnnxName) {
  const std::string dir = FreshDir("onnx_cli_eval");
  ASSERT_OK_AND_ASSIGN(GoldenCase golden, LoadGolden("onnx_models", "mha"));
  SafetensorsFile in;
  for (const char* name : {"query", "key", "value"}) in.tensors.push_back({name, golden.inputs.at(name)});
  ASSERT_OK(WriteSafetensors(dir + "/in.safetensors", in));
  CliResult r = RunDagrad(absl::StrCat("eval --model=", kMha, " --input=", dir,
                                       "/in.safetensors --output=", dir, "/out.safetensors"));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(SafetensorsFile out, ReadSafetensors(dir + "/out.safetensors"));
  ASSERT_NE(out.Find("output"), nullptr);
  ExpectAllClose(*out.Find("output"), AsDoubles(golden.outputs.at("output")), 1e-4, 1e-4);

  in.tensors.pop_back();  // no 'value'
  ASSERT_OK(WriteSafetensors(dir + "/short.safetensors", in));
  r = RunDagrad(absl::StrCat("eval --model=", kMha, " --input=", dir,
                             "/short.safetensors --output=", dir, "/o.safetensors"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("no tensor 'value', an input of"));

  r = RunDagrad(absl::StrCat("eval --model=", kMha, " --precision=bf16 --input=", dir,
                             "/in.safetensors --output=", dir, "/o.safetensors"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--precision=bf16 applies to a checkpoint or a Hugging Face "
                               "directory, not an ONNX model"));
}

TEST(OnnxCli, DotDrawsTheImportedModel) {
  const std::string dir = FreshDir("onnx_cli_dot");
  CliResult r = RunDagrad(absl::StrCat("dot --model=", kMha, " --backward --out=", dir, "/mha.dot"));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(std::string dot, ReadFile(dir + "/mha.dot"));
  EXPECT_THAT(dot, HasSubstr("in_proj_weight"));
  EXPECT_THAT(dot, HasSubstr("matmul"));
  r = RunDagrad(absl::StrCat("eval --model=mha.pt --input=a --output=b"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("eval's --model takes an .onnx file"));
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
