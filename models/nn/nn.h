// models/nn/nn.h
//
// dagrad::nn, the layer library: layers that are the twins of torch.nn
// modules, for building models as members of a class.
//
//   layers.h               Linear, Embedding, LayerNorm, Dropout, Mlp, Activation
//   attention.h            MultiheadAttention, AttentionMask and PyTorch's masks
//   transformer_block.h    TransformerBlock (encoder or decoder layer, pre- or post-norm)
//   sequential.h           Sequential
//   module.h               NamedParameters and the naming rule
//   positional_encoding.h  sinusoidal, learned and rotary positions
//
// The convention every layer follows:
//   - It is default-constructible, so it can be a class member filled in
//     later; a default-constructed layer applied to a Value gives an error
//     Value (FailedPrecondition).
//   - `static absl::StatusOr<L> L::Create(Graph& g, absl::string_view prefix,
//     const LOptions& options)` declares its parameters in g under scope
//     `prefix`, relative to g's current scope, with PyTorch's names and
//     initialisation. The prefix is one or more non-empty segments
//     separated by '/', without '.' (a parameter's own name never holds '/':
//     engine/graph.h). Bad options are InvalidArgument naming the layer.
//   - `operator()` (and its alias `Forward`) applies it, building the ops
//     under the layer's scope; errors come back as error Values.
//   - `parameters()` lists its parameters in creation order (PyTorch's
//     state_dict order) and `named_parameters()` names them relative to the
//     layer as PyTorch does: "weight", "in_proj_weight", "0.weight",
//     "layers.0.self_attn.in_proj_weight".
//
//   class Gpt {
//    public:
//     absl::Status Init(Graph& g) {
//       DAGRAD_ASSIGN_OR_RETURN(wte_, nn::Embedding::Create(g, "wte",
//           {.num_embeddings = 65, .embedding_dim = 32}));
//       DAGRAD_ASSIGN_OR_RETURN(block_, nn::TransformerBlock::Create(g, "h/0",
//           {.d_model = 32, .nhead = 4, .dim_feedforward = 128, .dropout = 0.0,
//            .activation = nn::Activation::kGelu, .norm_first = true, .causal = true}));
//       DAGRAD_ASSIGN_OR_RETURN(ln_f_, nn::LayerNorm::Create(g, "ln_f",
//           {.normalized_shape = 32}));
//       return absl::OkStatus();
//     }
//     Value operator()(Value tokens) const { return ln_f_(block_(wte_(tokens))); }
//
//    private:
//     nn::Embedding wte_;
//     nn::TransformerBlock block_;
//     nn::LayerNorm ln_f_;
//   };

#ifndef DAGRAD_MODELS_NN_NN_H_
#define DAGRAD_MODELS_NN_NN_H_

#include "models/nn/attention.h"
#include "models/nn/layers.h"
#include "models/nn/module.h"
#include "models/nn/sequential.h"
#include "models/nn/transformer_block.h"

#endif  // DAGRAD_MODELS_NN_NN_H_
