#include "models/nn/transformer_block.h"

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"

namespace dagrad::nn {

absl::StatusOr<TransformerBlock> TransformerBlock::Create(
    Graph& g, absl::string_view prefix, const TransformerBlockOptions& options) {
  const TransformerBlockOptions& c = options;
  DAGRAD_RETURN_IF_ERROR(ValidatePrefix("TransformerBlock", prefix));
  Graph::Scope scope(g, prefix);
  TransformerBlock m;
  m.graph_ = &g;
  m.scope_ = g.scope();
  m.options_ = c;
  // The residual projections take residual_weight_init over weight_init.
  const std::optional<Initializer> residual =
      c.residual_weight_init ? c.residual_weight_init : c.weight_init;
  const MultiheadAttentionOptions attention = {.embed_dim = c.d_model,
                                               .num_heads = c.nhead,
                                               .dropout = c.dropout,
                                               .dtype = c.dtype,
                                               .attention = c.attention,
                                               .in_proj_weight_init = c.weight_init,
                                               .in_proj_bias_init = c.bias_init,
                                               .out_proj_weight_init = residual,
                                               .out_proj_bias_init = c.bias_init};
  // One statement each, in PyTorch's order: it fixes the parameters' order
  // (the state_dict's) and the node ids.
  DAGRAD_ASSIGN_OR_RETURN(m.self_attn_, MultiheadAttention::Create(g, "self_attn", attention));
  if (c.cross_attention) {
    DAGRAD_ASSIGN_OR_RETURN(m.multihead_attn_,
                            MultiheadAttention::Create(g, "multihead_attn", attention));
  }
  const LinearOptions up = {.in_features = c.d_model, .out_features = c.dim_feedforward,
                            .dtype = c.dtype, .weight_init = c.weight_init,
                            .bias_init = c.bias_init};
  const LinearOptions down = {.in_features = c.dim_feedforward, .out_features = c.d_model,
                              .dtype = c.dtype, .weight_init = residual,
                              .bias_init = c.bias_init};
  DAGRAD_ASSIGN_OR_RETURN(m.linear1_, Linear::Create(g, "linear1", up));
  DAGRAD_ASSIGN_OR_RETURN(m.linear2_, Linear::Create(g, "linear2", down));
  const LayerNormOptions norm = {.normalized_shape = c.d_model, .eps = c.eps, .dtype = c.dtype,
                                 .weight_init = c.norm_weight_init,
                                 .bias_init = c.norm_bias_init};
  DAGRAD_ASSIGN_OR_RETURN(m.norm1_, LayerNorm::Create(g, "norm1", norm));
  DAGRAD_ASSIGN_OR_RETURN(m.norm2_, LayerNorm::Create(g, "norm2", norm));
  if (c.cross_attention) {
    DAGRAD_ASSIGN_OR_RETURN(m.norm3_, LayerNorm::Create(g, "norm3", norm));
  }
  DAGRAD_ASSIGN_OR_RETURN(m.dropout_, Dropout::Create(g, "dropout", c.dropout));
  DAGRAD_ASSIGN_OR_RETURN(m.dropout1_, Dropout::Create(g, "dropout1", c.dropout));
  DAGRAD_ASSIGN_OR_RETURN(m.dropout2_, Dropout::Create(g, "dropout2", c.dropout));
  DAGRAD_ASSIGN_OR_RETURN(m.dropout3_, Dropout::Create(g, "dropout3", c.dropout));
  return m;
}

std::vector<Value> TransformerBlock::parameters() const {
  return ConcatParameters({self_attn_.parameters(), multihead_attn_.parameters(),
                           linear1_.parameters(), linear2_.parameters(), norm1_.parameters(),
                           norm2_.parameters(), norm3_.parameters()});
}

Value TransformerBlock::SelfAttention(Value x, const TransformerBlockInputs& inputs) const {
  if (inputs.cache != nullptr) return dropout1_(self_attn_(x, *inputs.cache).output);
  AttentionMask mask = inputs.mask;
  mask.causal = mask.causal || options_.causal;
  const AttentionWeights mode =
      inputs.weights != nullptr ? AttentionWeights::kPerHead : AttentionWeights::kNone;
  AttentionOutput sa = self_attn_(x, x, x, mask, mode);
  if (inputs.weights != nullptr) *inputs.weights = sa.weights;
  return dropout1_(sa.output);
}

Value TransformerBlock::CrossAttention(Value x, const TransformerBlockInputs& inputs) const {
  return dropout2_(multihead_attn_(x, inputs.memory, inputs.memory, inputs.memory_mask).output);
}

Value TransformerBlock::FeedForward(Value x) const {
  const Dropout& last = options_.cross_attention ? dropout3_ : dropout2_;
  return last(linear2_(dropout_(Activate(linear1_(x), options_.activation))));
}

Value TransformerBlock::operator()(Value x, const TransformerBlockInputs& inputs) const {
  if (graph_ == nullptr) return NotCreated(x, "TransformerBlock");
  Graph::ScopePathGuard in_scope(*graph_, scope_);
  if (options_.cross_attention == inputs.memory.is_null()) {
    return graph_->Error(absl::InvalidArgumentError(absl::StrCat(
        "TransformerBlock: ", options_.cross_attention ? "cross-attention needs a memory"
                                                       : "a memory given to a block without "
                                                         "cross_attention")));
  }
  const AttentionMask& m = inputs.mask;
  const bool masked = !m.keep.is_null() || !m.valid_lens.is_null() || !m.bias.is_null();
  if (inputs.cache != nullptr && (!options_.causal || masked || inputs.weights != nullptr)) {
    return graph_->Error(absl::InvalidArgumentError(
        "TransformerBlock: a KV cache needs a causal block and no mask or weights"));
  }
  const bool cross = options_.cross_attention;
  const LayerNorm& last_norm = cross ? norm3_ : norm2_;
  if (options_.norm_first) {
    x = x + SelfAttention(norm1_(x), inputs);
    if (cross) x = x + CrossAttention(norm2_(x), inputs);
    return x + FeedForward(last_norm(x));
  }
  x = norm1_(x + SelfAttention(x, inputs));
  if (cross) x = norm2_(x + CrossAttention(x, inputs));
  return last_norm(x + FeedForward(x));
}

}  // namespace dagrad::nn
