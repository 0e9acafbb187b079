// Checkpoints: PyTorch state_dict names from scopes, loading the reference
// writer's state dict into a graph's parameters (checked by a hand-worked
// forward pass), save/load round trips, strict and lenient matching with
// messages that list every problem, and all-or-nothing loading.

#include "engine/io/checkpoint.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "ops/matmul.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

std::string StateDict() {
  return absl::StrCat(DAGRAD_TEST_DATA_DIR, "/safetensors/state_dict.safetensors");
}

// Model mirrors the fixture's module: encoder.layers.0.linear1 (4 <- 3)
// and head (2 <- 4), with `linear1_out` rows in linear1.
struct Model {
  Graph g;
  Value x, w1, b1, w2, b2, y;

  explicit Model(int64_t linear1_out = 4, DType head_bias_dtype = DType::kFloat32) {
    x = g.Input("x", DType::kFloat32, {1, 3});
    {
      Graph::Scope s1(g, "encoder");
      Graph::Scope s2(g, "layers");
      Graph::Scope s3(g, "0");
      Graph::Scope s4(g, "linear1");
      w1 = g.Parameter("weight", {linear1_out, 3}, Initializer::XavierUniform());
      b1 = g.Parameter("bias", {linear1_out}, Initializer::Zeros());
    }
    Graph::Scope s(g, "head");
    w2 = g.Parameter("weight", {2, 4}, Initializer::XavierUniform());
    b2 = g.Parameter("bias", {2}, Initializer::Zeros(), head_bias_dtype);
    y = Linear(Linear(x, w1, b1), w2, b2);
  }
};

TEST(Checkpoint, NamesArePathsWithDots) {
  Graph g;
  Graph::Scope s(g, "encoder/layers/0/self_attn");
  Value w = g.Parameter("in_proj_weight", {3, 1}, Initializer::Zeros());
  EXPECT_EQ(CheckpointName(w.node()), "encoder.layers.0.self_attn.in_proj_weight");
  Graph top;
  EXPECT_EQ(CheckpointName(top.Parameter("bias", {1}, Initializer::Zeros()).node()), "bias");
}

TEST(Checkpoint, LoadsTheReferenceStateDict) {
  Model m;
  Executor exec(m.g);
  ASSERT_OK_AND_ASSIGN(auto metadata, LoadVariables(exec, m.g.Parameters(), StateDict()));
  EXPECT_THAT(metadata, ElementsAre(Pair("dim", "3"), Pair("layers", "1")));
  ExpectAllClose(*exec.Read(m.w1), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0, 0, "linear1.weight");
  ExpectAllClose(*exec.Read(m.b2), {0.25, -0.25}, 0, 0, "head.bias");
  // x = (1, 0, -1): each row r of W1 = (3r, 3r+1, 3r+2) gives -2, so
  // h = -2 + b1 = (-1.5, -2.5, -0.5, -3.5); head rows (-4..-1) and (0..3):
  // y0 = 6 + 7.5 + 1 + 3.5 + 0.25 = 18.25, y1 = -2.5 - 1 - 10.5 - 0.25 = -14.25.
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({m.y}));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{m.x, T<float>({1, 3}, {1, 0, -1})}}));
  ExpectAllClose(out[0], {18.25, -14.25}, 0, 0, "y");
}

TEST(Checkpoint, SaveThenLoadRestoresEveryVariable) {
  Model a;
  Value moment;
  {
    Graph::Scope s(a.g, "adam");
    moment = a.g.Variable("m", {2}, Initializer::Constant(0.5), DType::kFloat64);
  }
  Executor exec_a(a.g, {.seed = 1});
  const std::string path = NewTempDir("checkpoint") + "/ckpt.safetensors";
  ASSERT_OK(SaveVariables(exec_a, a.g.Variables(), {{"step", "7"}}, path));

  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ReadSafetensors(path));
  std::vector<std::string> names;
  for (const auto& [name, t] : f.tensors) names.push_back(name);
  EXPECT_THAT(names, ElementsAre("adam.m", "encoder.layers.0.linear1.bias",
                                 "encoder.layers.0.linear1.weight", "head.bias", "head.weight"));
  EXPECT_EQ(f.Find("adam.m")->dtype(), DType::kFloat64);

  Model b;
  {
    Graph::Scope s(b.g, "adam");
    b.g.Variable("m", {2}, Initializer::Zeros(), DType::kFloat64);
  }
  Executor exec_b(b.g, {.seed = 2});
  ASSERT_OK_AND_ASSIGN(auto metadata, LoadVariables(exec_b, b.g.Variables(), path));
  EXPECT_THAT(metadata, ElementsAre(Pair("step", "7")));
  std::vector<Value> va = a.g.Variables(), vb = b.g.Variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    const Tensor ta = *exec_a.Read(va[i]), tb = *exec_b.Read(vb[i]);
    ASSERT_EQ(ta.TypeString(), tb.TypeString()) << va[i].path();
    EXPECT_EQ(std::memcmp(ta.raw_data(), tb.raw_data(), ta.nbytes()), 0) << va[i].path();
  }
}

TEST(Checkpoint, StrictLoadListsEveryProblemAndLoadsNothing) {
  Model m(/*linear1_out=*/5, /*head_bias_dtype=*/DType::kFloat64);
  Value extra;
  {
    Graph::Scope s(m.g, "extra");
    extra = m.g.Parameter("scale", {1}, Initializer::Ones());
  }
  Executor exec(m.g);
  std::vector<Tensor> before;
  for (Value v : m.g.Parameters()) before.push_back(*exec.Read(v));
  const absl::Status st = LoadVariables(exec, m.g.Parameters(), StateDict()).status();
  EXPECT_STATUS(st, absl::StatusCode::kInvalidArgument,
                absl::StrCat("checkpoint '", StateDict(), "' does not match the variables; "
                             "nothing was loaded: 1 missing (variables with no tensor): "
                             "'extra.scale'; encoder.layers.0.linear1.weight: checkpoint has "
                             "float32 (4, 3), model expects float32 (5, 3); "
                             "encoder.layers.0.linear1.bias: checkpoint has float32 (4,), "
                             "model expects float32 (5,); head.bias: checkpoint has float32 "
                             "(2,), model expects float64 (2,)"));
  // head.weight matched, and still was not assigned.
  std::vector<Value> params = m.g.Parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor now = *exec.Read(params[i]);
    EXPECT_EQ(std::memcmp(now.raw_data(), before[i].raw_data(), now.nbytes()), 0)
        << params[i].path();
  }
}

TEST(Checkpoint, UnexpectedTensorsAreListed) {
  Model m;
  Executor exec(m.g);
  std::vector<Value> some = {m.w1, m.b1};
  EXPECT_STATUS(LoadVariables(exec, some, StateDict()).status(),
                absl::StatusCode::kInvalidArgument,
                "2 unexpected (tensors with no variable): 'head.bias', 'head.weight'");
}

TEST(Checkpoint, LenientLoadSkipsMissingAndUnexpectedButNotMismatches) {
  Model m;
  Value extra = m.g.Parameter("extra", {1}, Initializer::Constant(3.0));
  Executor exec(m.g);
  std::vector<Value> some = {m.w2, extra};
  ASSERT_OK(LoadVariables(exec, some, StateDict(), {.strict = false}).status());
  ExpectAllClose(*exec.Read(m.w2), {-4, -3, -2, -1, 0, 1, 2, 3}, 0, 0, "head.weight");
  ExpectAllClose(*exec.Read(extra), {3}, 0, 0, "missing: kept");

  Model wrong(/*linear1_out=*/5);
  Executor exec_wrong(wrong.g);
  EXPECT_STATUS(LoadVariables(exec_wrong, wrong.g.Parameters(), StateDict(), {.strict = false})
                    .status(),
                absl::StatusCode::kInvalidArgument,
                "encoder.layers.0.linear1.bias: checkpoint has float32 (4,), model expects "
                "float32 (5,)");
}

TEST(Checkpoint, BadVariableListsAreRejectedBeforeWriting) {
  Graph g;
  Value a;
  Value b;
  {
    Graph::Scope s(g, "a/b");
    a = g.Parameter("c", {1}, Initializer::Zeros());
  }
  {
    Graph::Scope s(g, "a");
    b = g.Parameter("b.c", {1}, Initializer::Zeros());
  }
  Value x = g.Input("x", DType::kFloat32, {1});
  Graph other;
  Value foreign = other.Parameter("w", {1}, Initializer::Zeros());
  Executor exec(g);
  const std::string dir = NewTempDir("checkpoint");
  const std::string path = dir + "/bad.safetensors";
  const std::map<std::string, std::string> none;
  EXPECT_STATUS(SaveVariables(exec, {a, b}, none, path), absl::StatusCode::kInvalidArgument,
                "variables 'a/b/c' and 'a/b.c' both have the checkpoint name 'a.b.c'");
  EXPECT_STATUS(SaveVariables(exec, {a, a}, none, path), absl::StatusCode::kInvalidArgument,
                "variable 'a/b/c' is listed twice");
  EXPECT_STATUS(SaveVariables(exec, {x}, none, path), absl::StatusCode::kInvalidArgument,
                "variables[0] 'x' is not a variable");
  EXPECT_STATUS(SaveVariables(exec, {a, foreign}, none, path), absl::StatusCode::kInvalidArgument,
                "variables[1] 'w' belongs to another graph");
  EXPECT_STATUS(SaveVariables(exec, {Value()}, none, path), absl::StatusCode::kInvalidArgument,
                "variables[0] is not a node: null Value");
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "nothing may be written";
  EXPECT_STATUS(LoadVariables(exec, {a, a}, StateDict()).status(),
                absl::StatusCode::kInvalidArgument, "listed twice");
}

TEST(Checkpoint, FileErrorsPassThrough) {
  Model m;
  Executor exec(m.g);
  const std::string dir = NewTempDir("checkpoint");
  EXPECT_STATUS(LoadVariables(exec, m.g.Parameters(), dir + "/none.safetensors").status(),
                absl::StatusCode::kNotFound, "none.safetensors");
  ASSERT_OK(WriteFileAtomically(dir + "/junk.safetensors", "not a checkpoint"));
  EXPECT_STATUS(LoadVariables(exec, m.g.Parameters(), dir + "/junk.safetensors").status(),
                absl::StatusCode::kDataLoss, "damaged checkpoint '" + dir + "/junk.safetensors': header length");
  EXPECT_STATUS(LoadVariables(exec, m.g.Parameters(),
                              absl::StrCat(DAGRAD_TEST_DATA_DIR, "/safetensors/u8.safetensors"))
                    .status(),
                absl::StatusCode::kUnimplemented, "tensor 'bytes': dtype 'U8' is not supported");
  EXPECT_STATUS(
      SaveVariables(exec, m.g.Parameters(), {}, dir + "/missing/dir/ckpt.safetensors"),
      absl::StatusCode::kNotFound, "missing/dir/ckpt.safetensors");
}

}  // namespace
}  // namespace dagrad::testing
