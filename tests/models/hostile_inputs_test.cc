// One table of hostile inputs across the API, run time, file formats and
// the command line. Each must give a clear error — a Status with the right
// code and a message naming what is wrong, or exit code 2 with one line on
// stderr — and never a crash, a hang or a partial output file.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "models/nn/attention.h"
#include "models/nn/positional_encoding.h"
#include "ops/autodiff/autodiff.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

namespace fs = std::filesystem;
using Code = absl::StatusCode;

struct Case {
  std::string name;
  std::function<absl::Status()> run;
  Code code;
  std::string message;
};

// A graph with a few typed inputs shared by the API cases.
struct Fixture {
  Graph g;
  Value f23 = g.Input("f23", DType::kFloat32, {2, 3});
  Value f4 = g.Input("f4", DType::kFloat32, {4});
  Value f234 = g.Input("f234", DType::kFloat32, {2, 3, 4});
  Value i2 = g.Input("i2", DType::kInt64, {2});
  Value i23 = g.Input("i23", DType::kInt64, {2, 3});
  Value i24 = g.Input("i24", DType::kInt64, {2, 4});
  Value b23 = g.Input("b23", DType::kBool, {2, 3});
  Value scores = g.Input("scores", DType::kFloat32, {2, 4, 3, 5});
};

// Runs `fetch` once with `feeds` and returns the status.
absl::Status RunStatus(Graph& g, Value fetch, const Feeds& feeds, ExecutorOptions options = {}) {
  Executor exec(g, options);
  auto plan = exec.Compile({fetch});
  if (!plan.ok()) return plan.status();
  return exec.Run(**plan, feeds, {.training = true}).status();
}

std::string Dir() {
  static const std::string dir = [] {
    std::string d = absl::StrCat(::testing::TempDir(), "/hostile_", getpid());
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes safetensors bytes: 8-byte little-endian header length, header, data.
std::string WriteSt(const std::string& name, const std::string& header, const std::string& data,
                    int64_t claimed_length = -1) {
  std::string bytes(8, '\0');
  uint64_t n = claimed_length >= 0 ? static_cast<uint64_t>(claimed_length) : header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(n >> (8 * i));
  bytes += header + data;
  const std::string path = Dir() + "/" + name + ".safetensors";
  EXPECT_TRUE(WriteFileAtomically(path, bytes).ok());
  return path;
}

absl::Status ReadSt(const std::string& path) { return ReadSafetensors(path).status(); }

// Runs the dagrad program; OK when it exits 2 with exactly one line on stderr
// containing `message`, else an error describing what happened instead.
absl::Status Cli(const std::string& args, const std::string& output = "") {
  const std::string err = Dir() + "/cli.err";
  const int status =
      std::system(absl::StrCat(DAGRAD_CLI_PATH, " ", args, " > /dev/null 2> ", err).c_str());
  const std::string text = ReadFile(err).value_or("");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 2) {
    return absl::InternalError(absl::StrCat("exit status ", status, ": ", text));
  }
  if (std::count(text.begin(), text.end(), '\n') != 1) {
    return absl::InternalError("stderr is not one line: " + text);
  }
  if (!output.empty() && fs::exists(output)) return absl::InternalError("left " + output);
  return absl::InvalidArgumentError(text);
}

std::vector<Case> Cases() {
  auto fx = std::make_shared<Fixture>();
  auto api = [fx](std::function<Value(Fixture&)> build) {
    return [fx, build] { return build(*fx).status(); };
  };
  const Code kInvalid = Code::kInvalidArgument;
  const std::string model = absl::StrCat(DAGRAD_TEST_DATA_DIR, "/toy_eval/model.safetensors");
  const std::string input = absl::StrCat(DAGRAD_TEST_DATA_DIR, "/toy_eval/input.safetensors");
  const std::string tensor = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::vector<Case> cases = {
      // ---- graph building: shapes, dtypes, attributes ----
      {"add_shapes", api([](Fixture& f) { return Add(f.f23, f.f4); }), kInvalid,
       "add 'add"},
      {"matmul_contracting", api([](Fixture& f) { return MatMul(f.f23, f.f23); }), kInvalid,
       "contracting dims differ: 3 vs 2"},
      {"matmul_rank1", api([](Fixture& f) { return MatMul(f.f4, f.f4); }), kInvalid, "rank >= 2"},
      {"linear_in_features", api([](Fixture& f) { return Linear(f.f234, f.f23); }), kInvalid,
       "in-features 3"},
      {"linear_bias", api([](Fixture& f) { return Linear(f.f23, f.f23, f.f4); }), kInvalid,
       "bias must be (2,)"},
      {"reshape_count", api([](Fixture& f) { return Reshape(f.f23, {5}); }), kInvalid,
       "holds 5 elements, input holds 6"},
      {"reshape_two_minus_one", api([](Fixture& f) { return Reshape(f.f23, {-1, -1}); }),
       kInvalid, "more than one -1"},
      {"reshape_zero_infer",
       api([](Fixture& f) { return Reshape(f.g.Input("z", DType::kFloat32, {0, 3}), {-1, 0}); }),
       kInvalid, "cannot infer -1"},
      {"permute", api([](Fixture& f) { return Permute(f.f23, {1, 1}); }), kInvalid,
       "not a permutation"},
      {"transpose_axis", api([](Fixture& f) { return Transpose(f.f23, 0, 7); }), kInvalid,
       "out of range"},
      {"concat_dims", api([](Fixture& f) { return Concat({f.f23, f.f4}, 0); }), kInvalid,
       "differs from input 0"},
      {"slice_axis", api([](Fixture& f) { return Slice(f.f23, 3, 0, 1); }), kInvalid,
       "axis 3 is out of range for rank 2"},
      {"slice_step", api([](Fixture& f) { return Slice(f.f23, 0, 0, 1, -1); }), kInvalid,
       "step -1 < 1"},
      {"sum_axis", api([](Fixture& f) { return Sum(f.f23, {4}); }), kInvalid,
       "axis 4 is out of range"},
      {"sum_repeated", api([](Fixture& f) { return Sum(f.f23, {0, -2}); }), kInvalid,
       "repeated"},
      {"softmax_keep_dtype",
       api([](Fixture& f) { return MaskedSoftmax(f.f23, {.keep = f.f23}); }), kInvalid,
       "softmax"},
      {"softmax_keep_shape",
       api([](Fixture& f) { return MaskedSoftmax(f.f23, {.keep = f.g.Input("k", DType::kBool, {4})}); }),
       kInvalid, "(4,)"},
      {"softmax_lens_dtype",
       api([](Fixture& f) { return MaskedSoftmax(f.scores, {.valid_lens = f.f4}); }), kInvalid,
       "softmax"},
      {"softmax_lens_shape",
       api([](Fixture& f) { return MaskedSoftmax(f.scores, {.valid_lens = f.i24}); }), kInvalid,
       "(2, 4)"},
      {"softmax_bias_dtype",
       api([](Fixture& f) { return MaskedSoftmax(f.f23, {.bias = f.i23}); }), kInvalid,
       "softmax"},
      {"dropout_p_one", api([](Fixture& f) { return Dropout(f.f23, 1.0); }), kInvalid,
       "p = 1"},
      {"dropout_p_negative", api([](Fixture& f) { return Dropout(f.f23, -0.1); }), kInvalid,
       "p = -0.1"},
      {"layer_norm_gamma", api([](Fixture& f) { return LayerNorm(f.f23, f.f4, Value()); }),
       kInvalid, "layer_norm"},
      {"layer_norm_eps", api([](Fixture& f) { return LayerNorm(f.f23, Value(), Value(), 0.0); }),
       kInvalid, "eps"},
      {"gather_float_indices", api([](Fixture& f) { return Gather(f.f23, f.f4); }), kInvalid,
       "gather"},
      {"gather_axis", api([](Fixture& f) { return Gather(f.f23, f.i2, 5); }), kInvalid, "axis"},
      {"where_cond", api([](Fixture& f) { return Where(f.f23, f.f23, f.f23); }), kInvalid,
       "where"},
      {"cross_entropy_targets_float",
       api([](Fixture& f) { return CrossEntropy(f.f23, f.f4); }), kInvalid, "cross_entropy"},
      {"cross_entropy_targets_shape",
       api([](Fixture& f) { return CrossEntropy(f.f23, f.i23); }), kInvalid, "cross_entropy"},
      {"exp_of_int", api([](Fixture& f) { return Exp(f.i2); }), kInvalid,
       "must be float32 or float64, got int64"},
      {"input_negative_dim",
       api([](Fixture& f) { return f.g.Input("neg", DType::kFloat32, {3, -1}); }), kInvalid,
       "negative dimension -1"},
      {"input_overflow",
       api([](Fixture& f) {
         return f.g.Input("huge", DType::kFloat32, {int64_t{1} << 32, int64_t{1} << 32});
       }),
       kInvalid, "overflows int64"},
      {"parameter_duplicate",
       api([](Fixture& f) {
         f.g.Parameter("dup", {1}, Initializer::Zeros());
         return f.g.Parameter("dup", {1}, Initializer::Zeros());
       }),
       kInvalid, "duplicate path"},
      {"foreign_graph",
       api([](Fixture& f) {
         static Graph other;
         return Add(f.f23, other.Input("o", DType::kFloat32, {2, 3}));
       }),
       kInvalid, "another graph"},
      {"fill_negative", api([](Fixture& f) { return Fill(f.g, Shape({2, -2}), 1.0); }), kInvalid,
       "negative"},
      {"arange_zero_step", api([](Fixture& f) { return Arange(f.g, 0, 5, 0); }), kInvalid,
       "step"},
      {"arange_too_long", api([](Fixture& f) { return Arange(f.g, 0, 1e300, 1e-300); }), kInvalid,
       "arange"},
      {"mha_heads_divide",
       [fx] {
         return nn::MultiheadAttention::Create(fx->g, "m1", {.embed_dim = 100, .num_heads = 3})
             .status();
       },
       kInvalid, "embed_dim 100 is not divisible by num_heads 3"},
      {"mha_zero_heads",
       [fx] {
         return nn::MultiheadAttention::Create(fx->g, "m2", {.embed_dim = 8, .num_heads = 0})
             .status();
       },
       kInvalid, "must be >= 1"},
      {"mha_dropout",
       [fx] {
         return nn::MultiheadAttention::Create(fx->g, "m3",
                                                   {.embed_dim = 4, .num_heads = 2, .dropout = 1.5})
             .status();
       },
       kInvalid, "dropout must be in [0, 1)"},
      {"mha_key_width",
       [fx] {
         auto m = nn::MultiheadAttention::Create(fx->g, "m4", {.embed_dim = 4, .num_heads = 2});
         if (!m.ok()) return m.status();
         Value kv = fx->g.Input("kv3", DType::kFloat32, {2, 3, 3});
         return (*m)(fx->f234, kv, kv).output.status();
       },
       kInvalid, "expected query (B, T, 4), key (B, S, 4)"},
      {"sinusoidal_odd", api([](Fixture& f) { return models::SinusoidalTable(f.g, 4, 7); }),
       kInvalid, "even dim"},
      // ---- compile and run ----
      {"missing_feed", [fx] { return RunStatus(fx->g, Exp(fx->f23), {}); }, kInvalid,
       "missing feed for input 'f23'"},
      {"feed_shape",
       [fx] { return RunStatus(fx->g, Exp(fx->f4), {{fx->f4, T<float>({3}, {1, 2, 3})}}); },
       kInvalid, "expected float32 (4,), got float32 (3,)"},
      {"feed_dtype",
       [fx] { return RunStatus(fx->g, Exp(fx->f4), {{fx->f4, T<double>({4}, {1, 2, 3, 4})}}); },
       kInvalid, "got float64 (4,)"},
      {"feed_twice",
       [fx] {
         const Tensor t = T<float>({4}, {1, 2, 3, 4});
         return RunStatus(fx->g, Exp(fx->f4), {{fx->f4, t}, {fx->f4, t}});
       },
       kInvalid, "fed twice"},
      {"feed_non_input",
       [fx] {
         Value e = Exp(fx->f4);
         const Tensor t = T<float>({4}, {1, 2, 3, 4});
         return RunStatus(fx->g, e, {{fx->f4, t}, {e, t}});
       },
       kInvalid, "only inputs can be fed"},
      {"valid_lens_too_long",
       [fx] {
         return RunStatus(fx->g, MaskedSoftmax(fx->scores, {.valid_lens = fx->i2}),
                          {{fx->scores, *Tensor::Zeros(DType::kFloat32, {2, 4, 3, 5})},
                           {fx->i2, T<int64_t>({2}, {5, 6})}});
       },
       kInvalid, "valid_lens[1] = 6 is outside [0, 5]"},
      {"valid_lens_negative",
       [fx] {
         return RunStatus(fx->g, MaskedSoftmax(fx->scores, {.valid_lens = fx->i2}),
                          {{fx->scores, *Tensor::Zeros(DType::kFloat32, {2, 4, 3, 5})},
                           {fx->i2, T<int64_t>({2}, {-1, 2})}});
       },
       kInvalid, "valid_lens[0] = -1"},
      {"gather_index_range",
       [fx] {
         return RunStatus(fx->g, Embedding(fx->f23, fx->i2),
                          {{fx->f23, *Tensor::Zeros(DType::kFloat32, {2, 3})},
                           {fx->i2, T<int64_t>({2}, {1, 2})}});
       },
       kInvalid, "= 2 is out of range [0, 2)"},
      {"cross_entropy_target_range",
       [fx] {
         return RunStatus(fx->g, CrossEntropy(fx->f23, fx->i2),
                          {{fx->f23, *Tensor::Zeros(DType::kFloat32, {2, 3})},
                           {fx->i2, T<int64_t>({2}, {0, 3})}});
       },
       kInvalid, "cross_entropy"},
      {"int_division_by_zero",
       [fx] {
         return RunStatus(fx->g, Div(fx->i2, fx->i2), {{fx->i2, T<int64_t>({2}, {1, 0})}});
       },
       kInvalid, "integer division by zero"},
      {"cast_nan_to_int",
       [fx] {
         return RunStatus(fx->g, Cast(fx->f4, DType::kInt32),
                          {{fx->f4, T<float>({4}, {1, NAN, 2, 3})}});
       },
       kInvalid, "cannot cast nan (element 1)"},
      {"check_numerics",
       [fx] {
         return RunStatus(fx->g, Log(fx->f4), {{fx->f4, T<float>({4}, {1, 0, 2, 3})}},
                          {.check_numerics = true});
       },
       kInvalid, "check_numerics: forward node 'log"},
      {"memory_limit",
       [fx] {
         Graph& g = fx->g;
         Value big = g.Input("big", DType::kFloat32, {1 << 20});
         Executor exec(g, {.memory_limit_bytes = 1 << 20});
         return exec.Compile({Exp(big)}).status();
       },
       Code::kResourceExhausted, "memory limit"},
      {"compile_error_value",
       [fx] { return Executor(fx->g).Compile({Add(fx->f23, fx->f4)}).status(); }, kInvalid,
       "do not broadcast"},
      {"gradient_of_int_loss", [fx] { return Gradients(Sum(fx->i2), {fx->f4}).status(); },
       kInvalid, "is int64, not float"},
      // ---- safetensors files ----
      {"st_empty", [] { return ReadSt(WriteSt("empty", "", "", 0).substr(0) + ".missing"); },
       Code::kNotFound, "missing"},
      {"st_zero_bytes",
       [] {
         const std::string p = Dir() + "/zero.safetensors";
         EXPECT_TRUE(WriteFileAtomically(p, "").ok());
         return ReadSt(p);
       },
       kInvalid, "file is 0 bytes, too short"},
      {"st_short_length",
       [] {
         const std::string p = Dir() + "/short.safetensors";
         EXPECT_TRUE(WriteFileAtomically(p, "abc").ok());
         return ReadSt(p);
       },
       kInvalid, "file is 3 bytes, too short"},
      {"st_header_beyond_file", [] { return ReadSt(WriteSt("beyond", "{}", "", 1000)); },
       kInvalid, "header length 1000 runs past the end"},
      {"st_invalid_json", [] { return ReadSt(WriteSt("json", "{\"w\": [1,", "")); },
       kInvalid, "header is not valid JSON"},
      {"st_offsets_out_of_range",
       [tensor] { return ReadSt(WriteSt("range", "{" + tensor + "}", std::string(4, '\0'))); },
       kInvalid, "extend past the data buffer of 4 bytes"},
      {"st_overlap",
       [] {
         return ReadSt(WriteSt(
             "overlap",
             R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
             std::string(12, '\0')));
       },
       kInvalid, "overlap tensor 'a'"},
      {"st_shape_overflow",
       [] {
         return ReadSt(WriteSt(
             "overflow",
             R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
             std::string(8, '\0')));
       },
       kInvalid, "overflows int64"},
      {"st_byte_count",
       [] {
         return ReadSt(WriteSt("bytes", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                               std::string(8, '\0')));
       },
       kInvalid, "F32 (3,) needs 12"},
      {"st_unknown_dtype",
       [] {
         return ReadSt(WriteSt("dtype", R"({"w":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})",
                               std::string(8, '\0')));
       },
       kInvalid, "Q7"},
      {"st_duplicate_names",
       [tensor] { return ReadSt(WriteSt("dup", "{" + tensor + "," + tensor + "}", std::string(8, '\0'))); },
       kInvalid, "key 'w' twice"},
      // ---- checkpoints ----
      {"checkpoint_missing_parameter",
       [tensor] {
         Graph g;
         Value a = g.Parameter("w", {2}, Initializer::Zeros());
         Value b = g.Parameter("extra", {2}, Initializer::Zeros());
         Executor exec(g);
         const std::string p = WriteSt("ckpt_w", "{" + tensor + "}", std::string(8, '\0'));
         return LoadVariables(exec, {a, b}, p).status();
       },
       kInvalid, "extra"},
      {"checkpoint_wrong_shape",
       [tensor] {
         Graph g;
         Value a = g.Parameter("w", {3}, Initializer::Zeros());
         Executor exec(g);
         const std::string p = WriteSt("ckpt_shape", "{" + tensor + "}", std::string(8, '\0'));
         return LoadVariables(exec, {a}, p).status();
       },
       kInvalid, "checkpoint has float32 (2,), model expects float32 (3,)"},
      {"checkpoint_unexpected_tensor",
       [tensor] {
         Graph g;
         Executor exec(g);
         Value a = g.Parameter("v", {2}, Initializer::Zeros());
         const std::string p = WriteSt("ckpt_unexpected", "{" + tensor + "}", std::string(8, '\0'));
         return LoadVariables(exec, {a}, p).status();
       },
       kInvalid, "w"},
      // ---- the command line ----
      {"cli_unknown_flag", [] { return Cli("train --learning_rate=1"); }, kInvalid,
       "unknown flag --learning_rate"},
      {"cli_dropout_range", [] { return Cli("train --dropout=2"); }, kInvalid,
       "dropout must be in [0, 1)"},
      {"cli_bad_number", [] { return Cli("train --steps=abc"); }, kInvalid, "--steps='abc'"},
      {"cli_heads", [] { return Cli("train --dim=30 --heads=4"); }, kInvalid,
       "not divisible by heads 4"},
      {"cli_unknown_model", [] { return Cli(absl::StrCat("dot --model=gpt5 --out=", Dir(), "/m.dot"), Dir() + "/m.dot"); },
       kInvalid, "unknown model 'gpt5'"},
      {"cli_eval_missing_input",
       [model] {
         const std::string out = Dir() + "/never.safetensors";
         return Cli(absl::StrCat("eval --checkpoint=", model, " --input=", Dir(),
                                 "/nope.safetensors --output=", out),
                    out);
       },
       kInvalid, "nope.safetensors"},
      {"cli_eval_int32_tokens",
       [model] {
         SafetensorsFile f;
         f.tensors.push_back({"tokens", *Tensor::FromVector<int32_t>({1, 2}, {1, 2})});
         const std::string in = Dir() + "/int32.safetensors";
         EXPECT_TRUE(WriteSafetensors(in, f).ok());
         const std::string out = Dir() + "/int32_out.safetensors";
         return Cli(absl::StrCat("eval --checkpoint=", model, " --input=", in, " --output=", out),
                    out);
       },
       kInvalid, "'tokens' must be int64, got int32"},
      {"cli_eval_model_is_not_a_model",
       [input] {
         const std::string out = Dir() + "/notmodel_out.safetensors";
         return Cli(absl::StrCat("eval --checkpoint=", input, " --input=", input, " --output=", out),
                    out);
       },
       kInvalid, "checkpoint metadata"},
  };
  return cases;
}

TEST(HostileInputs, EveryCaseIsAClearError) {
  const std::vector<Case> cases = Cases();
  EXPECT_GE(cases.size(), 60u);
  for (const Case& c : cases) {
    const absl::Status st = c.run();
    EXPECT_EQ(st.code(), c.code) << c.name << ": " << st;
    EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr(c.message)) << c.name;
  }
}

}  // namespace
}  // namespace dagrad::testing
