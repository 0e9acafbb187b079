// models/toy/transformer.h
//
// The toy attention model of tools/bench/torch_cuda_anchor.py (ToyTransformer) as a
// dagrad graph: the same function, the same parameter names (so checkpoints
// move both ways with PyTorch's state_dict), the same initialisation.
//
//   x = embedding(tokens) * sqrt(dim) + P[:T]      P: sinusoidal, interleaved
//   x = dropout(x)
//   x = L x post-norm nn::TransformerBlock, ReLU (keys at positions >=
//       lengths[b] masked):
//         x = norm1(x + dropout(self_attn(x, x, x)))
//         x = norm2(x + dropout(linear2(dropout(relu(linear1(x))))))
//   logits = head(x)                                (B, T, vocab)
//
// Parameter scopes give the state_dict names: "embedding/weight" is
// embedding.weight, "encoder/layers/0/self_attn/in_proj_weight" is
// encoder.layers.0.self_attn.in_proj_weight, "head/bias" is head.bias.
//
//   ToyConfig config{.vocab = 16, .seq_len = 32, .dim = 128, .heads = 4,
//                    .layers = 2, .ffn = 512, .dropout = 0.1};
//   DAGRAD_ASSIGN_OR_RETURN(ToyTransformer model, ToyTransformer::Create(g, config));
//   ToyOutputs out = model(tokens, lengths);   // out.logits (B, T, vocab)

#ifndef DAGRAD_MODELS_TOY_TRANSFORMER_H_
#define DAGRAD_MODELS_TOY_TRANSFORMER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "engine/io/safetensors.h"
#include "models/language_model.h"
#include "models/nn/nn.h"

namespace dagrad::models {

struct ToyConfig {
  int64_t vocab = 16;
  int64_t seq_len = 32;  // the longest sequence; metadata key "max_len" (the reference's)
  int64_t dim = 128;
  int64_t heads = 4;
  int64_t layers = 2;
  // The most layers Validate takes: the graph is built, node by node, before
  // the executor can check its memory, so a mistyped count must stop here.
  static constexpr int64_t kMaxLayers = 1024;
  int64_t ffn = 512;
  double dropout = 0.1;
  // attention: the fused op or the composed subgraph (nn::AttentionPath);
  // not a checkpoint's business: the metadata leave it out.
  nn::AttentionPath attention = nn::AttentionPath::kFused;

  // Metadata strings as the reference's from_metadata reads them.
  std::map<std::string, std::string> ToMetadata() const;
  static absl::StatusOr<ToyConfig> FromMetadata(const std::map<std::string, std::string>& m);
  // FromCheckpoint: FromMetadata of the checkpoint at `path` (its errors
  // prefixed with the path), once the file holds exactly the tensors of the
  // model it describes (nn::ConfigFromCheckpoint: InvalidArgument naming
  // a tensor missing, of another shape, or that the metadata does not
  // account for).
  static absl::StatusOr<ToyConfig> FromCheckpoint(const SafetensorsFile& checkpoint,
                                                  absl::string_view path);
  // Validate: every size >= 1, dim % heads == 0, dim even, dropout as ValidateDropout.
  absl::Status Validate() const;
};

struct ToyOutputs {
  Value logits;                       // (B, T, vocab)
  std::vector<Value> attention;       // per layer (B, H, T, T), when asked
};

// ToyTransformer is a LanguageModel: bidirectional (an encoder, not
// causal), reading lengths.
class ToyTransformer : public LanguageModel {
 public:
  static absl::StatusOr<ToyTransformer> Create(Graph& g, const ToyConfig& config);

  // tokens int64 (B, T) with T <= seq_len; lengths int64 (B), 1 <= len <= T,
  // or a null Value for no padding.
  ToyOutputs operator()(Value tokens, Value lengths, bool keep_attention = false) const;

  const ToyConfig& config() const { return config_; }
  // parameters in the reference's state_dict order.
  const std::vector<Value>& parameters() const override { return parameters_; }

  // LanguageModel: Metadata is config().ToMetadata() (no "model" key, as
  // the PyTorch reference's files).
  int64_t vocab() const override { return config_.vocab; }
  int64_t max_len() const override { return config_.seq_len; }
  std::string max_len_name() const override { return "seq_len"; }
  bool causal() const override { return false; }
  bool takes_lengths() const override { return true; }
  Value Logits(Value tokens, Value lengths = Value()) const override {
    return (*this)(tokens, lengths).logits;
  }
  std::map<std::string, std::string> Metadata() const override { return config_.ToMetadata(); }
  nn::NamedParameters named_parameters() const { return nn::RelativeNames(scope_, parameters_); }

 private:
  ToyTransformer() = default;

  Graph* graph_ = nullptr;
  std::string scope_;  // the graph's scope when Create ran
  ToyConfig config_;
  nn::Embedding embedding_;
  std::vector<nn::TransformerBlock> layers_;
  nn::Linear head_;
  std::vector<Value> parameters_;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_TOY_TRANSFORMER_H_
