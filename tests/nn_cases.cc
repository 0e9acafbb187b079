// The composite cases (tests/support/op_case.h, kComposite) of the
// dagrad::nn layers (models/nn.h): the gradients of the inputs and of every
// parameter, which the layers declare in float64. The cross-attention
// configurations of nn::MultiheadAttention are in model_cases.cc.

#include <functional>
#include <vector>

#include "models/nn.h"
#include "ops/elementwise.h"
#include "tests/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr DType kF64 = DType::kFloat64;
const std::vector<DType> kFloat64Only = {kF64};

// Run returns the layer's output, or an error Value in g for a failed Create.
template <typename L>
Value Run(Graph& g, const absl::StatusOr<L>& layer, Value x) {
  return layer.ok() ? (*layer)(x) : g.Error(layer.status());
}

// Layer is a float64 config named `name` over `inputs`.
OpConfig Layer(const char* name, std::vector<CaseInput> inputs,
               InputsBuild build) {
  return {.name = name, .build = Over(std::move(inputs), std::move(build)),
          .dtypes = kFloat64Only};
}

OpConfig MlpConfig(const char* name, nn::Activation activation) {
  return Layer(name, {{"x", {2, 4, 5}}}, [activation](Graph& g, const In& in) {
    return Run(g,
               nn::Mlp::Create(g, "mlp", {.in_features = 5, .hidden_features = 7, .out_features = 3,
                                          .activation = activation, .dtype = kF64}),
               in[0]);
  });
}

// BlockConfig is a TransformerBlock (d_model 8, 2 heads) on x (2, 4, 8), and
// with cross_attention on memory (2, 3, 8), the second input.
OpConfig BlockConfig(const char* name, nn::TransformerBlockOptions options) {
  options.d_model = 8;
  options.nhead = 2;
  options.dim_feedforward = 12;
  options.dropout = 0.0;
  options.dtype = kF64;
  std::vector<CaseInput> inputs = {{"x", {2, 4, 8}}};
  if (options.cross_attention) inputs.push_back({"memory", {2, 3, 8}});
  return Layer(name, inputs, [options](Graph& g, const In& in) {
    auto block = nn::TransformerBlock::Create(g, "block", options);
    if (!block.ok()) return g.Error(block.status());
    return (*block)(in[0], {.memory = options.cross_attention ? in[1] : Value()});
  });
}

}  // namespace

DAGRAD_OP_CASE(nn_linear,
    .configs = {Layer("bias", {{"x", {2, 3, 5}}},
                      [](Graph& g, const In& in) {
                        return Run(g, nn::Linear::Create(g, "fc", {.in_features = 5,
                                                                   .out_features = 4,
                                                                   .dtype = kF64}),
                                   in[0]);
                      }),
                Layer("no_bias", {{"x", {4, 5}}},
                      [](Graph& g, const In& in) {
                        return Run(g, nn::Linear::Create(g, "fc", {.in_features = 5,
                                                                   .out_features = 3,
                                                                   .bias = false,
                                                                   .dtype = kF64}),
                                   in[0]);
                      })},
    .bench =
        [](CaseBuilder& b, DType d) {
          auto fc = nn::Linear::Create(b.graph(), "fc",
                                       {.in_features = 512, .out_features = 512, .dtype = d});
          b.Out(Run(b.graph(), fc, b.Input("x", d, {32, 64, 512})));
        },
    .flags = kComposite);

DAGRAD_OP_CASE(nn_embedding,
    .configs = {Layer("lookup", {{"ids", {2, 3}, T<int64_t>({2, 3}, {0, 4, 4, 2, 1, 0})}},
                      [](Graph& g, const In& in) {
                        return Run(g, nn::Embedding::Create(g, "emb", {.num_embeddings = 5,
                                                                       .embedding_dim = 3,
                                                                       .dtype = kF64}),
                                   in[0]);
                      })},
    .flags = kComposite);

DAGRAD_OP_CASE(nn_layer_norm,
    .configs = {Layer("affine", {{"x", {2, 3, 6}}},
                      [](Graph& g, const In& in) {
                        return Run(g, nn::LayerNorm::Create(
                                          g, "ln", {.normalized_shape = 6, .dtype = kF64}),
                                   in[0]);
                      }),
                Layer("no_bias", {{"x", {3, 6}}},
                      [](Graph& g, const In& in) {
                        return Run(g, nn::LayerNorm::Create(g, "ln", {.normalized_shape = 6,
                                                                      .bias = false,
                                                                      .dtype = kF64}),
                                   in[0]);
                      })},
    .flags = kComposite);

DAGRAD_OP_CASE(nn_mlp,
    .configs = {MlpConfig("relu", nn::Activation::kRelu),
                MlpConfig("gelu", nn::Activation::kGelu),
                MlpConfig("gelu_tanh", nn::Activation::kGeluTanh)},
    .flags = kComposite);

DAGRAD_OP_CASE(nn_transformer_block,
    .configs = {BlockConfig("post_norm", {}),
                BlockConfig("pre_norm_causal_gelu", {.activation = nn::Activation::kGelu,
                                                     .norm_first = true, .causal = true}),
                BlockConfig("cross_post_norm", {.cross_attention = true}),
                BlockConfig("cross_pre_norm_gelu_tanh",
                            {.activation = nn::Activation::kGeluTanh, .norm_first = true,
                             .causal = true, .cross_attention = true})},
    .bench =
        [](CaseBuilder& b, DType d) {
          auto block = nn::TransformerBlock::Create(
              b.graph(), "block",
              {.d_model = 128, .nhead = 4, .dim_feedforward = 512, .dropout = 0.0, .dtype = d});
          if (!block.ok()) return b.Out(b.graph().Error(block.status()));
          b.Out((*block)(b.Input("x", d, {16, 64, 128}), {}));
        },
    .flags = kComposite);

DAGRAD_OP_CASE(nn_sequential,
    .configs = {Layer("linear_norm_linear", {{"x", {3, 4}}},
                      [](Graph& g, const In& in) {
                        auto net = nn::Sequential::Create(g, "net");
                        if (!net.ok()) return g.Error(net.status());
                        for (absl::Status st :
                             {net->Append<nn::Linear>(
                                  {.in_features = 4, .out_features = 6, .dtype = kF64}),
                              net->Append<nn::LayerNorm>({.normalized_shape = 6, .dtype = kF64}),
                              net->Append<nn::Linear>(
                                  {.in_features = 6, .out_features = 2, .dtype = kF64})}) {
                          if (!st.ok()) return g.Error(st);
                        }
                        return (*net)(in[0]);
                      })},
    .flags = kComposite);

}  // namespace dagrad::testing
