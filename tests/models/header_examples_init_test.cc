// The examples of initialisation's headers, line for line, run
// (tests/header_examples.h says how they are kept in step with the
// headers): engine/random_tensor.h, Initializer::TruncatedNormal, the nn
// layers' init options and GPT-2's scheme (models/gpt/gpt.h). Each declares
// what it uses.
#include <cmath>
#include <optional>
#include <string>

#include "engine/executor.h"
#include "engine/random_tensor.h"
#include "engine/status_macros.h"
#include "models/gpt/gpt.h"
#include "models/nn/nn.h"
#include "tests/support/header_examples.h"

namespace dagrad {
namespace {

HEADER_EXAMPLE(InitTruncatedNormalInitializer) {
  Graph g;
  g.Parameter("pos", {64, 128}, Initializer::TruncatedNormal(0.0, 0.02, -0.04, 0.04));
  return g.status();
}

HEADER_EXAMPLE(InitRandomTensors) {
  DAGRAD_ASSIGN_OR_RETURN(Tensor noise, RandomNormal(DType::kFloat64, {1000}, 0.0, 0.5, 7));
  DAGRAD_ASSIGN_OR_RETURN(Tensor u, RandomUniform(DType::kFloat32, {2, 3}, -1.0, 1.0, 7));
  DAGRAD_ASSIGN_OR_RETURN(Tensor w,
      RandomTruncatedNormal(DType::kFloat32, {64, 64}, 0.0, 0.02, -0.04, 0.04, 7));
  EXPECT_EQ(noise.shape(), Shape({1000}));
  EXPECT_EQ(u.shape(), Shape({2, 3}));
  EXPECT_EQ(w.dtype(), DType::kFloat32);
  return absl::OkStatus();
}

HEADER_EXAMPLE(InitMatchesName) {
  bool match = MatchesName("*c_proj.weight", "h.0.mlp.c_proj.weight");   // true
  EXPECT_TRUE(match);
  return absl::OkStatus();
}

HEADER_EXAMPLE(InitParameter) {
  Graph g;
  Value w = g.Parameter("w", {4, 4}, Initializer::XavierUniform());
  Executor exec(g);
  DAGRAD_RETURN_IF_ERROR(InitParameter(exec, w, Initializer::TruncatedNormal(0.0, 0.02)));
  DAGRAD_ASSIGN_OR_RETURN(Tensor value, exec.Read(w));
  for (int i = 0; i < 16; ++i) EXPECT_LE(std::abs(value.data<float>()[i]), 0.2f);  // 10 std
  return absl::OkStatus();
}

HEADER_EXAMPLE(InitParametersBy) {
  Graph g;
  Value w = g.Parameter("w", {4, 4}, Initializer::XavierUniform());
  Executor exec(g);
  ParameterRule matrices = [](const std::string&, const Value& p) {
    return p.rank() >= 2 ? std::optional(Initializer::Normal(0.0, 0.02)) : std::nullopt;
  };
  DAGRAD_ASSIGN_OR_RETURN(int n, InitParametersBy(exec, g.Parameters(), matrices));   // 1
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(w.ok());
  return absl::OkStatus();
}

HEADER_EXAMPLE(InitParametersByName) {
  Graph g;
  { Graph::Scope fc(g, "fc"); g.Parameter("bias", {4}, Initializer::Ones()); }
  Executor exec(g);
  DAGRAD_ASSIGN_OR_RETURN(int biases, InitParameters(exec, g.Parameters(), "*.bias",
                                                     Initializer::Zeros()));   // 1
  EXPECT_EQ(biases, 1);
  DAGRAD_ASSIGN_OR_RETURN(Tensor bias, exec.Read(g.Find("fc/bias")));
  EXPECT_EQ(bias.data<float>()[0], 0.0f);
  return absl::OkStatus();
}

HEADER_EXAMPLE(InitNnOptions) {
  nn::MultiheadAttentionOptions small_out = {.embed_dim = 8, .num_heads = 2,
      .out_proj_weight_init = Initializer::Normal(0.0, 0.01)};
  nn::TransformerBlockOptions gpt2 = {.d_model = 8, .nhead = 2,
      .weight_init = Initializer::Normal(0.0, 0.02),
      .residual_weight_init = Initializer::Normal(0.0, 0.02 / std::sqrt(2.0 * 4)),
      .bias_init = Initializer::Zeros()};
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(auto attention, nn::MultiheadAttention::Create(g, "a", small_out));
  DAGRAD_ASSIGN_OR_RETURN(auto block, nn::TransformerBlock::Create(g, "b", gpt2));
  EXPECT_EQ(attention.parameters().size(), 4u);
  EXPECT_EQ(block.parameters().size(), 12u);
  return absl::OkStatus();
}

HEADER_EXAMPLE(InitGpt2Std) {
  using models::Gpt2Std;
  std::optional<double> s = Gpt2Std("h.0.mlp.c_proj.weight", {64, 256}, 2);   // 0.01
  EXPECT_DOUBLE_EQ(*s, 0.01);
  return absl::OkStatus();
}

HEADER_EXAMPLE(InitGpt2) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(nn::TransformerBlock block,
      nn::TransformerBlock::Create(g, "h/0", {.d_model = 8, .nhead = 2}));
  Executor exec(g);
  DAGRAD_RETURN_IF_ERROR(models::InitGpt2(exec, g.Parameters(), /*layers=*/1));
  // linear1.bias: PyTorch's U(±1/sqrt(8)) before, GPT-2's zeros after.
  DAGRAD_ASSIGN_OR_RETURN(Tensor bias, exec.Read(block.parameters()[5]));
  EXPECT_EQ(bias.data<float>()[0], 0.0f);
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad
