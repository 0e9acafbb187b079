// ONNX export (ops/onnx/export.h) of the toy transformer, MHA with every
// mask and the GPT: each model passes ONNX's checker, keeps its input and
// parameter names, has symbolic batch and sequence sizes, and has no dropout;
// an op without an ONNX mapping is an error naming it that leaves no file.
// Values against ONNX Runtime: tests/onnx/onnx_parity_test.py.

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "gtest/gtest.h"
#include "models/gpt/gpt.h"
#include "models/nn/attention.h"
#include "models/toy/transformer.h"
#include "ops/cumsum.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/onnx/export.h"
#include "ops/onnx/export_builder.h"
#include "ops/onnx/onnx_tensor.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"
#include "tests/models/support/ort.h"
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

// BuildMha builds self-attention over x (B, T, 8) with valid lengths, a
// keep mask (T, T), the causal mask, bias_kv, a zero key and dropout.
nn::AttentionOutput BuildMha(Graph& g, int64_t B, int64_t T) {
  Value x = g.Input("x", DType::kFloat32, {B, T, 8});
  Value lens = g.Input("valid_lens", DType::kInt64, {B});
  Value keep = g.Input("keep", DType::kBool, {T, T});
  auto mha = nn::MultiheadAttention::Create(
      g, "mha", {.embed_dim = 8, .num_heads = 2, .dropout = 0.1, .add_bias_kv = true,
                 .add_zero_attn = true});
  EXPECT_TRUE(mha.ok()) << mha.status();
  if (!mha.ok()) return {};
  return (*mha)(x, x, x, {.keep = keep, .valid_lens = lens, .causal = true},
                nn::AttentionWeights::kAveraged);
}

OnnxExportOptions MhaOptions(const SafetensorsFile* vars) {
  return {.variables = vars,
          .output_names = {"output", "weights"},
          .dynamic_dims = {{"x", 0, "batch"}, {"x", 1, "sequence"}}};
}

TEST(OnnxExport, MultiheadAttentionWithEveryMask) {
  Graph g;
  nn::AttentionOutput y = BuildMha(g, 5, 7);
  SafetensorsFile vars = Variables(g);
  onnx::ModelProto m = Exported(g, {y.output, y.weights}, MhaOptions(&vars));
  EXPECT_EQ(Dims(m.graph().input(0)), (std::vector<std::string>{"batch", "sequence", "8"}));
  EXPECT_EQ(Dims(m.graph().input(2)), (std::vector<std::string>{"sequence", "sequence"}));
  EXPECT_EQ(Dims(m.graph().output(0)), (std::vector<std::string>{"batch", "sequence", "8"}));
  // T + 2 keys (bias_k and the zero key): computed, so not declared.
  EXPECT_EQ(Dims(m.graph().output(1)), (std::vector<std::string>{"batch", "sequence", "0"}));
  EXPECT_TRUE(Initializers(m).count("mha.bias_k"));
  const std::set<std::string> ops = OpTypes(m);
  for (const char* op : {"Softmax", "Where", "Less", "And", "ConstantOfShape", "Expand"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
}

// MhaInputs returns random x, valid_lens in [1, T] and keep for (B, T).
SafetensorsFile MhaInputs(int64_t B, int64_t T) {
  absl::StatusOr<Tensor> keep = Tensor::Zeros(DType::kBool, Shape({T, T}));
  EXPECT_TRUE(keep.ok());
  const Tensor bits = testing::RandomInts({T, T}, 7, 0, 2);
  for (int64_t i = 0; i < T * T; ++i) keep->data<bool>()[i] = bits.data<int64_t>()[i] != 0;
  return {.tensors = {{"x", testing::Random(DType::kFloat32, {B, T, 8}, 5)},
                      {"valid_lens", testing::RandomInts({B}, 6, 1, T + 1)},
                      {"keep", *keep}}};
}

// The exported MHA, built at (5, 7), run by ONNX Runtime at two other batch
// sizes and sequence lengths, gives the outputs of MHA built at those sizes.
TEST(OnnxExport, MultiheadAttentionMatchesOnnxRuntime) {
  const std::string runner = OrtRunner();
  if (runner.empty()) GTEST_SKIP() << "onnxruntime-node is not installed (tools/setup.sh --onnx)";
  const std::string dir = testing::NewTempDir("onnx_export_mha");
  Graph g;
  nn::AttentionOutput exported = BuildMha(g, 5, 7);
  SafetensorsFile vars = Variables(g);
  ASSERT_TRUE(ExportOnnx(g, {exported.output, exported.weights}, dir + "/mha.onnx",
                         MhaOptions(&vars)).ok());
  for (auto [B, T] : {std::pair<int64_t, int64_t>{2, 4}, {3, 9}}) {
    Graph gs;
    nn::AttentionOutput y = BuildMha(gs, B, T);
    Executor exec(gs);
    ASSERT_TRUE(AssignVariables(exec, gs.Variables(), vars, "the exported MHA").ok());
    auto plan = exec.Compile({y.output, y.weights});
    ASSERT_TRUE(plan.ok()) << plan.status();
    const SafetensorsFile in = MhaInputs(B, T);
    Feeds feeds;
    for (const auto& [name, t] : in.tensors) feeds.push_back({gs.Find(name), t});
    auto want = exec.Run(**plan, feeds);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(WriteSafetensors(dir + "/in.safetensors", in).ok());
    const std::string run = "node '" + runner + "' --model=" + dir + "/mha.onnx --input=" + dir +
                            "/in.safetensors --output=" + dir + "/out.safetensors";
    ASSERT_EQ(std::system(run.c_str()), 0) << run;
    auto got = ReadSafetensors(dir + "/out.safetensors");
    ASSERT_TRUE(got.ok()) << got.status();
    for (auto [name, i] : {std::pair<const char*, int>{"output", 0}, {"weights", 1}}) {
      ASSERT_NE(got->Find(name), nullptr) << name;
      testing::ExpectAllClose(*got->Find(name), testing::AsDoubles((*want)[i]), 0, 1e-5,
                              absl::StrCat(name, " at B=", B, ", T=", T));
    }
  }
}

// ExpectUnaryMatchesOnnxRuntime exports op(x) for x of edge and ordinary
// values (float32) and checks that ONNX Runtime gives dagrad's outputs.
void ExpectUnaryMatchesOnnxRuntime(const std::string& runner, const std::string& name,
                                   Value (*op)(Value),
                                   const std::vector<float>& xs = {-100, -30, -20.5, -5, -1, -1e-3,
                                                                   -0.0f, 0, 1e-3, 0.5, 1, 3, 19.5,
                                                                   20.5, 30, 88, 100, 1e4}) {
  const std::string dir = testing::NewTempDir(std::string("onnx_export_") + name);
  const Tensor x = testing::T<float>({2, 9}, xs);
  Graph g;
  Value y = op(g.Input("x", DType::kFloat32, {2, 9}));
  ASSERT_TRUE(ExportOnnx(g, {y}, dir + "/op.onnx", {.output_names = {"y"}}).ok()) << name;
  auto want = testing::RunOnce(g, {y}, {{g.Find("x"), x}});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(WriteSafetensors(dir + "/in.safetensors", {.tensors = {{"x", x}}}).ok());
  const std::string run = "node '" + runner + "' --model=" + dir + "/op.onnx --input=" + dir +
                          "/in.safetensors --output=" + dir + "/out.safetensors";
  ASSERT_EQ(std::system(run.c_str()), 0) << run;
  auto got = ReadSafetensors(dir + "/out.safetensors");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_NE(got->Find("y"), nullptr) << name;
  testing::ExpectAllClose((*want)[0], testing::AsDoubles(*got->Find("y")), 1e-6, 1e-7, name);
}

// Unary ops exported as their ONNX twin (OpDef::onnx) compute what ONNX
// Runtime computes, edges included.
TEST(OnnxExport, UnaryTwinsMatchOnnxRuntime) {
  const std::string runner = OrtRunner();
  if (runner.empty()) GTEST_SKIP() << "onnxruntime-node is not installed (tools/setup.sh --onnx)";
  ExpectUnaryMatchesOnnxRuntime(runner, "softplus", Softplus);
  ExpectUnaryMatchesOnnxRuntime(runner, "abs", Abs);
  ExpectUnaryMatchesOnnxRuntime(runner, "erf", Erf);
  // pow_tensor, ONNX's Pow with an exponent per element: |x| ** cos(x).
  ExpectUnaryMatchesOnnxRuntime(runner, "pow_tensor",
                                [](Value x) { return PowTensor(Abs(x), Cos(x)); });
  // cumsum, ONNX's CumSum: its axis an input, exclusive and reverse attributes.
  ExpectUnaryMatchesOnnxRuntime(runner, "cumsum", [](Value x) { return CumSum(x, 1); });
  ExpectUnaryMatchesOnnxRuntime(runner, "cumsum_exclusive_reverse", [](Value x) {
    return CumSum(x, -1, {.exclusive = true, .reverse = true});
  });
  ExpectUnaryMatchesOnnxRuntime(runner, "cumsum_reverse_axis_0",
                                [](Value x) { return CumSum(x, 0, {.reverse = true}); });
  // bfloat16 products end in float32: their operands are widened (the file
  // failed ONNX's checker). Values bfloat16 holds, so that no cast rounds.
  const std::vector<float> exact = {-96, -30, -20.5, -5, -1, -0.125, -0.0f, 0,  0.25,
                                    0.5, 1,   3,     19.5, 20.5, 30,  88,  100, 1024};
  ExpectUnaryMatchesOnnxRuntime(runner, "bf16_matmul", [](Value x) {
    Value h = Cast(x, DType::kBFloat16);
    return MatMul(h, h, {.transpose_b = true});
  }, exact);
  ExpectUnaryMatchesOnnxRuntime(runner, "bf16_linear", [](Value x) {
    Value h = Cast(x, DType::kBFloat16);
    return Linear(h, h, Value());
  }, exact);
  // A row that a -inf bias masks entirely is zeros, as in dagrad (ONNX's
  // Softmax gave NaN); a keep mask that masks a row entirely, likewise.
  ExpectUnaryMatchesOnnxRuntime(runner, "masked_softmax_dead_rows", [](Value x) {
    Graph& g = *x.graph();
    std::vector<float> bias(18, 0.0f);
    std::fill(bias.begin(), bias.begin() + 9, -INFINITY);
    bias[12] = -INFINITY;
    Value keep = g.Constant(testing::T<bool>({2, 1}, {true, false}));
    return Concat({MaskedSoftmax(x, {.bias = g.Constant(testing::T<float>({2, 9}, bias))}),
                   MaskedSoftmax(x, {.keep = keep})}, 0);
  });
  // Pow as its kernel computes it: sqrt(-inf) is NaN, where ONNX's Pow (C's
  // pow, CPow) gives +inf; both exported, each as it computes.
  ExpectUnaryMatchesOnnxRuntime(runner, "pow_edges", [](Value x) {
    Value edges = Concat({x, x.graph()->Constant(testing::T<float>({2, 9}, std::vector<float>(18, -INFINITY)))}, 0);
    return Concat({Pow(edges, 0.5), Pow(edges, -0.5), Pow(edges, 3.0), Pow(edges, -2.0),
                   Pow(edges, 1.5), CPow(edges, 0.5), CPow(edges, -0.5)}, 0);
  });
  // Arange(0, 0.6, 0.2) has 3 elements; Range of the float32 stop 0.6 had 4.
  ExpectUnaryMatchesOnnxRuntime(runner, "arange_float_stop", [](Value x) {
    return Sum(x) + Arange(*x.graph(), 0, 0.6, 0.2);
  });
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

// Two inputs named x in two scopes failed ONNX's checker (INTERNAL, "SSA");
// one value exported twice wrote two outputs of one name.
TEST(OnnxExport, NamesAGraphInputOrOutputTwiceIsAnErrorNamingThem) {
  Graph g;
  Value a, b;
  {
    Graph::Scope enc(g, "enc");
    a = g.Input("x", DType::kFloat32, {2});
  }
  {
    Graph::Scope dec(g, "dec");
    b = g.Input("x", DType::kFloat32, {2});
  }
  EXPECT_STATUS(SerializeOnnx(g, {Add(a, b)}, {}).status(), absl::StatusCode::kInvalidArgument,
                "inputs 'enc/x' and 'dec/x' are both named 'x'");
  Value r = Relu(a);
  EXPECT_STATUS(SerializeOnnx(g, {r, r}, {}).status(), absl::StatusCode::kInvalidArgument,
                "outputs 0 and 1 are both named 'relu' (the same value: name them");
  EXPECT_TRUE(SerializeOnnx(g, {r, r}, {.output_names = {"r0", "r1"}}).ok());
}

TEST(OnnxExport, UnexportableOpNamesItAndLeavesNoFile) {
  Graph g;
  auto model = models::ToyTransformer::Create(
      g, {.vocab = 11, .seq_len = 8, .dim = 16, .heads = 2, .layers = 1, .ffn = 24});
  ASSERT_TRUE(model.ok()) << model.status();
  Value tokens = g.Input("tokens", DType::kInt64, {5, 7});
  Value loss = CrossEntropy((*model)(tokens, Value()).logits, tokens);
  SafetensorsFile vars = Variables(g);
  const std::string dir = testing::NewTempDir("onnx_export_unexportable");
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

// InitializerInts returns int64 initializer `name`'s values.
std::vector<int64_t> InitializerInts(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() != name) continue;
    absl::StatusOr<Tensor> value = TensorFromOnnx(t, "");
    EXPECT_TRUE(value.ok()) << value.status();
    if (value.ok()) return value->ToVector<int64_t>();
  }
  ADD_FAILURE() << "no initializer " << name;
  return {};
}

// An integer arange or fill exports its integers exactly: Arange(0, 1.5) of
// int64 is Range(0, 2, 1), two elements (its stop was truncated to 1, one
// element); bounds beside INT64_MAX and 2^53 + 1 stay themselves (they went
// through a double, and 2^63 as an int64 is undefined behaviour).
TEST(OnnxExport, IntegerArangeAndFillAreExact) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kBig = (int64_t{1} << 53) + 1;
  Graph g;
  Value x = g.Input("x", DType::kInt64, {2});
  Value ranges = x + Arange(g, 0, 1.5, 1, DType::kInt64) + Arange(g, kMax - 2, kMax, 1, DType::kInt64);
  Value filled = x + Fill(g, {2}, kBig, DType::kInt64);
  onnx::ModelProto m = Exported(g, {ranges, filled}, {});
  std::vector<std::vector<int64_t>> bounds;  // (start, limit, delta) of each Range
  std::vector<int64_t> fills;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "Range") {
      bounds.emplace_back();
      for (const std::string& in : n.input()) bounds.back().push_back(InitializerInts(m, in).at(0));
    }
    if (n.op_type() == "ConstantOfShape") {
      absl::StatusOr<Tensor> value = TensorFromOnnx(n.attribute(0).t(), "");
      ASSERT_TRUE(value.ok()) << value.status();
      fills.push_back(value->ToVector<int64_t>().at(0));
    }
  }
  std::sort(bounds.begin(), bounds.end());
  EXPECT_EQ(bounds, (std::vector<std::vector<int64_t>>{{0, 2, 1}, {kMax - 2, kMax, 1}}));
  EXPECT_EQ(fills, std::vector<int64_t>{kBig});
}

// FilledTensor refuses what an integer dtype cannot hold, where it cast it.
TEST(OnnxExport, FilledTensorKeepsIntegersExact) {
  using onnx_export::FilledTensor;
  absl::StatusOr<Tensor> max = FilledTensor(std::numeric_limits<int64_t>::max(), DType::kInt64, {2});
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ(max->ToVector<int64_t>(), std::vector<int64_t>(2, std::numeric_limits<int64_t>::max()));
  absl::StatusOr<Tensor> big = FilledTensor((int64_t{1} << 53) + 1, DType::kInt64, {1});
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->ToVector<int64_t>(), std::vector<int64_t>{9007199254740993});
  EXPECT_EQ(FilledTensor(9223372036854775808.0, DType::kInt64, {1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FilledTensor(1.5, DType::kInt64, {1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FilledTensor(int64_t{1} << 31, DType::kInt32, {1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FilledTensor(2, DType::kBool, {1}).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Tensor> t = FilledTensor(INT64_MAX, DType::kInt64, Shape({1}));  // exact
  EXPECT_TRUE(t.ok());
}

// The examples of ops/onnx/export.h, line for line.
TEST(OnnxExport, HeaderExamples) {
  const std::string dir = testing::NewTempDir("onnx_export_examples");
  const std::string cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  Graph g;
  auto model = models::Gpt::Create(g, {.vocab = 32, .block_size = 16, .dim = 16, .heads = 2,
                                       .layers = 1});
  ASSERT_TRUE(model.ok()) << model.status();
  Value logits = (*model)(g.Input("tokens", DType::kInt64, {3, 5}));
  SafetensorsFile checkpoint = Variables(g);
  auto example = [&]() -> absl::Status {
    OnnxExportOptions options;
    options.variables = &checkpoint;        // values by checkpoint name
    options.output_names = {"logits"};
    options.dynamic_dims = {{"tokens", 0, "batch"}, {"tokens", 1, "sequence"}};
    absl::Status st = ExportOnnx(g, {logits}, "model.onnx", options);
    EXPECT_TRUE(st.ok()) << st;
    absl::StatusOr<std::string> bytes = SerializeOnnx(g, {logits}, options);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    DAGRAD_RETURN_IF_ERROR(ExportOnnx(g, {logits}, "model.onnx", options));
    return absl::OkStatus();
  };
  EXPECT_TRUE(example().ok());
  EXPECT_TRUE(std::filesystem::exists("model.onnx"));
  std::filesystem::current_path(cwd);
}

}  // namespace
}  // namespace dagrad

#endif  // DAGRAD_HAVE_ONNX
