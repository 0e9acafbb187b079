#include "models/transformer.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "models/positional_encoding.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/layer_norm.h"
#include "ops/matmul.h"

namespace dagrad::models {

LinearLayer::LinearLayer(Graph& g, absl::string_view name, int64_t in, int64_t out, bool bias) {
  Graph::Scope scope(g, name);
  const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(in, 1)));
  weight_ = g.Parameter("weight", {out, in}, Initializer::Uniform(-bound, bound));
  if (bias) bias_ = g.Parameter("bias", {out}, Initializer::Uniform(-bound, bound));
}

Value LinearLayer::operator()(Value x) const { return Linear(x, weight_, bias_); }

LayerNormLayer::LayerNormLayer(Graph& g, absl::string_view name, int64_t dim, double eps)
    : eps_(eps) {
  Graph::Scope scope(g, name);
  weight_ = g.Parameter("weight", {dim}, Initializer::Ones());
  bias_ = g.Parameter("bias", {dim}, Initializer::Zeros());
}

Value LayerNormLayer::operator()(Value x) const { return LayerNorm(x, weight_, bias_, eps_); }

absl::StatusOr<TransformerEncoderLayer> TransformerEncoderLayer::Create(
    Graph& g, absl::string_view name, const EncoderLayerConfig& c) {
  Graph::Scope scope(g, name);
  auto attn = MultiHeadAttention::Create(
      g, "self_attn", {.embed_dim = c.dim, .num_heads = c.heads, .dropout = c.dropout});
  if (!attn.ok()) return attn.status();
  // Declared one statement each: the order fixes the parameters' order
  // (PyTorch's state_dict order) and node ids.
  LinearLayer linear1(g, "linear1", c.dim, c.ffn);
  LinearLayer linear2(g, "linear2", c.ffn, c.dim);
  LayerNormLayer norm1(g, "norm1", c.dim, c.eps);
  LayerNormLayer norm2(g, "norm2", c.dim, c.eps);
  return TransformerEncoderLayer(*std::move(attn), linear1, linear2, norm1, norm2, c, g.scope());
}

Value TransformerEncoderLayer::operator()(Value x, const AttentionMask& mask,
                                          Value* weights) const {
  if (!x.ok()) return x;
  Graph& g = *x.graph();
  const std::string saved = g.SetScopePath(scope_);
  const double p = config_.dropout;
  auto dropout = [p](Value v) { return p > 0 ? Dropout(v, p) : v; };
  AttentionOutput sa = self_attn_(x, x, x, mask,
                                  weights ? AttentionWeights::kPerHead : AttentionWeights::kNone);
  if (weights != nullptr) *weights = sa.weights;
  x = norm1_(Add(x, dropout(sa.output)));
  x = norm2_(Add(x, dropout(linear2_(dropout(Relu(linear1_(x)))))));
  g.SetScopePath(saved);
  return x;
}

std::map<std::string, std::string> ToyConfig::ToMetadata() const {
  return {{"vocab", absl::StrCat(vocab)},   {"max_len", absl::StrCat(max_len)},
          {"dim", absl::StrCat(dim)},       {"heads", absl::StrCat(heads)},
          {"layers", absl::StrCat(layers)}, {"ffn", absl::StrCat(ffn)},
          {"dropout", absl::StrCat(dropout)}};
}

absl::StatusOr<ToyConfig> ToyConfig::FromMetadata(const std::map<std::string, std::string>& m) {
  ToyConfig c;
  for (auto [key, field] : std::initializer_list<std::pair<const char*, int64_t*>>{
           {"vocab", &c.vocab}, {"max_len", &c.max_len}, {"dim", &c.dim},
           {"heads", &c.heads}, {"layers", &c.layers}, {"ffn", &c.ffn}}) {
    auto it = m.find(key);
    if (it == m.end() || !absl::SimpleAtoi(it->second, field)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint metadata: '", key, "' is ",
          it == m.end() ? "missing" : absl::StrCat("not an integer: '", it->second, "'")));
    }
  }
  auto it = m.find("dropout");
  if (it != m.end() && !absl::SimpleAtod(it->second, &c.dropout)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint metadata: 'dropout' is not a number: '", it->second, "'"));
  }
  if (it == m.end()) c.dropout = 0.0;
  if (absl::Status st = c.Validate(); !st.ok()) return st;
  return c;
}

absl::Status ToyConfig::Validate() const {
  if (vocab < 2 || max_len < 1 || dim < 2 || heads < 1 || layers < 1 || ffn < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model config: need vocab >= 2 and max_len, dim, heads, layers, ffn >= 1; got vocab ",
        vocab, ", max_len ", max_len, ", dim ", dim, ", heads ", heads, ", layers ", layers,
        ", ffn ", ffn));
  }
  if (dim % heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: dim ", dim, " is not divisible by heads ", heads));
  }
  if (dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: dim must be even for the sinusoidal encoding, got ", dim));
  }
  if (absl::Status st = ValidateDropout(dropout); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("model config: ", st.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ToyTransformer> ToyTransformer::Create(Graph& g, const ToyConfig& c) {
  if (absl::Status st = c.Validate(); !st.ok()) return st;
  ToyTransformer m;
  m.graph_ = &g;
  m.config_ = c;
  {
    Graph::Scope scope(g, "embedding");
    // N(0, 1/dim): after the sqrt(dim) scale the embeddings have unit size,
    // like the positional encoding (the reference explains why).
    m.embedding_ = g.Parameter("weight", {c.vocab, c.dim},
                               Initializer::Normal(0.0, 1.0 / std::sqrt(double(c.dim))));
  }
  m.parameters_.push_back(m.embedding_);
  {
    Graph::Scope encoder(g, "encoder");
    Graph::Scope layers(g, "layers");
    for (int64_t l = 0; l < c.layers; ++l) {
      auto layer = TransformerEncoderLayer::Create(
          g, absl::StrCat(l),
          {.dim = c.dim, .heads = c.heads, .ffn = c.ffn, .dropout = c.dropout});
      if (!layer.ok()) return layer.status();
      m.layers_.push_back(*std::move(layer));
    }
  }
  m.head_ = LinearLayer(g, "head", c.dim, c.vocab);
  // The reference's state_dict order: embedding, each layer's parameters
  // in creation order, head.
  for (const Value& v : g.Parameters()) {
    if (v != m.embedding_) m.parameters_.push_back(v);
  }
  for (const Value& v : m.parameters_) {
    if (!v.ok()) return v.status();
  }
  return m;
}

ToyOutputs ToyTransformer::operator()(Value tokens, Value lengths, bool keep_attention) const {
  Graph& g = *graph_;
  ToyOutputs out;
  if (!tokens.ok()) return {tokens, {}};
  if (tokens.rank() != 2 || tokens.dim(1) > config_.max_len || !IsInteger(tokens.dtype())) {
    return {g.Error(absl::InvalidArgumentError(absl::StrCat(
                "toy transformer: tokens must be int (B, T) with T <= max_len ",
                config_.max_len, ", got ", DTypeName(tokens.dtype()), " ",
                tokens.shape().ToString()))),
            {}};
  }
  Value x;
  {
    Graph::Scope scope(g, "embedding");
    x = Scale(Embedding(embedding_, tokens), std::sqrt(static_cast<double>(config_.dim)));
  }
  x = AddSinusoidal(x, config_.dropout);
  {
    Graph::Scope encoder(g, "encoder");
    for (const TransformerEncoderLayer& layer : layers_) {
      Value weights;
      x = layer(x, {.valid_lens = lengths}, keep_attention ? &weights : nullptr);
      if (keep_attention) out.attention.push_back(weights);
    }
  }
  {
    Graph::Scope scope(g, "head");
    out.logits = head_(x);
  }
  return out;
}

}  // namespace dagrad::models
