// The composite cases (tests/autodiff/support/op_case.h, kComposite) of the layers
// in models/: multi-head attention in its configurations, and the
// positional encodings, each a subgraph of several ops checked as a whole.
// Cases with float64 weights run in float64 only.

#include <vector>

#include "models/nn/attention.h"
#include "models/nn/positional_encoding.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using nn::AttentionOutput;
using nn::AttentionWeights;
using nn::MultiheadAttention;
const std::vector<DType> kFloat64Only = {DType::kFloat64};

}  // namespace

DAGRAD_OP_CASE(
    multi_head_attention,
    .configs =
        {
            {.name = "self_attention",
             .build = Over({{"x", {2, 3, 4}}},
                           [](Graph& g, const In& in) {
                             auto mha = MultiheadAttention::Create(
                                 g, "mha",
                                 {.embed_dim = 4, .num_heads = 2, .dtype = DType::kFloat64});
                             if (!mha.ok()) return g.Error(mha.status());
                             return (*mha)(in[0], in[0], in[0]).output;
                           }),
             .dtypes = kFloat64Only},
            {.name = "cross_attention_masks",
             .build = Over(
                 {{"q", {2, 2, 4}}, {"kv", {2, 3, 6}}, {"lens", {2}, T<int64_t>({2}, {3, 1})}},
                 [](Graph& g, const In& in) {
                   auto mha = MultiheadAttention::Create(g, "mha",
                                                         {.embed_dim = 4,
                                                          .num_heads = 2,
                                                          .kdim = 6,
                                                          .vdim = 6,
                                                          .dtype = DType::kFloat64});
                   if (!mha.ok()) return g.Error(mha.status());
                   return (*mha)(in[0], in[1], in[1], {.valid_lens = in[2], .causal = true}).output;
                 }),
             .dtypes = kFloat64Only},
            {.name = "rotary",
             .build = Over({{"x", {1, 3, 4}}},
                           [](Graph& g, const In& in) {
                             auto mha = MultiheadAttention::Create(g, "mha",
                                                                   {.embed_dim = 4,
                                                                    .num_heads = 2,
                                                                    .rotary = true,
                                                                    .dtype = DType::kFloat64});
                             if (!mha.ok()) return g.Error(mha.status());
                             return (*mha)(in[0], in[0], in[0]).output;
                           }),
             .dtypes = kFloat64Only},
            {.name = "bias_kv_zero_attn_lengths_causal",
             .build = Over(
                 {{"q", {2, 2, 4}},
                  {"k", {2, 3, 6}},
                  {"v", {2, 3, 5}},
                  {"lens", {2}, T<int64_t>({2}, {2, 0})}},
                 [](Graph& g, const In& in) {
                   auto mha = MultiheadAttention::Create(g, "mha",
                                                         {.embed_dim = 4,
                                                          .num_heads = 2,
                                                          .kdim = 6,
                                                          .vdim = 5,
                                                          .dtype = DType::kFloat64,
                                                          .add_bias_kv = true,
                                                          .add_zero_attn = true});
                   if (!mha.ok()) return g.Error(mha.status());
                   return (*mha)(in[0], in[1], in[2], {.valid_lens = in[3], .causal = true}).output;
                 }),
             .dtypes = kFloat64Only},
            // Float masks through the converters, padded for the appended key: the
            // gradient reaches them as well.
            {.name = "seq_first_bias_kv_float_masks",
             .build = Over({{"q", {2, 2, 4}},
                            {"kv", {3, 2, 4}},
                            {"attn_mask", {4, 2, 3}},
                            {"key_padding_mask", {2, 3}}},
                           [](Graph& g, const In& in) {
                             auto mha = MultiheadAttention::Create(g, "mha",
                                                                   {.embed_dim = 4,
                                                                    .num_heads = 2,
                                                                    .dtype = DType::kFloat64,
                                                                    .add_bias_kv = true,
                                                                    .batch_first = false});
                             if (!mha.ok()) return g.Error(mha.status());
                             Value bias = nn::BiasFromAttnMask(in[2], 2) +
                                          nn::BiasFromKeyPaddingMask(in[3]);
                             return (*mha)(in[0], in[1], in[1], {.bias = bias}).output;
                           }),
             .dtypes = kFloat64Only},
            {.name = "seq_first_zero_attn_self_attention_weights",
             .build = Over({{"x", {3, 2, 4}}},
                           [](Graph& g, const In& in) {
                             auto mha = MultiheadAttention::Create(g, "mha",
                                                                   {.embed_dim = 4,
                                                                    .num_heads = 2,
                                                                    .dtype = DType::kFloat64,
                                                                    .add_zero_attn = true,
                                                                    .batch_first = false});
                             if (!mha.ok()) return g.Error(mha.status());
                             AttentionOutput y = (*mha)(in[0], in[0], in[0], {.causal = true},
                                                        AttentionWeights::kAveraged);
                             return Concat({Reshape(y.output, {-1}), Reshape(y.weights, {-1})}, 0);
                           }),
             .dtypes = kFloat64Only},
        },
    .bench =
        [](CaseBuilder& b, DType d) {
          auto mha = MultiheadAttention::Create(b.graph(), "mha",
                                                {.embed_dim = 128, .num_heads = 4, .dtype = d});
          if (!mha.ok()) return b.Out(b.graph().Error(mha.status()));
          const Value x = b.Input("x", d, {16, 64, 128});
          b.Out((*mha)(x, x, x, {.causal = true}).output);
        },
    .flags = kComposite);

DAGRAD_OP_CASE(
    positional_encoding,
    .configs =
        {
            {.name = "sinusoidal_add",
             .build = Over({{"x", {2, 3, 4}}},
                           [](Graph&, const In& in) { return models::AddSinusoidal(in[0]); })},
            {.name = "rotary",
             .build = Over({{"x", {2, 3, 4}}},
                           [](Graph&, const In& in) { return models::ApplyRotary(in[0]); })},
            {.name = "learned",
             .build = Over({{"x", {2, 3, 4}}},
                           [](Graph& g, const In& in) {
                             models::LearnedPositionalEmbedding pos(g, "pos", 5, 4,
                                                                    DType::kFloat64);
                             return pos(in[0]);
                           }),
             .dtypes = kFloat64Only},
        },
    .bench =
        [](CaseBuilder& b, DType d) {
          b.Out(models::ApplyRotary(models::AddSinusoidal(b.Input("x", d, {32, 128, 256}))));
        },
    .flags = kComposite);

}  // namespace dagrad::testing
