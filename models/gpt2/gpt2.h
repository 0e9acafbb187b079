// models/gpt2/gpt2.h
//
// models::Gpt2, Hugging Face's GPT2LMHeadModel built from dagrad::nn layers
// with its parameter names and layouts, so that a pretrained GPT-2
// directory (models/gpt2/hf_checkpoint.h) loads as it is stored and
// dagrad's checkpoints and gradients carry HF's names.
//
//   x = drop(wte(tokens) + wpe(positions))           positions 0..T-1 by default
//   L x pre-norm block (ApplyGptBlock, models/gpt/gpt.h):
//     x = x + attn.resid_dropout(attn.c_proj(causal_attention(attn.c_attn(ln_1(x)))))
//     x = x + mlp.dropout(mlp.c_proj(act(mlp.c_fc(ln_2(x)))))   act: gelu_new (tanh GELU)
//   logits = ln_f(x) · wte.weightᵀ                   the head is TIED to wte
//
// The projections are HF's Conv1D: y = x·W + b with W stored (in, out) and
// multiplied as stored (no transposed copy). c_attn's output packs q, k
// and v along its last axis, H heads of Dh = E / H each, as
// CausalSelfAttention (models/gpt/gpt.h) reads it.
//
// The dropouts are GPT2Model's, at its places: drop is embd_pdrop,
// causal_attention drops its weights with attn_pdrop (attn.attn_dropout),
// and resid_dropout and mlp.dropout are resid_pdrop (Gpt2Config). They act
// only in training runs (RunOptions::training), as in transformers' train
// mode; evaluation and generation run without them (HF's eval mode). A
// dropout of 0 builds no op.
//
// Parameter names, in HF's state_dict order (E n_embd, F the MLP width):
//   transformer.wte.weight (vocab, E), transformer.wpe.weight (n_positions, E),
//   transformer.h.<l>.ln_1.{weight,bias} (E), .attn.c_attn.weight (E, 3E),
//   .attn.c_attn.bias (3E), .attn.c_proj.weight (E, E), .attn.c_proj.bias,
//   .ln_2.*, .mlp.c_fc.weight (E, F), .mlp.c_fc.bias (F), .mlp.c_proj.weight
//   (F, E), .mlp.c_proj.bias (E), transformer.ln_f.{weight,bias}.
// lm_head.weight is wte's: no parameter of its own, and its gradient is
// part of wte's. Initialisation is GPT-2's (models::Gpt2Std).
//
//   DAGRAD_ASSIGN_OR_RETURN(Gpt2 model, Gpt2::Create(g, {.vocab = 64, .positions = 16,
//                                                        .dim = 32, .heads = 4, .layers = 2}));
//   Value logits = model.Logits(g.Input("ids", DType::kInt64, {2, 16}));   // (2, 16, 64)

#ifndef DAGRAD_MODELS_GPT2_GPT2_H_
#define DAGRAD_MODELS_GPT2_GPT2_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "models/gpt/gpt.h"
#include "models/gpt2/hf_config.h"
#include "models/language_model.h"
#include "models/nn/nn.h"

namespace dagrad::models {

// Gpt2 is a LanguageModel: causal, with a KV cache.
class Gpt2 : public LanguageModel {
 public:
  Gpt2() = default;  // empty until assigned a model made by Create
  // Create declares the parameters under g's current scope; the errors of
  // Gpt2Config::Validate.
  static absl::StatusOr<Gpt2> Create(Graph& g, const Gpt2Config& config);
  // Builder returns a ModelBuilder that creates the Gpt2 of `config` (for
  // Generator and LmTrainer).
  static ModelBuilder Builder(const Gpt2Config& config);

  // tokens int (B, T), T <= n_positions -> logits (B, T, vocab) and the new
  // keys and values per layer; an error Value for other inputs, or a past
  // without one key and value per layer and a keep (P).
  GptOutputs Forward(Value tokens, const GptForwardOptions& options = {}) const;

  const Gpt2Config& config() const { return config_; }
  const std::vector<Value>& parameters() const override { return parameters_; }
  nn::NamedParameters named_parameters() const { return nn::RelativeNames(scope_, parameters_); }

  int64_t vocab() const override { return config_.vocab; }
  int64_t max_len() const override { return config_.positions; }
  std::string max_len_name() const override { return "n_positions"; }
  bool causal() const override { return true; }
  Value Logits(Value tokens, Value lengths = Value()) const override {
    return Forward(tokens).logits;
  }
  std::map<std::string, std::string> Metadata() const override { return config_.ToMetadata(); }
  std::optional<KvCacheShape> kv_cache() const override {
    return GptKvCache(config_.layers, config_.heads, config_.dim, config_.dtype);
  }
  Value ForwardCached(Value tokens, Value positions,
                      absl::Span<nn::KvCache> cache) const override {
    return Forward(tokens, {.positions = positions, .cache = cache}).logits;
  }

 private:
  // HF's Conv1D: y = x·weight + bias, weight (in, out) as stored.
  struct Conv1D {
    Value weight, bias;
    Value operator()(Value x) const;
  };
  struct Block {
    nn::LayerNorm ln_1, ln_2;
    Conv1D c_attn, attn_proj, c_fc, mlp_proj;
    GptBlockDropouts dropout;  // resid_pdrop; the weights' is CausalSelfAttention's
  };
  static absl::StatusOr<Block> CreateBlock(Graph& g, const Gpt2Config& c, int64_t l);
  Value ApplyBlock(const Block& block, Value x, int64_t l, const GptForwardOptions& options,
                   GptOutputs& out) const;
  absl::Status CheckInputs(Value tokens, absl::Span<nn::KvCache> cache) const;

  Graph* graph_ = nullptr;
  std::string scope_;
  Gpt2Config config_;
  nn::Activation activation_ = nn::Activation::kGeluTanh;
  nn::Embedding wte_, wpe_;
  nn::Dropout drop_;  // embd_pdrop
  std::vector<Block> blocks_;
  nn::LayerNorm ln_f_;
  nn::Linear lm_head_;
  std::vector<Value> parameters_;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT2_GPT2_H_
