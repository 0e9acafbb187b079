// models/transformer.h
//
// The toy attention model of tools/bench/torch_cuda_anchor.py (ToyTransformer) as a
// dagrad graph: the same function, the same parameter names (so checkpoints
// move both ways with PyTorch's state_dict), the same initialisation.
//
//   x = embedding(tokens) * sqrt(dim) + P[:T]      P: sinusoidal, interleaved
//   x = dropout(x)
//   x = L x post-norm encoder layer (keys at positions >= lengths[b] masked):
//         x = norm1(x + dropout(self_attn(x, x, x)))
//         x = norm2(x + dropout(linear2(dropout(relu(linear1(x))))))
//   logits = head(x)                                (B, T, vocab)
//
// Parameter scopes give the state_dict names: "embedding/weight" is
// embedding.weight, "encoder/layers/0/self_attn/in_proj_weight" is
// encoder.layers.0.self_attn.in_proj_weight, "head/bias" is head.bias.
//
//   ToyConfig config{.vocab = 16, .max_len = 32, .dim = 128, .heads = 4,
//                    .layers = 2, .ffn = 512, .dropout = 0.1};
//   DAGRAD_ASSIGN_OR_RETURN(ToyTransformer model, ToyTransformer::Create(g, config));
//   ToyOutputs out = model(tokens, lengths);   // out.logits (B, T, vocab)

#ifndef DAGRAD_MODELS_TRANSFORMER_H_
#define DAGRAD_MODELS_TRANSFORMER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "models/multi_head_attention.h"

namespace dagrad::models {

// Linear layer as torch.nn.Linear: weight (out, in) and bias (out) under
// scope `name`, both U(±1/sqrt(in)).
class LinearLayer {
 public:
  LinearLayer() = default;  // empty until assigned a layer made on a graph
  LinearLayer(Graph& g, absl::string_view name, int64_t in, int64_t out, bool bias = true);
  Value operator()(Value x) const;
  Value weight() const { return weight_; }
  Value bias() const { return bias_; }

 private:
  Value weight_, bias_;
};

// LayerNorm over the last axis with weight (ones) and bias (zeros).
class LayerNormLayer {
 public:
  LayerNormLayer(Graph& g, absl::string_view name, int64_t dim, double eps = 1e-5);
  Value operator()(Value x) const;

 private:
  Value weight_, bias_;
  double eps_;
};

struct EncoderLayerConfig {
  int64_t dim = 0;
  int64_t heads = 1;
  int64_t ffn = 0;
  double dropout = 0.0;
  double eps = 1e-5;
};

// TransformerEncoderLayer as torch.nn.TransformerEncoderLayer(batch_first,
// norm_first=False, activation=relu).
class TransformerEncoderLayer {
 public:
  static absl::StatusOr<TransformerEncoderLayer> Create(Graph& g, absl::string_view name,
                                                        const EncoderLayerConfig& config);
  // x (B, T, dim); `mask` applies to self-attention. `weights`, when not
  // null, receives the attention weights per head (B, H, T, T).
  Value operator()(Value x, const AttentionMask& mask, Value* weights = nullptr) const;

 private:
  TransformerEncoderLayer(MultiHeadAttention attn, LinearLayer l1, LinearLayer l2,
                          LayerNormLayer n1, LayerNormLayer n2, const EncoderLayerConfig& c,
                          std::string scope)
      : self_attn_(std::move(attn)), linear1_(l1), linear2_(l2), norm1_(n1), norm2_(n2),
        config_(c), scope_(std::move(scope)) {}

  MultiHeadAttention self_attn_;
  LinearLayer linear1_, linear2_;
  LayerNormLayer norm1_, norm2_;
  EncoderLayerConfig config_;
  std::string scope_;
};

struct ToyConfig {
  int64_t vocab = 16;
  int64_t max_len = 32;
  int64_t dim = 128;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t ffn = 512;
  double dropout = 0.1;

  // Metadata strings as the reference's from_metadata reads them.
  std::map<std::string, std::string> ToMetadata() const;
  static absl::StatusOr<ToyConfig> FromMetadata(const std::map<std::string, std::string>& m);
  // Validate: every size >= 1, dim % heads == 0, dim even, dropout as ValidateDropout.
  absl::Status Validate() const;
};

struct ToyOutputs {
  Value logits;                       // (B, T, vocab)
  std::vector<Value> attention;       // per layer (B, H, T, T), when asked
};

class ToyTransformer {
 public:
  static absl::StatusOr<ToyTransformer> Create(Graph& g, const ToyConfig& config);

  // tokens int64 (B, T) with T <= max_len; lengths int64 (B), 1 <= len <= T,
  // or a null Value for no padding.
  ToyOutputs operator()(Value tokens, Value lengths, bool keep_attention = false) const;

  const ToyConfig& config() const { return config_; }
  // parameters in the reference's state_dict order.
  const std::vector<Value>& parameters() const { return parameters_; }

 private:
  ToyTransformer() = default;

  Graph* graph_ = nullptr;
  ToyConfig config_;
  Value embedding_;
  std::vector<TransformerEncoderLayer> layers_;
  LinearLayer head_;
  std::vector<Value> parameters_;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_TRANSFORMER_H_
