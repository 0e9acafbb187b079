#include "models/gpt2/gpt2.h"

#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/matmul.h"

namespace dagrad::models {
namespace {

constexpr double kGpt2InitStd = 0.02;  // GPT-2's

}  // namespace

Value Gpt2::Conv1D::operator()(Value x) const { return MatMul(x, weight) + bias; }

absl::StatusOr<Gpt2::Block> Gpt2::CreateBlock(Graph& g, const Gpt2Config& c, int64_t l) {
  Graph::Scope scope(g, absl::StrCat("h/", l));
  const Initializer normal = Initializer::Normal(0.0, kGpt2InitStd);
  const Initializer proj = Initializer::Normal(0.0, kGpt2InitStd / std::sqrt(2.0 * c.layers));
  auto conv1d = [&](absl::string_view name, int64_t in, int64_t out, Initializer init) {
    Graph::Scope layer(g, name);
    return Conv1D{.weight = g.Parameter("weight", {in, out}, init, c.dtype),
                  .bias = g.Parameter("bias", {out}, Initializer::Zeros(), c.dtype)};
  };
  const nn::LayerNormOptions norm{
      .normalized_shape = c.dim, .eps = c.layer_norm_epsilon, .dtype = c.dtype};
  Block b;
  DAGRAD_ASSIGN_OR_RETURN(b.ln_1, nn::LayerNorm::Create(g, "ln_1", norm));
  b.c_attn = conv1d("attn/c_attn", c.dim, 3 * c.dim, normal);
  b.attn_proj = conv1d("attn/c_proj", c.dim, c.dim, proj);
  DAGRAD_ASSIGN_OR_RETURN(b.ln_2, nn::LayerNorm::Create(g, "ln_2", norm));
  b.c_fc = conv1d("mlp/c_fc", c.dim, c.mlp_width(), normal);
  b.mlp_proj = conv1d("mlp/c_proj", c.mlp_width(), c.dim, proj);
  DAGRAD_ASSIGN_OR_RETURN(b.dropout, GptBlockDropouts::Create(g, c.resid_pdrop));
  DAGRAD_RETURN_IF_ERROR(nn::FirstError({b.c_attn.weight, b.c_attn.bias, b.attn_proj.weight,
                                         b.attn_proj.bias, b.c_fc.weight, b.c_fc.bias,
                                         b.mlp_proj.weight, b.mlp_proj.bias}));
  return b;
}

absl::StatusOr<Gpt2> Gpt2::Create(Graph& g, const Gpt2Config& c) {
  DAGRAD_RETURN_IF_ERROR(c.Validate());
  Gpt2 m;
  m.graph_ = &g;
  m.scope_ = g.scope();
  m.config_ = c;
  DAGRAD_ASSIGN_OR_RETURN(m.activation_, Gpt2Activation(c.activation));
  {
    Graph::Scope transformer(g, "transformer");
    const Initializer normal = Initializer::Normal(0.0, kGpt2InitStd);
    DAGRAD_ASSIGN_OR_RETURN(m.wte_, nn::Embedding::Create(g, "wte", {.num_embeddings = c.vocab,
                                                                      .embedding_dim = c.dim,
                                                                      .init = normal,
                                                                      .dtype = c.dtype}));
    DAGRAD_ASSIGN_OR_RETURN(m.wpe_,
                            nn::Embedding::Create(g, "wpe", {.num_embeddings = c.positions,
                                                             .embedding_dim = c.dim,
                                                             .init = normal,
                                                             .dtype = c.dtype}));
    DAGRAD_ASSIGN_OR_RETURN(m.drop_, nn::Dropout::Create(g, "drop", c.embd_pdrop));
    for (int64_t l = 0; l < c.layers; ++l) {
      DAGRAD_ASSIGN_OR_RETURN(Block block, CreateBlock(g, c, l));
      m.blocks_.push_back(std::move(block));
    }
    DAGRAD_ASSIGN_OR_RETURN(
        m.ln_f_, nn::LayerNorm::Create(g, "ln_f", {.normalized_shape = c.dim,
                                                   .eps = c.layer_norm_epsilon,
                                                   .dtype = c.dtype}));
  }
  DAGRAD_ASSIGN_OR_RETURN(m.lm_head_, nn::Linear::Tied(g, "lm_head", m.wte_.weight()));
  m.parameters_ = {m.wte_.weight(), m.wpe_.weight()};
  for (const Block& b : m.blocks_) {
    m.parameters_.insert(m.parameters_.end(),
                         {b.ln_1.weight(), b.ln_1.bias(), b.c_attn.weight, b.c_attn.bias,
                          b.attn_proj.weight, b.attn_proj.bias, b.ln_2.weight(), b.ln_2.bias(),
                          b.c_fc.weight, b.c_fc.bias, b.mlp_proj.weight, b.mlp_proj.bias});
  }
  m.parameters_.insert(m.parameters_.end(), {m.ln_f_.weight(), m.ln_f_.bias()});
  return m;
}

ModelBuilder Gpt2::Builder(const Gpt2Config& config) {
  return [config](Graph& g) -> absl::StatusOr<std::unique_ptr<LanguageModel>> {
    DAGRAD_ASSIGN_OR_RETURN(Gpt2 model, Gpt2::Create(g, config));
    return std::make_unique<Gpt2>(std::move(model));
  };
}

Value Gpt2::ApplyBlock(const Block& b, Value x, int64_t l, const GptForwardOptions& options,
                       GptOutputs& out) const {
  Graph::ScopePathGuard in_scope(*graph_, GptBlockScope(scope_, l));
  const CausalAttentionOptions attention = {
      .heads = config_.heads, .dropout = config_.attn_pdrop, .path = config_.attention};
  return ApplyGptBlock(b, x, l, attention, activation_, options, out);
}

absl::Status Gpt2::CheckInputs(Value tokens, absl::Span<nn::KvCache> cache) const {
  const bool cache_ok = cache.empty() || static_cast<int64_t>(cache.size()) == config_.layers;
  if (tokens.rank() == 2 && tokens.dim(1) <= config_.positions && IsInteger(tokens.dtype()) &&
      cache_ok) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "gpt2: tokens must be int (B, T) with T <= n_positions ", config_.positions,
      " and a KV cache must have one nn::KvCache per layer (", config_.layers, "), got ",
      DTypeName(tokens.dtype()), " ", tokens.shape().ToString(), " and ", cache.size()));
}

GptOutputs Gpt2::Forward(Value tokens, const GptForwardOptions& options) const {
  if (graph_ == nullptr) return {nn::NotCreated(tokens, "Gpt2")};
  if (!tokens.ok()) return {tokens};
  Graph& g = *graph_;
  if (absl::Status inputs = CheckInputs(tokens, options.cache); !inputs.ok()) {
    return {g.Error(inputs)};
  }
  const Value positions = options.positions.is_null()
                              ? Arange(g, 0, tokens.dim(1), 1, DType::kInt64)
                              : options.positions;
  Value x = drop_(wte_(tokens) + wpe_(positions));
  GptOutputs out;
  for (size_t l = 0; l < blocks_.size(); ++l) {
    x = ApplyBlock(blocks_[l], x, static_cast<int64_t>(l), options, out);
  }
  out.logits = lm_head_(ln_f_(x));
  return out;
}

}  // namespace dagrad::models
