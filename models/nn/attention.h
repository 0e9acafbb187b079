// models/nn/attention.h
//
// Multi-head attention as a subgraph of ordinary ops, equal to PyTorch's
// nn.MultiheadAttention: the same parameters under the same names, the same
// initialisation, the same function, options and masks — except that a
// query whose keys are all masked gives zeros where PyTorch gives NaN, and
// that the weights it returns in training are those before dropout (rows
// that sum to 1), where PyTorch 1.13 returns them dropped and rescaled.
//
//   q, k, v = query·Wqᵀ + bq, key·Wkᵀ + bk, value·Wvᵀ + bv   (B, T|S, E)
//   split heads: (B, T, E) -> (B, T, H, Dh) -> (B, H, T, Dh),  Dh = E / H
//   [add_bias_kv: append bias_k to k, bias_v to v;  add_zero_attn: append 0]
//   weights = masked_softmax(q·kᵀ, masks, scale = 1/sqrt(Dh))   (B, H, T, S')
//   out = merge_heads(dropout(weights) · v)·Woᵀ + bo            (B, T, E)
//
// S' = S + add_bias_kv + add_zero_attn: the keys and values with the
// appended positions, which the weights include (as PyTorch's do).
//
// Parameters, under the module's scope (checkpoint names in brackets):
//   kdim = vdim = E: in_proj_weight (3E, E) rows q, k, v [in_proj_weight],
//                    in_proj_bias (3E) [in_proj_bias]
//   otherwise:       q_proj_weight (E, E), k_proj_weight (E, kdim),
//                    v_proj_weight (E, vdim), in_proj_bias (3E)
//   add_bias_kv:     bias_k (1, 1, E) [bias_k], bias_v (1, 1, E) [bias_v]
//   out_proj/weight (E, E) [out_proj.weight], out_proj/bias (E) [out_proj.bias]
// Initialisation as PyTorch: Xavier-uniform in-projections (on the packed
// tensor), Xavier-normal bias_k and bias_v (N(0, 1/E) for their shape),
// out_proj.weight U(±1/sqrt(E)), zero biases; the options' *_init replace them.
//
// Masks, all optional, combine (see ops/softmax.h); each is over the S
// given keys, and the appended keys are always visible, as PyTorch pads its
// masks with "not masked":
//   keep       bool, broadcastable to (B, H, T, S); true = may attend
//              (PyTorch's key_padding_mask and bool attn_mask have the
//              opposite polarity: see the converters at the end)
//   valid_lens int (B) or (B, T): keys at positions >= length are masked
//   causal     key s is visible from query t iff s <= t + (S - T)
//   bias       float, additive, broadcastable to (B, H, T, S) (PyTorch's
//              float attn_mask and key_padding_mask: see the converters)
//
//   DAGRAD_ASSIGN_OR_RETURN(nn::MultiheadAttention mha,
//       nn::MultiheadAttention::Create(g, "self_attn", {.embed_dim = 8, .num_heads = 2}));
//   nn::AttentionOutput y =
//       mha(x, x, x, {.valid_lens = lengths}, nn::AttentionWeights::kPerHead);
//   // x (B, T, 8): y.output (B, T, 8); y.weights (B, 2, T, T), before dropout
//   nn::AttentionOutput z = mha(x, memory, memory);   // cross-attention, memory (B, S, 8)
//
// Two implementations of the same function (MultiheadAttentionOptions::
// attention), to rounding, but for attention dropout in training: each
// draws its mask on its own node's stream (ops/dropout.h), so a run with
// dropout > 0 drops other weights on each path (the same distribution; the
// ops agree bit for bit given one stream, ops/attention.h). kFused, the
// default, runs the heads' attention as one op
// (ops/attention.h: flash-style, no (B, H, T, S) tensor, q, k and v read
// where the projection put them); kComposed builds the subgraph above of
// ordinary ops, which DOT draws step by step and which has second
// derivatives. Asking for the weights (AttentionWeights::kPerHead or
// kAveraged) takes the composed path for that call, since the fused op
// never holds them; every other option (masks, dropout, rotary,
// add_bias_kv, add_zero_attn, kdim/vdim, batch_first) runs fused.
//
// Porting a PyTorch call
//   y, w = mha(q, k, v, key_padding_mask=kpm, attn_mask=am, average_attn_weights=False)
// (kpm bool (B, S), am float (B*H, T, S)):
//   // setup: Masks
//   AttentionOutput y = mha(q, k, v, {.keep = KeepFromKeyPaddingMask(kpm),
//                                     .bias = BiasFromAttnMask(am, H)},
//                           AttentionWeights::kPerHead);

#ifndef DAGRAD_MODELS_NN_ATTENTION_H_
#define DAGRAD_MODELS_NN_ATTENTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "models/nn/module.h"
#include "ops/softmax.h"

namespace dagrad::nn {

// AttentionPath: how attention runs (see the banner). Parse and name it
// with ParseAttentionPath and AttentionPathName ("fused", "composed").
enum class AttentionPath { kFused, kComposed };

// ParseAttentionPath maps "fused" and "composed" to their AttentionPath,
// anything else to InvalidArgument naming it and the choices.
//   absl::StatusOr<AttentionPath> path = ParseAttentionPath("composed");
absl::StatusOr<AttentionPath> ParseAttentionPath(absl::string_view name);
absl::string_view AttentionPathName(AttentionPath path);

struct MultiheadAttentionOptions {
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

  // add_bias_kv (PyTorch's add_bias_kv=True): learned parameters bias_k and
  // bias_v, (1, 1, E), are appended to the projected keys and values (before
  // the head split: head h gets columns [h*Dh, (h+1)*Dh)) as one more key
  // position, S' = S + 1, which every query may attend. Not rotated.
  //   {.embed_dim = 8, .num_heads = 2, .add_bias_kv = true}
  //   key (B, S, kdim) -> weights (B, H, T, S + 1)
  bool add_bias_kv = false;
  // add_zero_attn (PyTorch's add_zero_attn=True): a key and a value of zeros
  // are appended after the projections (and after bias_k, bias_v), S' = S + 1
  // more, which every query may attend: its score is always 0, so a query
  // whose S keys are all masked attends only the appended keys.
  //   {.embed_dim = 8, .num_heads = 2, .add_bias_kv = true, .add_zero_attn = true}
  //   key (B, S, kdim) -> weights (B, H, T, S + 2)
  bool add_zero_attn = false;
  // batch_first: true (dagrad's default) takes and returns (B, T, E), as
  // PyTorch's batch_first=True; false takes query (T, B, E), key (S, B, kdim),
  // value (S, B, vdim) and returns output (T, B, E), PyTorch's default
  // layout. Masks and weights are batch-major either way, as in PyTorch.
  //   {.embed_dim = 8, .num_heads = 2, .batch_first = false}
  //   query (T, B, 8) -> output (T, B, 8), weights (B, H, T, S)
  bool batch_first = true;
  // attention: the fused op (the default) or the composed subgraph; the
  // same function (other dropout masks), parameters and checkpoints (banner).
  //   auto composed = MultiheadAttention::Create(
  //       g, "composed", {.embed_dim = 8, .num_heads = 2, .attention = AttentionPath::kComposed});
  AttentionPath attention = AttentionPath::kFused;
  // Initializers that replace PyTorch's (the banner's) where given:
  // in_proj_weight_init for in_proj_weight (or q/k/v_proj_weight),
  // bias_kv_init for bias_k and bias_v; the bias inits are unused without
  // `bias`, as LinearOptions::bias_init is.
  //   nn::MultiheadAttentionOptions small_out = {.embed_dim = 8, .num_heads = 2,
  //       .out_proj_weight_init = Initializer::Normal(0.0, 0.01)};
  std::optional<Initializer> in_proj_weight_init, in_proj_bias_init;
  std::optional<Initializer> out_proj_weight_init, out_proj_bias_init;
  std::optional<Initializer> bias_kv_init;
};

struct AttentionMask {
  Value keep;
  Value valid_lens;
  bool causal = false;
  Value bias;
};

enum class AttentionWeights { kNone, kPerHead, kAveraged };

// HeadsQkv is q, k, v split into heads, (B, H, L, Dh) each.
struct HeadsQkv {
  Value q, k, v;
};

// HeadsAttention: the heads' outputs merged, and the weights.
struct HeadsAttention {
  Value merged;   // (B, T, H * Dh)
  Value weights;  // (B, H, T, S), before dropout; null when not computed
};

// KvCache is one self-attention layer's cache of earlier positions, for
// generating a sequence a few tokens at a time (models::Generator keeps
// one per layer on its executor). The caller gives the past: the keys and
// values of P earlier slots, (B, H, P, Dh), and keep, bool (P), the slots
// that hold a position. The attention attends to the kept slots and,
// causally, to its own T new positions, and sets `keys` and `values` to
// the new positions' (B, H, T, Dh), which the caller stores in the cache.
// A rotary layer also needs `positions`, int64 (T): the new tokens' places
// in the sequence, at which it rotates their queries and keys (the cached
// keys were rotated at theirs, so a slot's index need not be its position).
//   // setup: Cache
//   nn::KvCache cache{.past_keys = past_k, .past_values = past_v, .keep = kept};
//   Value y = mha(x, cache).output;   // x (B, T, 8): y (B, T, 8), cache.keys (B, 2, T, 4)
struct KvCache {
  Value past_keys, past_values, keep;
  Value positions;  // int64 (T); read by rotary layers only
  Value keys, values;
};

struct AttentionOutput {
  Value output;   // (B, T, E); (T, B, E) when !batch_first
  Value weights;  // (B, H, T, S') per head, (B, T, S') averaged; null for kNone
};

class MultiheadAttention {
 public:
  using Options = MultiheadAttentionOptions;
  MultiheadAttention() = default;  // empty until assigned a layer made by Create
  // Create declares the parameters in `g` under scope `name` (relative to
  // g's current scope). InvalidArgument for a bad prefix (module.h), E or
  // H < 1, E % H != 0 (never a fractional head size), negative kdim/vdim,
  // dropout outside [0, kMaxDropout], or rotary with an odd head size or a
  // rotary_base that is not finite and > 0.
  static absl::StatusOr<MultiheadAttention> Create(Graph& g, absl::string_view name,
                                                   const MultiheadAttentionOptions& options);

  // Applies attention; ops are built under the module's scope. Returns error
  // Values (see Graph) for inputs of the wrong rank, width or batch size,
  // and, with appended keys, for a keep or bias whose last axis is neither
  // S nor 1. `scale` overrides 1/sqrt(Dh). With appended keys, valid_lens
  // and causal become keep-masks over the S keys (so a length outside
  // [0, S] is not an error there: it keeps all or none of the S keys).
  AttentionOutput operator()(Value query, Value key, Value value,
                             const AttentionMask& mask = {},
                             AttentionWeights weights = AttentionWeights::kNone,
                             std::optional<double> scale = std::nullopt) const;

  // Self-attention of x (B, T, E), the T positions after the cache's past,
  // over the kept past and causally over x; sets cache.keys and
  // cache.values (KvCache). An error Value as the call above, and for
  // batch_first false, add_bias_kv or add_zero_attn (whose key positions a
  // cache does not hold), rotary without cache.positions, and a past of the
  // wrong shape.
  AttentionOutput operator()(Value x, KvCache& cache) const;

  const MultiheadAttentionOptions& options() const { return options_; }
  int64_t head_dim() const { return options_.embed_dim / options_.num_heads; }
  std::vector<Value> parameters() const;
  NamedParameters named_parameters() const { return RelativeNames(scope_, parameters()); }

 private:
  // Projections are the in-projection's outputs: q (B, T, E), k and v
  // (B, S, E), or, for self-attention with the packed weight, qkv
  // (B, T, 3E) side by side (q, k, v null).
  struct Projections {
    Value qkv, q, k, v;
  };
  Value CheckInputs(Value query, Value key, Value value) const;
  Projections Project(Value query, Value key, Value value) const;
  // Heads splits the projections into heads (B, H, L, Dh), rotated and with
  // the appended keys when the options ask for them. Rotary rotates the
  // queries at the keys' last positions, or, given `positions` (a cache's
  // self-attention), both at those.
  HeadsQkv Heads(const Projections& p, Value positions = Value()) const;
  // Attend returns the heads' outputs merged (B, T, E), and the weights
  // when `weights` asks for them (the composed path).
  HeadsAttention Attend(const Projections& p, const SoftmaxMask& mask, double scale,
                        AttentionWeights weights) const;
  Value SplitHeads(Value x) const;  // (B, L, E) -> (B, H, L, Dh)
  Value AppendKeys(Value x, Value param) const;  // (B, H, S, Dh) -> (B, H, S', Dh)

  Graph* graph_ = nullptr;
  std::string scope_;
  MultiheadAttentionOptions options_;
  Value in_proj_weight_, q_proj_weight_, k_proj_weight_, v_proj_weight_;
  Value in_proj_bias_, bias_k_, bias_v_, out_weight_, out_bias_;
};

// The core MultiheadAttention shares with attention written around it
// (models::Gpt's, under GPT's parameter names): the heads' split
// (HeadsQkv) and the composed path (AttendHeads).
//
// SplitPackedHeads splits a packed projection qkv (B, T, 3E), q, k and v
// side by side, into `heads` heads: one permute, (3, B, H, T, Dh), whose
// three blocks are q, k and v (their gradients are concatenated back).
// An error Value for a qkv whose last axis is not a multiple of 3 * heads.
//   HeadsQkv h = SplitPackedHeads(qkv, 2);      // qkv (B, T, 24): h.q (B, 2, T, 4)
HeadsQkv SplitPackedHeads(Value qkv, int64_t heads);

// AppendPast puts the cache's past keys and values before heads.k and
// heads.v (the new positions'), after setting cache.keys and cache.values
// to those, and returns the mask: each new query sees every kept past slot
// and the new keys causally. Error Values in `heads` for a past that is
// not (B, H, P, Dh) beside the new keys, or a keep that is not bool (P).
//   // setup: Cache
//   KvCache cache{.past_keys = past_k, .past_values = past_v, .keep = kept};
//   SoftmaxMask mask = AppendPast(cache, h);   // h.k (B, 2, 3 + T, 4)
SoftmaxMask AppendPast(KvCache& cache, HeadsQkv& heads);

// AttendHeads returns merge_heads(dropout(masked_softmax(q·kᵀ, mask,
// scale)) · v) for q (B, H, T, Dh) and k, v (B, H, S, Dh); dropout p is
// applied in training runs only (ops/dropout.h). MatMul's and
// MaskedSoftmax's errors, in the Values.
//   // setup: SplitHeads
//   HeadsAttention a = AttendHeads(h.q, h.k, h.v, {.causal = true}, 0.5, 0.0);
//   // a.merged (B, T, 8), a.weights (B, 2, T, T)
HeadsAttention AttendHeads(Value q, Value k, Value v, const SoftmaxMask& mask, double scale,
                           double dropout);

// Converters from PyTorch's mask conventions, broadcastable to (B, H, T, S).
// Each returns an error Value, naming the mask, its dtype and shape, for a
// dtype or shape other than those listed.
//
// Bool masks (True = masked out) become dagrad keep-masks (True = may attend):
// KeepFromKeyPaddingMask: key_padding_mask bool (B, S) -> (B, 1, 1, S).
// KeepFromAttnMask: bool attn_mask (T, S) -> (T, S), or (B*H, T, S) ->
// (B, H, T, S) for `num_heads` H.
//   // setup: Masks
//   Value keep = KeepFromKeyPaddingMask(kpm);   // kpm bool (2, 7) -> (2, 1, 1, 7)
Value KeepFromKeyPaddingMask(Value key_padding_mask);
Value KeepFromAttnMask(Value attn_mask, int64_t num_heads);

// Float masks (added to the scores; -inf masks out) become dagrad biases:
// BiasFromAttnMask: float attn_mask (T, S) -> (T, S), or (B*H, T, S) ->
// (B, H, T, S) for `num_heads` H (row b*H + h is batch b, head h).
// BiasFromKeyPaddingMask: float key_padding_mask (B, S) -> (B, 1, 1, S).
// Float32 or float64, the dtype of the attention's parameters.
//   // setup: FloatMasks
//   Value bias = BiasFromAttnMask(am, 4);        // am float (8, 5, 7) -> (2, 4, 5, 7)
//   mha(q, k, v, {.bias = bias + BiasFromKeyPaddingMask(kpm)});  // both masks
Value BiasFromAttnMask(Value attn_mask, int64_t num_heads);
Value BiasFromKeyPaddingMask(Value key_padding_mask);

}  // namespace dagrad::nn

#endif  // DAGRAD_MODELS_NN_ATTENTION_H_
