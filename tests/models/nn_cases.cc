// The composite cases (tests/autodiff/support/op_case.h, kComposite) of the
// dagrad::nn layers (models/nn/nn.h): each layer, its parameters declared in
// the config's dtype, run as a whole in every mode — a float64
// finite-difference gradcheck of the inputs and every parameter, CPU
// against CUDA and each CPU kernel level against the baseline.

#include "absl/status/statusor.h"
#include "models/nn/nn.h"
#include "ops/elementwise.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Apply outputs layer(x), or an error Value when Create failed.
template <typename L>
void Apply(CaseBuilder& b, const absl::StatusOr<L>& layer, Value x) {
  b.Out(layer.ok() ? (*layer)(x) : b.graph().Error(layer.status()));
}

CaseBuild LinearCase(bool bias, Shape x_shape) {
  return [bias, x_shape](CaseBuilder& b, DType d) {
    auto fc = nn::Linear::Create(b.graph(), "fc",
                                 {.in_features = x_shape.dims().back(), .out_features = 4,
                                  .bias = bias, .dtype = d});
    Apply(b, fc, b.Input("x", d, x_shape));
  };
}

CaseBuild LayerNormCase(nn::LayerNormOptions options, Shape x_shape) {
  return [options, x_shape](CaseBuilder& b, DType d) {
    nn::LayerNormOptions o = options;
    o.normalized_shape = x_shape.dims().back();
    o.dtype = d;
    Apply(b, nn::LayerNorm::Create(b.graph(), "ln", o), b.Input("x", d, x_shape, -2.0, 2.0));
  };
}

CaseBuild MlpCase(nn::Activation activation, Shape x_shape) {
  return [activation, x_shape](CaseBuilder& b, DType d) {
    const int64_t in = x_shape.dims().back();
    auto mlp = nn::Mlp::Create(b.graph(), "mlp",
                               {.in_features = in, .hidden_features = 2 * in + 1,
                                .out_features = 3, .activation = activation, .dtype = d});
    Apply(b, mlp, b.Input("x", d, x_shape));
  };
}

// BlockCase: a TransformerBlock of width `width` on x (B, T, width), and
// with cross_attention on memory (B, T + 1, width).
CaseBuild BlockCase(nn::TransformerBlockOptions options, int64_t width, int64_t B,
                    int64_t T) {
  return [=](CaseBuilder& b, DType d) {
    nn::TransformerBlockOptions o = options;
    o.d_model = width;
    o.nhead = 2;
    o.dim_feedforward = width + width / 2;
    o.dropout = 0.0;
    o.dtype = d;
    auto block = nn::TransformerBlock::Create(b.graph(), "block", o);
    const Value x = b.Input("x", d, {B, T, width});
    const Value memory = o.cross_attention ? b.Input("memory", d, {B, T + 1, width}) : Value();
    b.Out(block.ok() ? (*block)(x, {.memory = memory}) : b.graph().Error(block.status()));
  };
}

}  // namespace

DAGRAD_OP_CASE(nn_linear,
    .configs = {{.name = "bias", .build = LinearCase(true, {2, 3, 5})},
                {.name = "no_bias", .build = LinearCase(false, {4, 5})}},
    .bench = LinearCase(true, {64, 128, 512}),
    .flags = kComposite);

DAGRAD_OP_CASE(nn_embedding,
    .configs = {{.name = "repeated_ids",
                 .build = [](CaseBuilder& b, DType d) {
                   auto emb = nn::Embedding::Create(
                       b.graph(), "emb", {.num_embeddings = 5, .embedding_dim = 3, .dtype = d});
                   Apply(b, emb, b.Fixed("ids", T<int64_t>({2, 3}, {0, 4, 4, 2, 1, 0})));
                 }}},
    .bench = [](CaseBuilder& b, DType d) {
      auto emb = nn::Embedding::Create(b.graph(), "emb",
                                       {.num_embeddings = 1000, .embedding_dim = 512, .dtype = d});
      Apply(b, emb, b.Input("ids", DType::kInt64, {64, 128}, 0, 1000));
    },
    .flags = kComposite);

DAGRAD_OP_CASE(nn_layer_norm,
    .configs = {{.name = "affine", .build = LayerNormCase({}, {2, 3, 6})},
                {.name = "no_bias", .build = LayerNormCase({.bias = false}, {3, 6})},
                {.name = "no_affine",
                 .build = LayerNormCase({.eps = 1e-3, .elementwise_affine = false}, {3, 6})}},
    .bench = LayerNormCase({}, {64, 128, 512}),
    .flags = kComposite);

DAGRAD_OP_CASE(nn_mlp,
    .configs = {{.name = "relu", .build = MlpCase(nn::Activation::kRelu, {2, 4, 5})},
                {.name = "gelu", .build = MlpCase(nn::Activation::kGelu, {2, 4, 5})},
                {.name = "gelu_tanh", .build = MlpCase(nn::Activation::kGeluTanh, {2, 4, 5})}},
    .bench = MlpCase(nn::Activation::kGelu, {32, 64, 256}),
    .flags = kComposite);

DAGRAD_OP_CASE(nn_transformer_block,
    .configs = {{.name = "post_norm", .build = BlockCase({}, 8, 2, 4)},
                {.name = "pre_norm_causal_gelu",
                 .build = BlockCase({.activation = nn::Activation::kGelu, .norm_first = true,
                                     .causal = true},
                                    8, 2, 4)},
                {.name = "cross_post_norm", .build = BlockCase({.cross_attention = true}, 8, 2, 4)},
                {.name = "cross_pre_norm_causal_gelu_tanh",
                 .build = BlockCase({.activation = nn::Activation::kGeluTanh, .norm_first = true,
                                     .causal = true, .cross_attention = true},
                                    8, 2, 4)}},
    .bench = BlockCase({.norm_first = true, .causal = true}, 128, 16, 64),
    .flags = kComposite);

DAGRAD_OP_CASE(nn_sequential,
    .configs = {{.name = "linear_relu_layer_norm_linear",
                 .build = [](CaseBuilder& b, DType d) {
                   auto net = nn::Sequential::Create(b.graph(), "net");
                   if (!net.ok()) return b.Out(b.graph().Error(net.status()));
                   absl::Status st =
                       net->Append<nn::Linear>({.in_features = 4, .out_features = 6, .dtype = d});
                   net->Append([](Value h) { return Relu(h); });
                   if (st.ok()) {
                     st = net->Append<nn::LayerNorm>({.normalized_shape = 6, .dtype = d});
                   }
                   if (st.ok()) {
                     st = net->Append<nn::Linear>(
                         {.in_features = 6, .out_features = 2, .dtype = d});
                   }
                   b.Out(st.ok() ? (*net)(b.Input("x", d, {3, 4})) : b.graph().Error(st));
                 }}},
    .flags = kComposite);

}  // namespace dagrad::testing
