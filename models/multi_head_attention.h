// models/multi_head_attention.h
//
// Multi-head attention as a subgraph of ordinary ops, equal to PyTorch's
// nn.MultiheadAttention(batch_first=True): the same parameters under the
// same names, the same initialisation, the same function — except that a
// query whose keys are all masked gives zeros where PyTorch gives NaN.
//
//   q, k, v = query·Wqᵀ + bq, key·Wkᵀ + bk, value·Wvᵀ + bv   (B, T|S, E)
//   split heads: (B, T, E) -> (B, T, H, Dh) -> (B, H, T, Dh),  Dh = E / H
//   weights = masked_softmax(q·kᵀ, masks, scale = 1/sqrt(Dh))   (B, H, T, S)
//   out = merge_heads(dropout(weights) · v)·Woᵀ + bo            (B, T, E)
//
// Parameters, under the module's scope (checkpoint names in brackets):
//   kdim = vdim = E: in_proj_weight (3E, E) rows q, k, v [in_proj_weight],
//                    in_proj_bias (3E) [in_proj_bias]
//   otherwise:       q_proj_weight (E, E), k_proj_weight (E, kdim),
//                    v_proj_weight (E, vdim), in_proj_bias (3E)
//   out_proj/weight (E, E) [out_proj.weight], out_proj/bias (E) [out_proj.bias]
// Initialisation as PyTorch: Xavier-uniform in-projections (on the packed
// tensor), out_proj.weight U(±1/sqrt(E)), zero biases.
//
// Masks, all optional, combine (see ops/softmax.h):
//   keep       bool, broadcastable to (B, H, T, S); true = may attend
//              (PyTorch's key_padding_mask has the opposite polarity)
//   valid_lens int (B) or (B, T): keys at positions >= length are masked
//   causal     key s is visible from query t iff s <= t + (S - T)
//   bias       float, additive, broadcastable to (B, H, T, S)
//
//   DAGRAD_ASSIGN_OR_RETURN(MultiHeadAttention mha,
//       MultiHeadAttention::Create(g, "self_attn", {.embed_dim = 128, .num_heads = 4}));
//   AttentionOutput y = mha(x, x, x, {.valid_lens = lengths}, AttentionWeights::kPerHead);
//   // y.output (B, T, E); y.weights (B, H, T, S), before dropout

#ifndef DAGRAD_MODELS_MULTI_HEAD_ATTENTION_H_
#define DAGRAD_MODELS_MULTI_HEAD_ATTENTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"

namespace dagrad::models {

struct MultiHeadAttentionConfig {
  int64_t embed_dim = 0;  // E
  int64_t num_heads = 1;  // H; E % H must be 0
  int64_t kdim = 0;       // key width; 0 means E
  int64_t vdim = 0;       // value width; 0 means E
  bool bias = true;
  double dropout = 0.0;   // on the attention weights, in [0, kMaxDropout] (ops/dropout.h)
  // Rotary position embedding (RoPE, adjacent pairs, base 10000) applied to
  // q and k after the head split. Key s is at position s; with S keys and T
  // queries, query t is at position S - T + t: the queries are the last T
  // positions of the keys' sequence, the alignment of the causal mask's
  // causal_offset = S - T. So T new queries against S cached keys rotate as
  // the last T rows of the whole sequence would (self-attention, S == T:
  // both start at 0).
  bool rotary = false;
  double rotary_base = 10000.0;
  DType dtype = DType::kFloat32;  // of the parameters (float64 for gradient checks)
};

struct AttentionMask {
  Value keep;
  Value valid_lens;
  bool causal = false;
  Value bias;
};

enum class AttentionWeights { kNone, kPerHead, kAveraged };

struct AttentionOutput {
  Value output;   // (B, T, E)
  Value weights;  // (B, H, T, S) per head, (B, T, S) averaged; null for kNone
};

class MultiHeadAttention {
 public:
  // Create declares the parameters in `g` under scope `name` (relative to
  // g's current scope). InvalidArgument for E or H < 1, E % H != 0 (never a
  // fractional head size), negative kdim/vdim, dropout outside [0, kMaxDropout], or
  // rotary with an odd head size.
  static absl::StatusOr<MultiHeadAttention> Create(Graph& g, absl::string_view name,
                                                   const MultiHeadAttentionConfig& config);

  // Applies attention; ops are built under the module's scope. Returns error
  // Values (see Graph) for inputs of the wrong rank, width or batch size.
  // `scale` overrides 1/sqrt(Dh).
  AttentionOutput operator()(Value query, Value key, Value value,
                             const AttentionMask& mask = {},
                             AttentionWeights weights = AttentionWeights::kNone,
                             std::optional<double> scale = std::nullopt) const;

  const MultiHeadAttentionConfig& config() const { return config_; }
  int64_t head_dim() const { return config_.embed_dim / config_.num_heads; }
  std::vector<Value> parameters() const;

 private:
  MultiHeadAttention() = default;
  Value SplitHeads(Value x) const;  // (B, L, E) -> (B, H, L, Dh)

  Graph* graph_ = nullptr;
  std::string scope_;
  MultiHeadAttentionConfig config_;
  Value in_proj_weight_, q_proj_weight_, k_proj_weight_, v_proj_weight_;
  Value in_proj_bias_, out_weight_, out_bias_;
};

// Converters from PyTorch's mask conventions (True = masked out) to dagrad
// keep-masks (True = may attend), broadcastable to (B, H, T, S):
// KeepFromKeyPaddingMask: key_padding_mask bool (B, S) -> (B, 1, 1, S).
Value KeepFromKeyPaddingMask(Value key_padding_mask);
// KeepFromAttnMask: bool attn_mask (T, S) -> (T, S), or (B*H, T, S) ->
// (B, H, T, S) for `num_heads` H.
Value KeepFromAttnMask(Value attn_mask, int64_t num_heads);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_MULTI_HEAD_ATTENTION_H_
