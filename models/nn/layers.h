// models/nn/layers.h
//
// The basic layers of dagrad::nn, each the twin of a torch.nn module: the
// same parameters under the same names, the same initialisation, the same
// function. models/nn/nn.h states the convention they follow.
//
//   Linear     y = x·Wᵀ + b              weight (out, in), bias (out)
//   Embedding  y = weight[ids]           weight (num, dim)
//   LayerNorm  over the last axis        weight (dim), bias (dim)
//   Dropout    inverted dropout          (no parameters)
//   Mlp        fc2(act(fc1(x)))          fc1.*, fc2.*  (timm's Mlp)

#ifndef DAGRAD_MODELS_NN_LAYERS_H_
#define DAGRAD_MODELS_NN_LAYERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "engine/initializer.h"
#include "models/nn/module.h"

namespace dagrad::nn {

struct LinearOptions {
  int64_t in_features = 0;   // >= 1
  int64_t out_features = 0;  // >= 1
  bool bias = true;
  DType dtype = DType::kFloat32;  // float32 or float64
  // Override PyTorch's U(±1/sqrt(in)) (GPT-2's N(0, 0.02), say).
  std::optional<Initializer> weight_init, bias_init;
};

// Linear is torch.nn.Linear: y = x·Wᵀ + b for x (..., in) -> (..., out).
// weight (out, in) and bias (out) are both U(±1/sqrt(in)): PyTorch's
// kaiming_uniform_(a=sqrt(5)) for the weight, whose bound
// sqrt(6 / ((1 + a²)·in)) is 1/sqrt(in), and its bias rule.
//
//   // setup: Features4
//   DAGRAD_ASSIGN_OR_RETURN(nn::Linear fc,
//       nn::Linear::Create(g, "fc", {.in_features = 4, .out_features = 3}));
//   Value y = fc(x);   // x (B, 4) -> y (B, 3); parameters "fc/weight", "fc/bias"
//
// Tied applies an existing weight (out, in), a Value declared elsewhere
// (weight tying: a GPT's output head is its token embedding). It declares
// no parameter; parameters() lists the Values it applies, which the layer
// owning them lists too, so a model lists a shared parameter once. A
// parameter used twice gets the sum of both uses' gradients (autodiff.h).
//   DAGRAD_ASSIGN_OR_RETURN(nn::Linear head,
//       nn::Linear::Tied(g, "lm_head", wte.weight()));   // (V, D): x (B, T, D) -> (B, T, V)
class Linear {
 public:
  using Options = LinearOptions;
  Linear() = default;  // empty until assigned a layer made by Create
  // InvalidArgument for a bad prefix (module.h), sizes < 1 or a dtype
  // that is not float.
  static absl::StatusOr<Linear> Create(Graph& g, absl::string_view prefix,
                                       const LinearOptions& options);
  // InvalidArgument for a bad prefix or a weight that is not a float
  // (out, in) Value (or a bias that is not (out)); the error of an error Value.
  static absl::StatusOr<Linear> Tied(Graph& g, absl::string_view prefix, Value weight,
                                     Value bias = Value());
  // The ops are built under the layer's scope. Errors as dagrad::Linear's.
  Value operator()(Value x) const;
  Value Forward(Value x) const { return (*this)(x); }

  Value weight() const { return weight_; }
  Value bias() const { return bias_; }  // null without bias
  std::vector<Value> parameters() const;
  NamedParameters named_parameters() const { return RelativeNames(scope_, parameters()); }

 private:
  Graph* graph_ = nullptr;
  std::string scope_;
  Value weight_, bias_;
};

struct EmbeddingOptions {
  int64_t num_embeddings = 0;  // >= 1
  int64_t embedding_dim = 0;   // >= 1
  Initializer init = Initializer::Normal(0.0, 1.0);  // torch.nn.Embedding's
  DType dtype = DType::kFloat32;
  // padding_idx, in [-num, num) (a negative one counts from the end): the
  // row starts at zeros and gets no gradient, as torch.nn.Embedding's.
  std::optional<int64_t> padding_idx;
};

// Embedding is torch.nn.Embedding: ids int (...) -> (..., dim), rows of
// weight (num, dim), N(0, 1) unless options.init says otherwise. An id
// outside [0, num) fails when the graph runs (ops/gather.h). With a
// padding_idx, its positions read the padding row (zeros unless loaded
// otherwise) and pass no gradient to it.
//
//   DAGRAD_ASSIGN_OR_RETURN(nn::Embedding emb,
//       nn::Embedding::Create(g, "tok_emb", {.num_embeddings = 16, .embedding_dim = 8}));
//   Value e = emb(tokens);   // tokens int64 (B, T) -> e (B, T, 8)
//   DAGRAD_ASSIGN_OR_RETURN(nn::Embedding padded, nn::Embedding::Create(g, "padded",
//       {.num_embeddings = 16, .embedding_dim = 8, .padding_idx = 0}));
class Embedding {
 public:
  using Options = EmbeddingOptions;
  Embedding() = default;
  static absl::StatusOr<Embedding> Create(Graph& g, absl::string_view prefix,
                                          const EmbeddingOptions& options);
  Value operator()(Value ids) const;
  Value Forward(Value ids) const { return (*this)(ids); }

  Value weight() const { return weight_; }
  std::vector<Value> parameters() const { return {weight_}; }
  NamedParameters named_parameters() const { return RelativeNames(scope_, parameters()); }

 private:
  Graph* graph_ = nullptr;
  std::string scope_;
  Value weight_;
  std::optional<int64_t> padding_row_;  // in [0, num)
};

struct LayerNormOptions {
  int64_t normalized_shape = 0;  // D, the last axis; >= 1
  double eps = 1e-5;
  bool elementwise_affine = true;  // weight (D), ones
  bool bias = true;                // bias (D), zeros; only with elementwise_affine
  DType dtype = DType::kFloat32;
  // Replace the ones and zeros where given.
  std::optional<Initializer> weight_init, bias_init;
};

// LayerNorm is torch.nn.LayerNorm(D) over the last axis: x (..., D) ->
// (..., D) (ops/layer_norm.h); weight ones and bias zeros unless the
// options' weight_init and bias_init say otherwise.
//
//   DAGRAD_ASSIGN_OR_RETURN(nn::LayerNorm ln,
//       nn::LayerNorm::Create(g, "ln_f", {.normalized_shape = 8}));
//   Value n = ln(h);   // (B, T, 8); parameters "ln_f/weight", "ln_f/bias"
class LayerNorm {
 public:
  using Options = LayerNormOptions;
  LayerNorm() = default;
  static absl::StatusOr<LayerNorm> Create(Graph& g, absl::string_view prefix,
                                          const LayerNormOptions& options);
  Value operator()(Value x) const;
  Value Forward(Value x) const { return (*this)(x); }

  Value weight() const { return weight_; }  // null without elementwise_affine
  Value bias() const { return bias_; }      // null without affine or bias
  std::vector<Value> parameters() const;
  NamedParameters named_parameters() const { return RelativeNames(scope_, parameters()); }

 private:
  Graph* graph_ = nullptr;
  std::string scope_;
  double eps_ = 1e-5;
  Value weight_, bias_;
};

// Dropout is torch.nn.Dropout(p): active only in training runs
// (ops/dropout.h). With p = 0 it builds no op and returns x.
//
//   DAGRAD_ASSIGN_OR_RETURN(nn::Dropout drop, nn::Dropout::Create(g, "drop", 0.1));
//   Value d = drop(h);   // same shape as h
class Dropout {
 public:
  using Options = double;  // p
  Dropout() = default;  // p = 0 until assigned: the identity
  // InvalidArgument for a bad prefix or p outside [0, kMaxDropout].
  static absl::StatusOr<Dropout> Create(Graph& g, absl::string_view prefix, double p);
  Value operator()(Value x) const;
  Value Forward(Value x) const { return (*this)(x); }

  double p() const { return p_; }
  std::vector<Value> parameters() const { return {}; }
  NamedParameters named_parameters() const { return {}; }

 private:
  std::string scope_;
  double p_ = 0.0;
};

// Activation of an Mlp or TransformerBlock: ReLU, exact GELU
// (torch.nn.GELU()) or tanh-approximate GELU (GELU(approximate="tanh")).
enum class Activation { kRelu, kGelu, kGeluTanh };

// Activate applies `activation` to x.
Value Activate(Value x, Activation activation);

struct MlpOptions {
  int64_t in_features = 0;      // >= 1
  int64_t hidden_features = 0;  // >= 1
  int64_t out_features = 0;     // 0 means in_features
  Activation activation = Activation::kGelu;
  bool bias = true;
  double dropout = 0.0;  // after the activation and after fc2, as timm's
  DType dtype = DType::kFloat32;
  // fc1's and fc2's LinearOptions::weight_init and bias_init.
  std::optional<Initializer> weight_init, bias_init;
};

// Mlp is timm's Mlp: y = drop(fc2(drop(act(fc1(x))))), x (..., in) ->
// (..., out), with fc1 and fc2 Linear layers.
//
//   DAGRAD_ASSIGN_OR_RETURN(nn::Mlp mlp,
//       nn::Mlp::Create(g, "mlp", {.in_features = 8, .hidden_features = 32,
//                                  .activation = nn::Activation::kGeluTanh}));
//   Value m = mlp(h);   // (B, T, 8); parameters "mlp/fc1/weight", ..., "mlp/fc2/bias"
class Mlp {
 public:
  using Options = MlpOptions;
  Mlp() = default;
  static absl::StatusOr<Mlp> Create(Graph& g, absl::string_view prefix,
                                    const MlpOptions& options);
  Value operator()(Value x) const;
  Value Forward(Value x) const { return (*this)(x); }

  const Linear& fc1() const { return fc1_; }
  const Linear& fc2() const { return fc2_; }
  std::vector<Value> parameters() const;
  NamedParameters named_parameters() const { return RelativeNames(scope_, parameters()); }

 private:
  Graph* graph_ = nullptr;
  std::string scope_;
  Activation activation_ = Activation::kGelu;
  Linear fc1_, fc2_;
  Dropout dropout_;
};

}  // namespace dagrad::nn

#endif  // DAGRAD_MODELS_NN_LAYERS_H_
