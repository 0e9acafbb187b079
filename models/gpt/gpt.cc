#include "models/gpt/gpt.h"

#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/random_tensor.h"
#include "engine/status_macros.h"
#include "ops/attention.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"

namespace dagrad::models {
namespace {

constexpr double kInitStd = 0.02;  // GPT-2's

absl::Status MetadataError(absl::string_view key, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("checkpoint metadata: '", key, "' ", what));
}

}  // namespace

std::map<std::string, std::string> GptConfig::ToMetadata() const {
  return {{"model", "gpt"},
          {"vocab", absl::StrCat(vocab)},
          {"block_size", absl::StrCat(block_size)},
          {"dim", absl::StrCat(dim)},
          {"heads", absl::StrCat(heads)},
          {"layers", absl::StrCat(layers)},
          {"dropout", MetadataNumber(dropout)}};
}

absl::StatusOr<GptConfig> GptConfig::FromCheckpoint(const SafetensorsFile& checkpoint,
                                                     absl::string_view path) {
  return nn::ConfigFromCheckpoint<GptConfig, Gpt>(checkpoint, path, "transformer.h.");
}

absl::StatusOr<GptConfig> GptConfig::FromMetadata(
    const std::map<std::string, std::string>& m) {
  auto model = m.find("model");
  if (model == m.end() || model->second != "gpt") {
    return MetadataError(
        "model", model == m.end()
                     ? "is missing (expected gpt)"
                     : absl::StrCat("is '", model->second, "', expected gpt"));
  }
  GptConfig c;
  for (auto [key, field] :
       std::initializer_list<std::pair<const char*, int64_t*>>{
           {"vocab", &c.vocab},
           {"block_size", &c.block_size},
           {"dim", &c.dim},
           {"heads", &c.heads},
           {"layers", &c.layers}}) {
    auto it = m.find(key);
    if (it == m.end()) return MetadataError(key, "is missing");
    if (!absl::SimpleAtoi(it->second, field)) {
      return MetadataError(
          key, absl::StrCat("is not an integer: '", it->second, "'"));
    }
  }
  c.dropout = 0.0;
  if (auto it = m.find("dropout");
      it != m.end() && !absl::SimpleAtod(it->second, &c.dropout)) {
    return MetadataError("dropout",
                         absl::StrCat("is not a number: '", it->second, "'"));
  }
  DAGRAD_RETURN_IF_ERROR(c.Validate());
  return c;
}

absl::Status GptConfig::Validate() const {
  if (vocab < 2 || block_size < 1 || dim < 1 || heads < 1 || layers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpt config: need vocab >= 2 and block_size, dim, heads, "
                     "layers >= 1; got vocab ",
                     vocab, ", block_size ", block_size, ", dim ", dim,
                     ", heads ", heads, ", layers ", layers));
  }
  if (layers > kMaxLayers) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpt config: layers must be <= ", kMaxLayers, ", got ", layers));
  }
  if (dim % heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpt config: dim ", dim, " is not divisible by heads ", heads));
  }
  if (!IsFloating(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpt config: dtype must be float32 or float64, got ",
                     DTypeName(dtype)));
  }
  if (absl::Status st = ValidateDropout(dropout); !st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpt config: ", st.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Gpt::Block> Gpt::CreateBlock(Graph& g, const GptConfig& c,
                                            int64_t l) {
  Graph::Scope scope(g, absl::StrCat("h/", l));
  const Initializer normal = Initializer::Normal(0.0, kInitStd);
  const Initializer proj =
      Initializer::Normal(0.0, kInitStd / std::sqrt(2.0 * c.layers));
  auto linear = [&](absl::string_view name, int64_t in, int64_t out,
                    Initializer init) {
    return nn::Linear::Create(g, name,
                              {.in_features = in,
                               .out_features = out,
                               .dtype = c.dtype,
                               .weight_init = init,
                               .bias_init = Initializer::Zeros()});
  };
  const nn::LayerNormOptions norm{.normalized_shape = c.dim, .dtype = c.dtype};
  Block b;
  DAGRAD_ASSIGN_OR_RETURN(b.ln_1, nn::LayerNorm::Create(g, "ln_1", norm));
  DAGRAD_ASSIGN_OR_RETURN(b.c_attn,
                          linear("attn/c_attn", c.dim, 3 * c.dim, normal));
  DAGRAD_ASSIGN_OR_RETURN(b.attn_proj,
                          linear("attn/c_proj", c.dim, c.dim, proj));
  DAGRAD_ASSIGN_OR_RETURN(b.ln_2, nn::LayerNorm::Create(g, "ln_2", norm));
  DAGRAD_ASSIGN_OR_RETURN(b.c_fc, linear("mlp/c_fc", c.dim, 4 * c.dim, normal));
  DAGRAD_ASSIGN_OR_RETURN(b.mlp_proj,
                          linear("mlp/c_proj", 4 * c.dim, c.dim, proj));
  DAGRAD_ASSIGN_OR_RETURN(b.dropout, GptBlockDropouts::Create(g, c.dropout));
  return b;
}

absl::StatusOr<Gpt> Gpt::Create(Graph& g, const GptConfig& c) {
  DAGRAD_RETURN_IF_ERROR(c.Validate());
  Gpt m;
  m.graph_ = &g;
  m.scope_ = g.scope();
  m.config_ = c;
  {
    Graph::Scope transformer(g, "transformer");
    const Initializer normal = Initializer::Normal(0.0, kInitStd);
    DAGRAD_ASSIGN_OR_RETURN(m.wte_,
                            nn::Embedding::Create(g, "wte",
                                                  {.num_embeddings = c.vocab,
                                                   .embedding_dim = c.dim,
                                                   .init = normal,
                                                   .dtype = c.dtype}));
    DAGRAD_ASSIGN_OR_RETURN(
        m.wpe_, nn::Embedding::Create(g, "wpe",
                                      {.num_embeddings = c.block_size,
                                       .embedding_dim = c.dim,
                                       .init = normal,
                                       .dtype = c.dtype}));
    DAGRAD_ASSIGN_OR_RETURN(m.drop_, nn::Dropout::Create(g, "drop", c.dropout));
    for (int64_t l = 0; l < c.layers; ++l) {
      DAGRAD_ASSIGN_OR_RETURN(Block block, CreateBlock(g, c, l));
      m.blocks_.push_back(std::move(block));
    }
    DAGRAD_ASSIGN_OR_RETURN(
        m.ln_f_, nn::LayerNorm::Create(
                     g, "ln_f", {.normalized_shape = c.dim, .dtype = c.dtype}));
  }
  DAGRAD_ASSIGN_OR_RETURN(m.lm_head_,
                          nn::Linear::Tied(g, "lm_head", m.wte_.weight()));
  m.parameters_ =
      nn::ConcatParameters({m.wte_.parameters(), m.wpe_.parameters()});
  for (const Block& b : m.blocks_) {
    for (const auto& layer :
         {b.ln_1.parameters(), b.c_attn.parameters(), b.attn_proj.parameters(),
          b.ln_2.parameters(), b.c_fc.parameters(), b.mlp_proj.parameters()}) {
      m.parameters_.insert(m.parameters_.end(), layer.begin(), layer.end());
    }
  }
  for (const Value& p : m.ln_f_.parameters()) m.parameters_.push_back(p);
  return m;
}

Value CausalSelfAttention(Value qkv, int64_t l, const CausalAttentionOptions& attention,
                          const GptForwardOptions& options, GptOutputs& out) {
  if (!qkv.ok()) return qkv;
  if (attention.heads < 1 || qkv.rank() != 3 || qkv.dim(-1) % (3 * attention.heads) != 0) {
    return qkv.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "causal self-attention: qkv must be (B, T, 3E) with E a multiple of heads ",
        attention.heads, " >= 1, got ", qkv.shape().ToString())));
  }
  const int64_t H = attention.heads, Dh = qkv.dim(-1) / (3 * H);
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  nn::HeadsQkv heads = nn::SplitPackedHeads(qkv, H);  // (B, H, T, Dh)
  out.keys.push_back(heads.k);
  out.values.push_back(heads.v);
  SoftmaxMask mask{.causal = true};
  if (!options.cache.empty()) mask = nn::AppendPast(options.cache[l], heads);
  if (attention.path == nn::AttentionPath::kComposed || options.keep_attention) {
    nn::HeadsAttention attended =
        nn::AttendHeads(heads.q, heads.k, heads.v, mask, scale, attention.dropout);
    if (options.keep_attention) out.attention.push_back(attended.weights);
    return attended.merged;
  }
  // Fused (ops/attention.h); without a cache, q, k and v are read in place
  // from c_attn's output.
  const AttentionOptions fused = {.heads = H, .scale = scale, .dropout = attention.dropout};
  return options.cache.empty() ? PackedAttention(qkv, mask, fused)
                               : dagrad::Attention(heads.q, heads.k, heads.v, mask, fused);
}

absl::StatusOr<GptBlockDropouts> GptBlockDropouts::Create(Graph& g, double p) {
  GptBlockDropouts d;
  DAGRAD_ASSIGN_OR_RETURN(d.attn, nn::Dropout::Create(g, "attn/resid_dropout", p));
  DAGRAD_ASSIGN_OR_RETURN(d.mlp, nn::Dropout::Create(g, "mlp/dropout", p));
  return d;
}

std::string GptBlockScope(absl::string_view model_scope, int64_t l) {
  return absl::StrCat(model_scope, model_scope.empty() ? "" : "/", "transformer/h/", l);
}

Value Gpt::ApplyBlock(const Block& b, Value x, int64_t l,
                      const GptForwardOptions& options, GptOutputs& out) const {
  Graph::ScopePathGuard in_scope(*graph_, GptBlockScope(scope_, l));
  const CausalAttentionOptions attention = {
      .heads = config_.heads, .dropout = config_.dropout, .path = config_.attention};
  return ApplyGptBlock(b, x, l, attention, nn::Activation::kGelu, options, out);
}

GptOutputs Gpt::Forward(Value tokens, const GptForwardOptions& options) const {
  GptOutputs out;
  if (graph_ == nullptr) return {nn::NotCreated(tokens, "Gpt")};
  Graph& g = *graph_;
  if (!tokens.ok()) return {tokens};
  const bool cache_ok =
      options.cache.empty() || static_cast<int64_t>(options.cache.size()) == config_.layers;
  if (tokens.rank() != 2 || tokens.dim(1) > config_.block_size ||
      !IsInteger(tokens.dtype()) || !cache_ok) {
    return {g.Error(absl::InvalidArgumentError(absl::StrCat(
        "gpt: tokens must be int (B, T) with T <= block_size ", config_.block_size,
        " and a KV cache must have one nn::KvCache per layer (", config_.layers, "), got ",
        DTypeName(tokens.dtype()), " ", tokens.shape().ToString(), " and ",
        options.cache.size())))};
  }
  const int64_t T = tokens.dim(1);
  Value positions = options.positions.is_null()
                        ? Arange(g, 0, T, 1, DType::kInt64)
                        : options.positions;
  Value x = drop_(wte_(tokens) + wpe_(positions));
  for (size_t l = 0; l < blocks_.size(); ++l) {
    x = ApplyBlock(blocks_[l], x, static_cast<int64_t>(l), options, out);
  }
  out.logits = lm_head_(ln_f_(x));
  return out;
}

ModelBuilder Gpt::Builder(const GptConfig& config) {
  return [config](Graph& g) -> absl::StatusOr<std::unique_ptr<LanguageModel>> {
    DAGRAD_ASSIGN_OR_RETURN(Gpt model, Gpt::Create(g, config));
    return std::make_unique<Gpt>(std::move(model));
  };
}

KvCacheShape GptKvCache(int64_t layers, int64_t heads, int64_t dim, DType dtype) {
  return {.layers = layers, .heads = heads, .head_dim = dim / heads, .dtype = dtype};
}

std::optional<KvCacheShape> Gpt::kv_cache() const {
  return GptKvCache(config_.layers, config_.heads, config_.dim, config_.dtype);
}

Value Gpt::ForwardCached(Value tokens, Value positions, absl::Span<nn::KvCache> cache) const {
  return Forward(tokens, {.positions = positions, .cache = cache}).logits;
}

std::optional<double> Gpt2Std(absl::string_view name, const Shape& shape, int64_t layers) {
  if (shape.rank() >= 2) {
    for (absl::string_view residual :
         {"c_proj.weight", "out_proj.weight", "linear2.weight", "fc2.weight"}) {
      if (absl::EndsWith(name, residual)) return kInitStd / std::sqrt(2.0 * layers);
    }
    return kInitStd;
  }
  if (absl::EndsWith(name, "bias")) return 0.0;
  return std::nullopt;
}

absl::Status InitGpt2(Executor& exec, const std::vector<Value>& parameters, int64_t layers) {
  if (layers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("InitGpt2: layers must be >= 1, got ", layers));
  }
  ParameterRule gpt2 = [layers](const std::string& name,
                                const Value& p) -> std::optional<Initializer> {
    const std::optional<double> sd = Gpt2Std(name, p.shape(), layers);
    if (!sd) return std::nullopt;
    return *sd > 0 ? Initializer::Normal(0.0, *sd) : Initializer::Zeros();
  };
  return InitParametersBy(exec, parameters, gpt2).status();
}

}  // namespace dagrad::models
