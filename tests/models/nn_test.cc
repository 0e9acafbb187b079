// dagrad::nn layers (models/nn/nn.h): parity with their torch.nn twins on the
// goldens of tools/goldens/nn.py (outputs and the gradients of inputs and
// parameters, float32, within 1e-5) under PyTorch's parameter names. The
// float64 gradchecks are the layers' composite cases (tests/models/nn_cases.cc);
// the header examples and errors are in nn_layers_test.cc.

#include <functional>
#include <map>
#include <set>

#include "engine/executor.h"
#include "engine/status_macros.h"
#include "models/nn/nn.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

nn::Activation ActivationNamed(const std::string& name) {
  if (name == "relu") return nn::Activation::kRelu;
  return name == "gelu" ? nn::Activation::kGelu : nn::Activation::kGeluTanh;
}

// Built is a golden case's layer applied to its inputs.
struct Built {
  Value y;
  nn::NamedParameters parameters;
};

template <typename Layer>
Built Apply(const Layer& layer, Value x) {
  return {layer(x), layer.named_parameters()};
}

absl::StatusOr<Built> BuildBlock(Graph& g, const nlohmann::json& a,
                                 const std::map<std::string, Value>& in) {
  DAGRAD_ASSIGN_OR_RETURN(
      nn::TransformerBlock block,
      nn::TransformerBlock::Create(
          g, "m",
          {.d_model = a["d_model"], .nhead = a["nhead"], .dim_feedforward = a["dim_feedforward"],
           .dropout = 0.0, .activation = ActivationNamed(a["activation"]),
           .norm_first = a["norm_first"], .causal = a["causal"],
           .cross_attention = a["cross"], .eps = a["eps"]}));
  auto input = [&](const char* name) { return in.count(name) ? in.at(name) : Value(); };
  Value y = block(in.at("x"), {.mask = {.valid_lens = input("lengths")},
                               .memory = input("memory"),
                               .memory_mask = {.valid_lens = input("memory_lengths")}});
  return Built{y, block.named_parameters()};
}

// BuildLayer creates the twin the case's attributes describe, under "m".
absl::StatusOr<Built> BuildLayer(Graph& g, const nlohmann::json& a,
                                 const std::map<std::string, Value>& in) {
  const std::string layer = a["layer"];
  const Value x = in.at("x");
  if (layer == "linear") {
    DAGRAD_ASSIGN_OR_RETURN(nn::Linear m, nn::Linear::Create(g, "m", {.in_features = a["in"],
                                                                      .out_features = a["out"],
                                                                      .bias = a["bias"]}));
    return Apply(m, x);
  }
  if (layer == "embedding") {
    DAGRAD_ASSIGN_OR_RETURN(
        nn::Embedding m,
        nn::Embedding::Create(g, "m", {.num_embeddings = a["num"], .embedding_dim = a["dim"]}));
    return Apply(m, x);
  }
  if (layer == "layer_norm") {
    DAGRAD_ASSIGN_OR_RETURN(
        nn::LayerNorm m,
        nn::LayerNorm::Create(g, "m", {.normalized_shape = a["dim"], .eps = a["eps"],
                                       .elementwise_affine = a["affine"]}));
    return Apply(m, x);
  }
  if (layer == "mlp") {
    DAGRAD_ASSIGN_OR_RETURN(
        nn::Mlp m, nn::Mlp::Create(g, "m", {.in_features = a["in"], .hidden_features = a["hidden"],
                                            .out_features = a["out"],
                                            .activation = ActivationNamed(a["activation"])}));
    return Apply(m, x);
  }
  return BuildBlock(g, a, in);
}

class NnParity : public ::testing::TestWithParam<std::string> {};

TEST_P(NnParity, MatchesTorchOutputsAndGradients) {
  ASSERT_OK_AND_ASSIGN(GoldenCase golden, LoadGolden("nn", GetParam()));
  Graph g;
  std::map<std::string, Value> in;
  Feeds feeds;
  std::vector<Value> float_inputs;
  std::vector<std::string> float_names;
  for (const auto& [name, t] : golden.inputs) {
    if (name.rfind("param.", 0) == 0) continue;
    in[name] = g.Input(name, t.dtype(), t.shape());
    feeds.push_back({in[name], t});
    if (IsFloating(t.dtype()) && name != "r") {
      float_inputs.push_back(in[name]);
      float_names.push_back(name);
    }
  }
  ASSERT_OK_AND_ASSIGN(Built built, BuildLayer(g, golden.attrs, in));
  ASSERT_OK(built.y.status());
  std::vector<Value> wrt = float_inputs;
  std::vector<std::string> names = float_names;
  int torch_parameters = 0;
  for (const auto& [name, t] : golden.inputs) torch_parameters += name.rfind("param.", 0) == 0;
  EXPECT_EQ(static_cast<int>(built.parameters.size()), torch_parameters);
  for (const auto& [name, p] : built.parameters) {
    ASSERT_TRUE(golden.inputs.count("param." + name)) << "no torch parameter " << name;
    wrt.push_back(p);
    names.push_back(name);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(Sum(built.y * in.at("r")), wrt));
  std::vector<Value> fetches = {built.y};
  fetches.insert(fetches.end(), grads.begin(), grads.end());
  Executor exec(g);
  for (const auto& [name, p] : built.parameters) {
    ASSERT_OK(exec.Assign(p, golden.inputs.at("param." + name)));
  }
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(fetches));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exec.Run(*plan, feeds));
  ExpectParity(out[0], golden.outputs.at("y"), "y");
  for (size_t i = 0; i < names.size(); ++i) {
    ExpectParity(out[1 + i], golden.outputs.at("grad." + names[i]), "grad." + names[i]);
  }
}

const std::string kCases[] = {
    "linear",   "linear_no_bias", "embedding",     "layer_norm",
    "layer_norm_no_affine", "mlp_relu", "mlp_gelu", "mlp_gelu_tanh",
    "block_post_norm_relu", "block_pre_norm_gelu_causal", "block_pre_norm_gelu_tanh",
    "block_cross_post_norm", "block_cross_pre_norm"};
INSTANTIATE_TEST_SUITE_P(Torch, NnParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param; });

TEST(NnParityCoverage, EveryGoldenCaseIsTested) {
  std::set<std::string> tested(std::begin(kCases), std::end(kCases));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, GoldenCaseNames("nn"));
  for (const std::string& name : names) EXPECT_TRUE(tested.count(name)) << name;
}

}  // namespace
}  // namespace dagrad::testing
