// models/nn/transformer_block.h
//
// nn::TransformerBlock: torch.nn.TransformerEncoderLayer (batch_first=True)
// and, with cross_attention, torch.nn.TransformerDecoderLayer: the same
// parameters under the same names, in the same order, the same function.
//
//   post-norm (norm_first = false, PyTorch's default):
//     x = norm1(x + dropout1(self_attn(x, x, x)))
//     x = norm2(x + dropout2(multihead_attn(x, memory, memory)))   [cross]
//     x = normN(x + dropoutN(linear2(dropout(act(linear1(x))))))
//   pre-norm (norm_first = true, GPT's):
//     x = x + dropout1(self_attn(n, n, n)),  n = norm1(x)
//     x = x + dropout2(multihead_attn(norm2(x), memory, memory))   [cross]
//     x = x + dropoutN(linear2(dropout(act(linear1(normN(x))))))
// with N = 2 without cross-attention and 3 with it, and act ReLU, exact
// GELU or tanh GELU (layers.h).
//
// Parameters: self_attn.{in_proj_weight, in_proj_bias, out_proj.weight,
// out_proj.bias}, [multihead_attn.* alike], linear1.{weight, bias},
// linear2.*, norm1.{weight, bias}, norm2.*, [norm3.*].
//
//   DAGRAD_ASSIGN_OR_RETURN(nn::TransformerBlock block,
//       nn::TransformerBlock::Create(g, "h/0", {.d_model = 8, .nhead = 2,
//                                               .dim_feedforward = 32,
//                                               .activation = nn::Activation::kGelu,
//                                               .norm_first = true, .causal = true}));
//   Value y = block(x);                        // x (B, T, 8) -> (B, T, 8)
//   Value z = block(x, {.mask = {.valid_lens = lengths}});   // padded keys masked
//
// Generation with a KV cache, for a causal block (see nn::KvCache):
//   // setup: Cache
//   DAGRAD_ASSIGN_OR_RETURN(nn::TransformerBlock causal, nn::TransformerBlock::Create(g, "c",
//       {.d_model = 8, .nhead = 2, .norm_first = true, .causal = true}));
//   nn::KvCache cache{.past_keys = past_k, .past_values = past_v, .keep = kept};
//   Value next = causal(x, {.cache = &cache});   // x (B, T, 8) after the 3 past slots

#ifndef DAGRAD_MODELS_NN_TRANSFORMER_BLOCK_H_
#define DAGRAD_MODELS_NN_TRANSFORMER_BLOCK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "models/nn/attention.h"
#include "models/nn/layers.h"
#include "models/nn/module.h"

namespace dagrad::nn {

struct TransformerBlockOptions {
  int64_t d_model = 0;            // E; E % nhead == 0
  int64_t nhead = 1;              // H
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;           // residual branches, FFN and attention weights
  Activation activation = Activation::kRelu;
  bool norm_first = false;        // pre-norm when true
  bool causal = false;            // self-attention sees only earlier positions
  bool cross_attention = false;   // a decoder layer: attends to `memory`
  double eps = 1e-5;              // of the LayerNorms
  DType dtype = DType::kFloat32;
  AttentionPath attention = AttentionPath::kFused;  // MultiheadAttentionOptions::attention
  // Initializers that replace PyTorch's where given. weight_init: every
  // matrix (the attentions' in- and out-projections, linear1, linear2);
  // residual_weight_init, when given, instead for the projections that end a
  // residual branch (self_attn.out_proj, multihead_attn.out_proj, linear2:
  // GPT-2 scales these by 1/sqrt(2 layers)); bias_init: the attentions' and
  // the linears' biases; norm_weight_init, norm_bias_init: the LayerNorms'.
  //   nn::TransformerBlockOptions gpt2 = {.d_model = 8, .nhead = 2,
  //       .weight_init = Initializer::Normal(0.0, 0.02),
  //       .residual_weight_init = Initializer::Normal(0.0, 0.02 / std::sqrt(2.0 * 4)),
  //       .bias_init = Initializer::Zeros()};
  std::optional<Initializer> weight_init, residual_weight_init, bias_init;
  std::optional<Initializer> norm_weight_init, norm_bias_init;
};

// TransformerBlockInputs: what a block attends to besides x.
struct TransformerBlockInputs {
  AttentionMask mask;         // self-attention's (causal adds to it)
  Value memory;               // (B, S, E); required iff cross_attention
  AttentionMask memory_mask;  // cross-attention's
  Value* weights = nullptr;   // when set, receives self-attention's (B, H, T, T)
  // cache, when set: x is the T positions after the cache's past, and
  // self-attention attends to the kept past and causally to x (a causal
  // block's incremental decoding; nn::KvCache, attention.h), setting the
  // cache's keys and values. Not with mask or weights.
  KvCache* cache = nullptr;
};

class TransformerBlock {
 public:
  using Options = TransformerBlockOptions;
  TransformerBlock() = default;  // empty until assigned a block made by Create
  // Errors of the sublayers' Create (sizes, nhead, dropout, eps, prefix).
  static absl::StatusOr<TransformerBlock> Create(Graph& g, absl::string_view prefix,
                                                 const TransformerBlockOptions& options);
  // x (B, T, E) -> (B, T, E); ops under the block's scope. An error Value
  // for a missing or unexpected memory, a cache given to a block that is
  // not causal or with a mask or weights, and the sublayers' errors.
  Value operator()(Value x, const TransformerBlockInputs& inputs = {}) const;
  Value Forward(Value x, const TransformerBlockInputs& inputs = {}) const {
    return (*this)(x, inputs);
  }

  const TransformerBlockOptions& options() const { return options_; }
  std::vector<Value> parameters() const;
  NamedParameters named_parameters() const { return RelativeNames(scope_, parameters()); }

 private:
  Value SelfAttention(Value x, const TransformerBlockInputs& inputs) const;
  Value CrossAttention(Value x, const TransformerBlockInputs& inputs) const;
  Value FeedForward(Value x) const;

  Graph* graph_ = nullptr;
  std::string scope_;
  TransformerBlockOptions options_;
  MultiheadAttention self_attn_, multihead_attn_;
  Linear linear1_, linear2_;
  LayerNorm norm1_, norm2_, norm3_;
  Dropout dropout_, dropout1_, dropout2_, dropout3_;
};

}  // namespace dagrad::nn

#endif  // DAGRAD_MODELS_NN_TRANSFORMER_BLOCK_H_
