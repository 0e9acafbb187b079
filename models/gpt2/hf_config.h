// models/gpt2/hf_config.h
//
// Gpt2Config: the configuration of models::Gpt2 (models/gpt2/gpt2.h), read
// from a Hugging Face GPT-2 directory's config.json (GPT2Config's fields)
// or from the metadata of a checkpoint dagrad saved of the model.
//
// config.json fields read (others, such as bos/eos ids, initializer_range,
// the summary_* of the double-heads model, are ignored):
//   vocab_size, n_positions, n_embd, n_layer, n_head    required integers
//   n_inner             null (4 n_embd) or an integer >= 1
//   layer_norm_epsilon  a number > 0 (default 1e-5)
//   activation_function gelu_new, gelu_pytorch_tanh, gelu_fast (the tanh
//                       form), gelu (exact), relu (default gelu_new)
//   attn_pdrop, embd_pdrop, resid_pdrop
//                       numbers in [0, kMaxDropout] (ops/dropout.h); each
//                       0.1 when absent, as transformers' GPT2Config
//   model_type          gpt2 when present
// Options dagrad does not implement are refused by name when they are set:
// scale_attn_by_inverse_layer_idx, reorder_and_upcast_attn,
// add_cross_attention, scale_attn_weights false, tie_word_embeddings false,
// and any other activation_function.
//
//   // setup: Gpt2Files
//   DAGRAD_ASSIGN_OR_RETURN(Gpt2Config c, ParseHfGpt2Config(json, "gpt2/config.json"));
//   // c.dim 768, c.layers 12, ...

#ifndef DAGRAD_MODELS_GPT2_HF_CONFIG_H_
#define DAGRAD_MODELS_GPT2_HF_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dtype.h"
#include "engine/io/safetensors.h"
#include "models/nn/attention.h"
#include "models/nn/layers.h"

namespace dagrad::models {

struct Gpt2Config {
  int64_t vocab = 50257;
  int64_t positions = 1024;  // n_positions, the longest context
  int64_t dim = 768;         // n_embd
  int64_t heads = 12;        // n_head
  int64_t layers = 12;       // n_layer
  int64_t inner = 0;         // n_inner, the MLP's width; 0 means 4 dim
  double layer_norm_epsilon = 1e-5;
  std::string activation = "gelu_new";  // activation_function, as HF names it
  // The dropout probabilities (models/gpt2/gpt2.h says where each acts, in
  // training runs only). 0.1 each, transformers' GPT2Config's defaults.
  double attn_pdrop = 0.1;   // on the attention weights
  double embd_pdrop = 0.1;   // on wte + wpe
  double resid_pdrop = 0.1;  // on each block's attention and MLP outputs
  DType dtype = DType::kFloat32;         // float64 for gradient checks
  // How the attention runs (not in the metadata: the weights are the same).
  nn::AttentionPath attention = nn::AttentionPath::kFused;

  // mlp_width: inner, or 4 dim when inner is 0.
  int64_t mlp_width() const { return inner > 0 ? inner : 4 * dim; }
  // Metadata strings: model=gpt2 and config.json's names for the fields
  // (vocab_size, n_positions, n_embd, n_head, n_layer, n_inner,
  // layer_norm_epsilon, activation_function, attn_pdrop, embd_pdrop,
  // resid_pdrop).
  std::map<std::string, std::string> ToMetadata() const;
  // InvalidArgument naming a missing or malformed key, a model other than
  // gpt2, or what Validate rejects. A dropout key that is absent reads as
  // 0: dagrad's files of the model written before Gpt2 had dropouts hold
  // none, and that model was trained without them.
  static absl::StatusOr<Gpt2Config> FromMetadata(const std::map<std::string, std::string>& m);
  // FromCheckpoint: FromMetadata of the checkpoint at `path` once the file
  // holds exactly the model's tensors (nn::ConfigFromCheckpoint's errors).
  static absl::StatusOr<Gpt2Config> FromCheckpoint(const SafetensorsFile& checkpoint,
                                                   absl::string_view path);
  // Validate: sizes >= 1 (inner >= 0), dim % heads == 0, epsilon > 0, an
  // activation dagrad implements, each dropout as ValidateDropout
  // (ops/dropout.h), a float dtype; InvalidArgument naming config.json's
  // field otherwise.
  absl::Status Validate() const;
};

// Gpt2Activation returns the nn::Activation of an activation_function
// name; InvalidArgument naming it when dagrad has none.
absl::StatusOr<nn::Activation> Gpt2Activation(absl::string_view name);

// ParseHfGpt2Config reads config.json's text; `path` names the file in
// messages ("gpt2/config.json: field 'n_head' ..."). InvalidArgument for
// text that is not a JSON object, a required field missing, a field of the
// wrong type or out of range, contradictory fields (n_embd not a multiple
// of n_head), and the unsupported options above, each named.
absl::StatusOr<Gpt2Config> ParseHfGpt2Config(absl::string_view json, absl::string_view path);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT2_HF_CONFIG_H_
