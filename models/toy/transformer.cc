#include "models/toy/transformer.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/status_macros.h"
#include "models/nn/positional_encoding.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"

namespace dagrad::models {

std::map<std::string, std::string> ToyConfig::ToMetadata() const {
  return {{"vocab", absl::StrCat(vocab)},   {"max_len", absl::StrCat(seq_len)},
          {"dim", absl::StrCat(dim)},       {"heads", absl::StrCat(heads)},
          {"layers", absl::StrCat(layers)}, {"ffn", absl::StrCat(ffn)},
          {"dropout", MetadataNumber(dropout)}};
}

absl::StatusOr<ToyConfig> ToyConfig::FromCheckpoint(const SafetensorsFile& checkpoint,
                                                     absl::string_view path) {
  return nn::ConfigFromCheckpoint<ToyConfig, ToyTransformer>(checkpoint, path, "encoder.layers.");
}

absl::StatusOr<ToyConfig> ToyConfig::FromMetadata(const std::map<std::string, std::string>& m) {
  ToyConfig c;
  for (auto [key, field] : std::initializer_list<std::pair<const char*, int64_t*>>{
           {"vocab", &c.vocab}, {"max_len", &c.seq_len}, {"dim", &c.dim},
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
  if (vocab < 2 || seq_len < 1 || dim < 2 || heads < 1 || layers < 1 || ffn < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model config: need vocab >= 2 and seq_len, dim, heads, layers, ffn >= 1; got vocab ",
        vocab, ", seq_len ", seq_len, ", dim ", dim, ", heads ", heads, ", layers ", layers,
        ", ffn ", ffn));
  }
  if (layers > kMaxLayers) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: layers must be <= ", kMaxLayers, ", got ", layers));
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
  DAGRAD_RETURN_IF_ERROR(c.Validate());
  ToyTransformer m;
  m.graph_ = &g;
  m.scope_ = g.scope();
  m.config_ = c;
  // N(0, 1/dim): after the sqrt(dim) scale the embeddings have unit size,
  // like the positional encoding (the reference explains why).
  DAGRAD_ASSIGN_OR_RETURN(
      m.embedding_,
      nn::Embedding::Create(g, "embedding",
                            {.num_embeddings = c.vocab, .embedding_dim = c.dim,
                             .init = Initializer::Normal(0.0, 1.0 / std::sqrt(double(c.dim)))}));
  for (int64_t l = 0; l < c.layers; ++l) {
    DAGRAD_ASSIGN_OR_RETURN(
        nn::TransformerBlock layer,
        nn::TransformerBlock::Create(g, absl::StrCat("encoder/layers/", l),
                                     {.d_model = c.dim, .nhead = c.heads,
                                      .dim_feedforward = c.ffn, .dropout = c.dropout,
                                      .attention = c.attention}));
    m.layers_.push_back(std::move(layer));
  }
  DAGRAD_ASSIGN_OR_RETURN(
      m.head_, nn::Linear::Create(g, "head", {.in_features = c.dim, .out_features = c.vocab}));
  // The reference's state_dict order: embedding, each layer's parameters
  // in creation order, head.
  m.parameters_ = m.embedding_.parameters();
  for (const nn::TransformerBlock& layer : m.layers_) {
    for (const Value& p : layer.parameters()) m.parameters_.push_back(p);
  }
  for (const Value& p : m.head_.parameters()) m.parameters_.push_back(p);
  return m;
}

ToyOutputs ToyTransformer::operator()(Value tokens, Value lengths, bool keep_attention) const {
  Graph& g = *graph_;
  ToyOutputs out;
  if (!tokens.ok()) return {tokens, {}};
  if (tokens.rank() != 2 || tokens.dim(1) > config_.seq_len || !IsInteger(tokens.dtype())) {
    return {g.Error(absl::InvalidArgumentError(absl::StrCat(
                "toy transformer: tokens must be int (B, T) with T <= seq_len ",
                config_.seq_len, ", got ", DTypeName(tokens.dtype()), " ",
                tokens.shape().ToString()))),
            {}};
  }
  Value x;
  {
    Graph::Scope scope(g, "embedding");
    x = embedding_(tokens) * std::sqrt(static_cast<double>(config_.dim));
  }
  x = AddSinusoidal(x, config_.dropout);
  for (const nn::TransformerBlock& layer : layers_) {
    Value weights;
    x = layer(x, {.mask = {.valid_lens = lengths}, .weights = keep_attention ? &weights : nullptr});
    if (keep_attention) out.attention.push_back(weights);
  }
  out.logits = head_(x);
  return out;
}

}  // namespace dagrad::models
