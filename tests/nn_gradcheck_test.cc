// Float64 finite-difference gradchecks of every dagrad::nn layer (models/nn.h):
// the gradients of the inputs and of every parameter, which the layers
// declare in float64. gradcheck_test.cc runs the registered cases.

#include "models/nn.h"
#include "ops/elementwise.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr DType kF64 = DType::kFloat64;

// Layer returns the layer's output, or an error Value in g for a failed Create.
template <typename L>
Value Run(Graph& g, const absl::StatusOr<L>& layer, Value x) {
  return layer.ok() ? (*layer)(x) : g.Error(layer.status());
}

DAGRAD_GRADCHECK(nn_linear, {{"x", {2, 3, 5}}}, [](Graph& g, const std::vector<Value>& in) {
  return Run(g, nn::Linear::Create(g, "fc", {.in_features = 5, .out_features = 4, .dtype = kF64}),
             in[0]);
});

DAGRAD_GRADCHECK(nn_linear_no_bias, {{"x", {4, 5}}}, [](Graph& g, const std::vector<Value>& in) {
  return Run(g,
             nn::Linear::Create(
                 g, "fc", {.in_features = 5, .out_features = 3, .bias = false, .dtype = kF64}),
             in[0]);
});

DAGRAD_GRADCHECK(nn_embedding, {{"ids", {2, 3}, T<int64_t>({2, 3}, {0, 4, 4, 2, 1, 0})}},
                 [](Graph& g, const std::vector<Value>& in) {
                   return Run(g,
                              nn::Embedding::Create(
                                  g, "emb",
                                  {.num_embeddings = 5, .embedding_dim = 3, .dtype = kF64}),
                              in[0]);
                 });

DAGRAD_GRADCHECK(nn_layer_norm, {{"x", {2, 3, 6}}}, [](Graph& g, const std::vector<Value>& in) {
  return Run(g, nn::LayerNorm::Create(g, "ln", {.normalized_shape = 6, .dtype = kF64}), in[0]);
});

DAGRAD_GRADCHECK(nn_layer_norm_no_bias, {{"x", {3, 6}}},
                 [](Graph& g, const std::vector<Value>& in) {
                   return Run(g,
                              nn::LayerNorm::Create(
                                  g, "ln", {.normalized_shape = 6, .bias = false, .dtype = kF64}),
                              in[0]);
                 });

// MlpCase checks an Mlp with `activation`.
GradBuilder MlpCase(nn::Activation activation) {
  return [activation](Graph& g, const std::vector<Value>& in) {
    return Run(g,
               nn::Mlp::Create(g, "mlp", {.in_features = 5, .hidden_features = 7, .out_features = 3,
                                          .activation = activation, .dtype = kF64}),
               in[0]);
  };
}
DAGRAD_GRADCHECK(nn_mlp_relu, {{"x", {2, 4, 5}}}, MlpCase(nn::Activation::kRelu));
DAGRAD_GRADCHECK(nn_mlp_gelu, {{"x", {2, 4, 5}}}, MlpCase(nn::Activation::kGelu));
DAGRAD_GRADCHECK(nn_mlp_gelu_tanh, {{"x", {2, 4, 5}}}, MlpCase(nn::Activation::kGeluTanh));

// BlockCase checks a TransformerBlock (d_model 8, 2 heads) on x (2, 4, 8),
// and with cross_attention on memory (2, 3, 8), the second input.
GradBuilder BlockCase(nn::TransformerBlockOptions options) {
  options.d_model = 8;
  options.nhead = 2;
  options.dim_feedforward = 12;
  options.dropout = 0.0;
  options.dtype = kF64;
  return [options](Graph& g, const std::vector<Value>& in) {
    auto block = nn::TransformerBlock::Create(g, "block", options);
    if (!block.ok()) return g.Error(block.status());
    return (*block)(in[0], {.memory = options.cross_attention ? in[1] : Value()});
  };
}
DAGRAD_GRADCHECK(nn_block_post_norm, {{"x", {2, 4, 8}}}, BlockCase({}));
DAGRAD_GRADCHECK(nn_block_pre_norm_causal_gelu, {{"x", {2, 4, 8}}},
                 BlockCase({.activation = nn::Activation::kGelu, .norm_first = true,
                            .causal = true}));
DAGRAD_GRADCHECK(nn_block_cross_post_norm, {{"x", {2, 4, 8}}, {"memory", {2, 3, 8}}},
                 BlockCase({.cross_attention = true}));
DAGRAD_GRADCHECK(nn_block_cross_pre_norm_gelu_tanh, {{"x", {2, 4, 8}}, {"memory", {2, 3, 8}}},
                 BlockCase({.activation = nn::Activation::kGeluTanh, .norm_first = true,
                            .causal = true, .cross_attention = true}));

DAGRAD_GRADCHECK(nn_sequential, {{"x", {3, 4}}}, [](Graph& g, const std::vector<Value>& in) {
  auto net = nn::Sequential::Create(g, "net");
  if (!net.ok()) return g.Error(net.status());
  for (absl::Status st :
       {net->Append<nn::Linear>({.in_features = 4, .out_features = 6, .dtype = kF64}),
        net->Append<nn::LayerNorm>({.normalized_shape = 6, .dtype = kF64}),
        net->Append<nn::Linear>({.in_features = 6, .out_features = 2, .dtype = kF64})}) {
    if (!st.ok()) return g.Error(st);
  }
  return (*net)(in[0]);
});

DAGRAD_GRADCHECK(nn_mha_cross, {{"q", {2, 3, 4}}, {"kv", {2, 5, 4}}},
                 [](Graph& g, const std::vector<Value>& in) {
                   auto mha = nn::MultiheadAttention::Create(
                       g, "mha", {.embed_dim = 4, .num_heads = 2, .dtype = kF64});
                   if (!mha.ok()) return g.Error(mha.status());
                   return (*mha)(in[0], in[1], in[1]).output;
                 });

}  // namespace
}  // namespace dagrad::testing
