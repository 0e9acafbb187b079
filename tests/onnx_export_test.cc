// ONNX export (engine/onnx/export.h) of the toy transformer, MHA with every
// mask and the GPT: each model passes ONNX's checker, keeps its input and
// parameter names, has symbolic batch and sequence sizes, and has no dropout;
// an op without an ONNX mapping is an error naming it that leaves no file.
// Values against ONNX Runtime: tests/onnx_parity_test.py.

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/checkpoint.h"
#include "engine/executor.h"
#include "engine/file_io.h"
#include "engine/onnx/export.h"
#include "engine/status_macros.h"
#include "gtest/gtest.h"
#include "models/gpt.h"
#include "models/nn_attention.h"
#include "models/transformer.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "tests/support/test_util.h"

namespace dagrad {
namespace {

// Variables returns the graph's variables' initial values by checkpoint name.
SafetensorsFile Variables(Graph& g) {
  Executor exec(g);
  absl::StatusOr<SafetensorsFile> vars = CollectVariables(exec, g.Variables());
  EXPECT_TRUE(vars.ok()) << vars.status();
  return vars.ok() ? *std::move(vars) : SafetensorsFile();
}

// Exported returns the parsed model SerializeOnnx makes, checked again here.
onnx::ModelProto Exported(const Graph& g, absl::Span<const Value> outputs,
                          const OnnxExportOptions& options) {
  onnx::ModelProto model;
  absl::StatusOr<std::string> bytes = SerializeOnnx(g, outputs, options);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return model;
  EXPECT_TRUE(model.ParseFromString(*bytes));
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  return model;
}

// Dims returns a value's dims, dim_params by name.
std::vector<std::string> Dims(const onnx::ValueInfoProto& v) {
  std::vector<std::string> dims;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    dims.push_back(d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
  }
  return dims;
}

std::set<std::string> OpTypes(const onnx::ModelProto& m) {
  std::set<std::string> ops;
  for (const auto& n : m.graph().node()) ops.insert(n.op_type());
  return ops;
}

std::set<std::string> Initializers(const onnx::ModelProto& m) {
  std::set<std::string> names;
  for (const auto& t : m.graph().initializer()) names.insert(t.name());
  return names;
}

TEST(OnnxExport, ToyTransformerKeepsNamesAndSymbolicSizes) {
  Graph g;
  auto model = models::ToyTransformer::Create(
      g, {.vocab = 11, .seq_len = 8, .dim = 16, .heads = 2, .layers = 2, .ffn = 24,
          .dropout = 0.1});
  ASSERT_TRUE(model.ok()) << model.status();
  Value tokens = g.Input("tokens", DType::kInt64, {5, 7});
  Value lengths = g.Input("lengths", DType::kInt64, {5});
  Value logits = (*model)(tokens, lengths).logits;
  SafetensorsFile vars = Variables(g);
  OnnxExportOptions options{.variables = &vars, .output_names = {"logits"},
                            .dynamic_dims = {{"tokens", 0, "batch"}, {"tokens", 1, "sequence"}}};
  onnx::ModelProto m = Exported(g, {logits}, options);
  ASSERT_EQ(m.graph().input_size(), 2);
  EXPECT_EQ(m.graph().input(0).name(), "tokens");
  EXPECT_EQ(Dims(m.graph().input(0)), (std::vector<std::string>{"batch", "sequence"}));
  EXPECT_EQ(m.graph().input(1).name(), "lengths");
  EXPECT_EQ(Dims(m.graph().input(1)), (std::vector<std::string>{"batch"}));
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().output(0).name(), "logits");
  EXPECT_EQ(Dims(m.graph().output(0)), (std::vector<std::string>{"batch", "sequence", "11"}));
  const std::set<std::string> initializers = Initializers(m);
  for (const Value& p : model->parameters()) {
    EXPECT_TRUE(initializers.count(CheckpointName(p.node()))) << CheckpointName(p.node());
  }
  EXPECT_TRUE(initializers.count("encoder.layers.0.self_attn.in_proj_weight"));
  EXPECT_EQ(OpTypes(m).count("Dropout"), 0u);
  EXPECT_EQ(m.opset_import(0).version(), 17);
}

TEST(OnnxExport, MultiheadAttentionWithEveryMask) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3, 5, 8});
  Value lens = g.Input("valid_lens", DType::kInt64, {3});
  Value keep = g.Input("keep", DType::kBool, {5, 5});
  auto mha = nn::MultiheadAttention::Create(
      g, "mha", {.embed_dim = 8, .num_heads = 2, .dropout = 0.1, .add_bias_kv = true,
                 .add_zero_attn = true});
  ASSERT_TRUE(mha.ok()) << mha.status();
  nn::AttentionOutput y = (*mha)(x, x, x, {.keep = keep, .valid_lens = lens, .causal = true},
                                 nn::AttentionWeights::kAveraged);
  SafetensorsFile vars = Variables(g);
  OnnxExportOptions options{
      .variables = &vars,
      .output_names = {"output", "weights"},
      .dynamic_dims = {{"x", 0, "batch"}, {"valid_lens", 0, "batch"}}};
  onnx::ModelProto m = Exported(g, {y.output, y.weights}, options);
  EXPECT_EQ(Dims(m.graph().input(0)), (std::vector<std::string>{"batch", "5", "8"}));
  EXPECT_EQ(Dims(m.graph().output(0)), (std::vector<std::string>{"batch", "5", "8"}));
  EXPECT_TRUE(Initializers(m).count("mha.bias_k"));
  const std::set<std::string> ops = OpTypes(m);
  for (const char* op : {"Softmax", "Where", "Less", "And", "ConstantOfShape", "Expand"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
}

TEST(OnnxExport, Gpt) {
  Graph g;
  auto model = models::Gpt::Create(
      g, {.vocab = 32, .block_size = 16, .dim = 16, .heads = 2, .layers = 2, .dropout = 0.1});
  ASSERT_TRUE(model.ok()) << model.status();
  Value logits = (*model)(g.Input("tokens", DType::kInt64, {3, 5}));
  SafetensorsFile vars = Variables(g);
  OnnxExportOptions options{.variables = &vars, .output_names = {"logits"},
                            .dynamic_dims = {{"tokens", 0, "batch"}, {"tokens", 1, "sequence"}}};
  onnx::ModelProto m = Exported(g, {logits}, options);
  EXPECT_EQ(Dims(m.graph().output(0)), (std::vector<std::string>{"batch", "sequence", "32"}));
  EXPECT_TRUE(Initializers(m).count("transformer.wte.weight"));
  EXPECT_TRUE(OpTypes(m).count("Erf"));  // GELU
}

TEST(OnnxExport, UnexportableOpNamesItAndLeavesNoFile) {
  Graph g;
  auto model = models::ToyTransformer::Create(
      g, {.vocab = 11, .seq_len = 8, .dim = 16, .heads = 2, .layers = 1, .ffn = 24});
  ASSERT_TRUE(model.ok()) << model.status();
  Value tokens = g.Input("tokens", DType::kInt64, {5, 7});
  Value loss = CrossEntropy((*model)(tokens, Value()).logits, tokens);
  SafetensorsFile vars = Variables(g);
  const std::string dir = ::testing::TempDir() + "/onnx_export_unexportable";
  ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  const std::string path = dir + "/model.onnx";
  absl::Status st = ExportOnnx(g, {loss}, path, {.variables = &vars});
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "op 'cross_entropy'")) << st;
  struct stat info;
  EXPECT_NE(stat(path.c_str(), &info), 0) << "a file was left at " << path;
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + dir + "')\"").c_str()), 0)
      << "a temporary file was left in " << dir;
}

TEST(OnnxExport, ErrorsNameTheVariableAndTheDynamicDim) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {4, 4});
  Value w = g.Parameter("w", {4, 3}, Initializer::Zeros());
  Value y = MatMul(x, w);
  absl::Status missing = SerializeOnnx(g, {y}, {}).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument) << missing;
  EXPECT_TRUE(absl::StrContains(missing.message(), "no value for variable w")) << missing;
  SafetensorsFile vars = Variables(g);
  // The batch size 4 is also a dim of w: the export refuses it.
  absl::Status clash =
      SerializeOnnx(g, {y}, {.variables = &vars, .dynamic_dims = {{"x", 0, "batch"}}}).status();
  EXPECT_EQ(clash.code(), absl::StatusCode::kInvalidArgument) << clash;
  EXPECT_TRUE(absl::StrContains(clash.message(), "variable w (4, 3)")) << clash;
  absl::Status no_input =
      SerializeOnnx(g, {y}, {.variables = &vars, .dynamic_dims = {{"z", 0, "batch"}}}).status();
  EXPECT_TRUE(absl::StrContains(no_input.message(), "no such input")) << no_input;
}

}  // namespace
}  // namespace dagrad

#endif  // DAGRAD_HAVE_ONNX
