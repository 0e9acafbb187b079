// models/gpt/gpt.h
//
// models::Gpt, a decoder-only (causal) transformer language model built from
// dagrad::nn layers: the model of tools/reference/gpt.py, with the same
// function, parameter names, initialisation and checkpoint layout, so its
// checkpoints move both ways with PyTorch.
//
//   x = drop(wte(tokens) + wpe(positions))           positions 0..T-1 by default
//   L x pre-norm block (ApplyGptBlock):
//     x = x + attn.resid_dropout(attn.c_proj(causal_attention(attn.c_attn(ln_1(x)))))
//     x = x + mlp.dropout(mlp.c_proj(gelu(mlp.c_fc(ln_2(x)))))   exact GELU, 4 x dim
//   logits = ln_f(x) · wte.weightᵀ                   the head is TIED to wte
// Every dropout is GptConfig::dropout (causal_attention's on its weights),
// active only in training runs (RunOptions::training).
//
// The head is nn::Linear::Tied(g, "lm_head", wte.weight()): one parameter
// used twice, whose gradient is the sum of both uses; parameters() lists it
// once, as transformer.wte.weight, and so does a checkpoint.
//
// Parameter names (Parameter paths with '/' for '.'), in state_dict order:
//   transformer.wte.weight (vocab, dim), transformer.wpe.weight (block_size,
//   dim), transformer.h.<l>.ln_1.{weight,bias}, .attn.c_attn.{weight (3 dim,
//   dim), bias}, .attn.c_proj.{weight,bias}, .ln_2.*, .mlp.c_fc.{weight (4 dim,
//   dim), bias}, .mlp.c_proj.{weight,bias}, transformer.ln_f.{weight,bias}.
// The attention is the fused op (ops/attention.h, reading q, k, v in place
// from c_attn's output) or, with GptConfig::attention = kComposed,
// nn::MultiheadAttention's composed core (nn::SplitPackedHeads,
// nn::AttendHeads), around GPT's own projections, whose names are GPT's
// (c_attn, c_proj), not torch.nn's.
// Initialisation (GPT-2's): matrices N(0, 0.02), each c_proj.weight
// N(0, 0.02 / sqrt(2 layers)), biases 0, LayerNorm weights 1.
//
//   // setup: GptShapes
//   GptConfig config{.block_size = 64, .dim = 128, .heads = 4, .layers = 4};
//   DAGRAD_ASSIGN_OR_RETURN(Gpt model, Gpt::Create(g, config));
//   Value tokens = g.Input("tokens", DType::kInt64, {8, 64});
//   Value logits = model(tokens);                       // (8, 64, 256)
//   Value loss = CrossEntropy(logits, targets);         // targets -100 ignored
//
// Incremental decoding (a KV cache) uses Forward with `cache`: per layer
// the keys and values of earlier positions (nn::KvCache), and the
// positions of the new tokens.
//   // setup: GptCache
//   GptOutputs out = model.Forward(token, {.positions = pos, .cache = absl::MakeSpan(cache)});
//   // out.logits (B, 1, vocab); out.keys[l], out.values[l] (B, H, 1, Dh)

#ifndef DAGRAD_MODELS_GPT_GPT_H_
#define DAGRAD_MODELS_GPT_GPT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/io/safetensors.h"
#include "models/language_model.h"
#include "models/nn/nn.h"
#include "ops/elementwise.h"

namespace dagrad::models {

struct GptConfig {
  int64_t vocab = 256;
  int64_t block_size = 64;  // the longest context (positions)
  int64_t dim = 128;
  int64_t heads = 4;
  int64_t layers = 4;
  // The most layers Validate takes: the graph is built, node by node, before
  // the executor can check its memory, so a mistyped count must stop here.
  static constexpr int64_t kMaxLayers = 1024;
  double dropout = 0.0;
  DType dtype = DType::kFloat32;  // float64 for gradient checks
  // attention: the fused op or the composed subgraph (nn::AttentionPath),
  // in training and in generation alike; not in the metadata (checkpoints
  // are the same either way). keep_attention takes the composed path.
  nn::AttentionPath attention = nn::AttentionPath::kFused;

  // Metadata strings: model=gpt and the reference's keys (vocab, block_size,
  // dim, heads, layers, dropout).
  std::map<std::string, std::string> ToMetadata() const;
  // InvalidArgument naming a missing or malformed key, or a model other
  // than gpt, or a config that Validate rejects.
  static absl::StatusOr<GptConfig> FromMetadata(
      const std::map<std::string, std::string>& m);
  // FromCheckpoint: FromMetadata of the checkpoint at `path` (its errors
  // prefixed with the path), once the file holds exactly the tensors of the
  // model it describes (nn::ConfigFromCheckpoint: InvalidArgument naming
  // a tensor missing, of another shape, or that the metadata does not
  // account for).
  static absl::StatusOr<GptConfig> FromCheckpoint(const SafetensorsFile& checkpoint,
                                                  absl::string_view path);
  // Validate: vocab >= 2, other sizes >= 1, dim % heads == 0, dropout as
  // ValidateDropout, dtype float.
  absl::Status Validate() const;
};

struct GptForwardOptions {
  Value positions;  // int64 (T): the new tokens' positions; null: 0..T-1
  absl::Span<nn::KvCache> cache;  // per layer; empty: no earlier positions
  bool keep_attention = false;
};

struct GptOutputs {
  Value logits;                     // (B, T, vocab)
  std::vector<Value> keys, values;  // per layer, the new tokens' (B, H, T, Dh)
  std::vector<Value> attention;     // per layer (B, H, T, P + T), when asked
};

// How a GPT block's heads attend (Gpt's config, and models::Gpt2's).
struct CausalAttentionOptions {
  int64_t heads = 1;
  double dropout = 0.0;  // on the attention weights
  nn::AttentionPath path = nn::AttentionPath::kFused;
};

// CausalSelfAttention returns the merged heads (B, T, E) of a GPT block's
// causal self-attention over qkv (B, T, 3E), c_attn's output: q, k and v
// packed along the last axis, each H heads of Dh = E / H, scale
// 1/sqrt(Dh). With options.cache, the queries attend to layer l's cached
// keys and values (the kept slots) before the new ones. Appends the new
// keys and values (B, H, T, Dh), and with options.keep_attention the
// weights, to `out`. The attention of Gpt and models::Gpt2.
//
//   GptOutputs out;
//   Value merged = CausalSelfAttention(qkv, 0, {.heads = 2}, {}, out);   // qkv (B, T, 24)
Value CausalSelfAttention(Value qkv, int64_t l, const CausalAttentionOptions& attention,
                          const GptForwardOptions& options, GptOutputs& out);

// GptBlockDropouts are a GPT block's dropouts on its two residual branches,
// at Hugging Face's GPT-2 places and names (resid_pdrop there): on the
// attention's c_proj output (attn/resid_dropout) and the MLP's
// (mlp/dropout). Create declares them under g's current scope (a block's);
// InvalidArgument for p outside [0, kMaxDropout]. With p = 0 they build no
// op.
struct GptBlockDropouts {
  nn::Dropout attn, mlp;
  static absl::StatusOr<GptBlockDropouts> Create(Graph& g, double p);
};

// GptBlockScope is the scope of block l of a GPT model declared under
// `model_scope`: "<model_scope>/transformer/h/<l>".
std::string GptBlockScope(absl::string_view model_scope, int64_t l);

// ApplyGptBlock returns block l of Gpt or models::Gpt2 applied to x
// (B, T, E), pre-norm:
//   x = x + dropout.attn(attn_proj(CausalSelfAttention(c_attn(ln_1(x)))))
//   x = x + dropout.mlp(mlp_proj(activation(c_fc(ln_2(x)))))
// `block` has the layers ln_1, c_attn, attn_proj, ln_2, c_fc, mlp_proj
// (each callable on a Value) and `dropout` (GptBlockDropouts); the new keys
// and values (and weights) are appended to `out`. The attention's
// dropout is attention.dropout.
template <typename Block>
Value ApplyGptBlock(const Block& block, Value x, int64_t l, const CausalAttentionOptions& attention,
                    nn::Activation activation, const GptForwardOptions& options,
                    GptOutputs& out) {
  const Value attended =
      CausalSelfAttention(block.c_attn(block.ln_1(x)), l, attention, options, out);
  x = x + block.dropout.attn(block.attn_proj(attended));
  return x + block.dropout.mlp(block.mlp_proj(nn::Activate(block.c_fc(block.ln_2(x)), activation)));
}

// GptKvCache is the KV cache of a GPT of `layers` blocks, `heads` heads
// over width `dim`: per layer (1, heads, P, dim / heads) of `dtype`.
KvCacheShape GptKvCache(int64_t layers, int64_t heads, int64_t dim, DType dtype);

// Gpt is a LanguageModel: causal, with a KV cache.
class Gpt : public LanguageModel {
 public:
  Gpt() = default;  // empty until assigned a model made by Create
  // Create declares the parameters under g's current scope. The errors of
  // GptConfig::Validate.
  static absl::StatusOr<Gpt> Create(Graph& g, const GptConfig& config);
  // Builder returns a ModelBuilder that creates the Gpt of `config` (for
  // Generator and LmTrainer, which build the model in a graph of their own).
  static ModelBuilder Builder(const GptConfig& config);

  // tokens int (B, T), T <= block_size -> logits (B, T, vocab); an error
  // Value for other shapes or dtypes.
  Value operator()(Value tokens) const { return Forward(tokens).logits; }
  GptOutputs Forward(Value tokens, const GptForwardOptions& options = {}) const;

  const GptConfig& config() const { return config_; }
  // The reference's state_dict order, the tied weight once.
  const std::vector<Value>& parameters() const override { return parameters_; }

  // LanguageModel: Logits ignores lengths (causal: padding at the end
  // changes nothing before it); Metadata is config().ToMetadata().
  int64_t vocab() const override { return config_.vocab; }
  int64_t max_len() const override { return config_.block_size; }
  std::string max_len_name() const override { return "block_size"; }
  bool causal() const override { return true; }
  Value Logits(Value tokens, Value lengths = Value()) const override { return (*this)(tokens); }
  std::map<std::string, std::string> Metadata() const override { return config_.ToMetadata(); }
  std::optional<KvCacheShape> kv_cache() const override;
  Value ForwardCached(Value tokens, Value positions,
                      absl::Span<nn::KvCache> cache) const override;
  nn::NamedParameters named_parameters() const {
    return nn::RelativeNames(scope_, parameters_);
  }

 private:
  struct Block {
    nn::LayerNorm ln_1, ln_2;
    nn::Linear c_attn, attn_proj, c_fc, mlp_proj;
    GptBlockDropouts dropout;  // the weights' dropout: CausalSelfAttention's
  };
  static absl::StatusOr<Block> CreateBlock(Graph& g, const GptConfig& c,
                                           int64_t l);
  // One block (ApplyGptBlock); appends the new keys and values (and
  // weights) to `out`.
  Value ApplyBlock(const Block& block, Value x, int64_t l,
                   const GptForwardOptions& options, GptOutputs& out) const;

  Graph* graph_ = nullptr;
  std::string scope_;
  GptConfig config_;
  nn::Embedding wte_, wpe_;
  nn::Dropout drop_;
  std::vector<Block> blocks_;
  nn::LayerNorm ln_f_;
  nn::Linear lm_head_;
  std::vector<Value> parameters_;
};

// Gpt2Std returns the standard deviation GPT-2's initialisation (nanoGPT's
// _init_weights) gives the parameter `name` (a checkpoint name) of `shape`
// in a model of `layers` blocks, or nullopt where it leaves PyTorch's:
//   rank >= 2 (linear weights, embeddings)              0.02
//   ... whose name ends c_proj.weight, out_proj.weight,
//   linear2.weight or fc2.weight (a residual branch's
//   last projection: GPT's, torch.nn's, timm's names)   0.02 / sqrt(2 layers)
//   rank 1 named *bias (linear and LayerNorm biases)    0 (a std of 0)
//   other rank-1 (LayerNorm weights)                    nullopt: stays 1
//
//   std::optional<double> s = Gpt2Std("h.0.mlp.c_proj.weight", {64, 256}, 2);   // 0.01
std::optional<double> Gpt2Std(absl::string_view name, const Shape& shape, int64_t layers);

// InitGpt2 re-initialises `parameters` held by `exec` as GPT-2 does:
// N(0, Gpt2Std) for each with a std, zeros for the std of 0, in one call
// for any model built from dagrad::nn layers (models::Gpt is created so).
// InvalidArgument: layers < 1, and InitParameter's errors (engine/
// random_tensor.h), before any parameter is written.
//
//   Graph g;
//   DAGRAD_ASSIGN_OR_RETURN(nn::TransformerBlock block,
//       nn::TransformerBlock::Create(g, "h/0", {.d_model = 8, .nhead = 2}));
//   Executor exec(g);
//   DAGRAD_RETURN_IF_ERROR(models::InitGpt2(exec, g.Parameters(), /*layers=*/1));
absl::Status InitGpt2(Executor& exec, const std::vector<Value>& parameters, int64_t layers);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT_GPT_H_
