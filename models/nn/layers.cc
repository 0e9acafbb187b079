#include "models/nn/layers.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/layer_norm.h"
#include "ops/matmul.h"
#include "ops/select.h"
#include "ops/shape_ops.h"

namespace dagrad::nn {
namespace {

// CheckSizes returns InvalidArgument naming `layer` and the prefix when any
// size is < 1 or dtype is not float.
absl::Status CheckSizes(absl::string_view layer, absl::string_view prefix,
                        std::initializer_list<int64_t> sizes, DType dtype) {
  for (int64_t size : sizes) {
    if (size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(layer, " '", prefix, "': sizes must be >= 1, got ", size));
    }
  }
  if (!IsFloating(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        layer, " '", prefix, "': dtype must be float32 or float64, got ", DTypeName(dtype)));
  }
  return ValidatePrefix(layer, prefix);
}

}  // namespace

absl::StatusOr<Linear> Linear::Create(Graph& g, absl::string_view prefix,
                                      const LinearOptions& options) {
  const int64_t in = options.in_features, out = options.out_features;
  DAGRAD_RETURN_IF_ERROR(CheckSizes("Linear", prefix, {in, out}, options.dtype));
  Graph::Scope scope(g, prefix);
  Linear m;
  m.graph_ = &g;
  m.scope_ = g.scope();
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  const Initializer init = Initializer::Uniform(-bound, bound);
  m.weight_ = g.Parameter("weight", {out, in}, options.weight_init.value_or(init), options.dtype);
  if (options.bias) {
    m.bias_ = g.Parameter("bias", {out}, options.bias_init.value_or(init), options.dtype);
  }
  DAGRAD_RETURN_IF_ERROR(FirstError(m.parameters()));
  return m;
}

absl::StatusOr<Linear> Linear::Tied(Graph& g, absl::string_view prefix, Value weight,
                                    Value bias) {
  DAGRAD_RETURN_IF_ERROR(FirstError({weight, bias}));
  if (weight.is_null() || weight.rank() != 2 || !IsFloating(weight.dtype()) ||
      (!bias.is_null() && bias.shape() != Shape({weight.dim(0)}))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Linear '", prefix, "': a tied weight must be float (out, in) and its bias (out), got ",
        weight.is_null() ? "none" : weight.shape().ToString(), " and ",
        bias.is_null() ? "none" : bias.shape().ToString()));
  }
  DAGRAD_RETURN_IF_ERROR(ValidatePrefix("Linear", prefix));
  Graph::Scope scope(g, prefix);
  Linear m;
  m.graph_ = &g;
  m.scope_ = g.scope();
  m.weight_ = weight;
  m.bias_ = bias;
  return m;
}

Value Linear::operator()(Value x) const {
  if (graph_ == nullptr) return NotCreated(x, "Linear");
  Graph::ScopePathGuard in_scope(*graph_, scope_);
  return dagrad::Linear(x, weight_, bias_);
}

std::vector<Value> Linear::parameters() const {
  return bias_.is_null() ? std::vector<Value>{weight_} : std::vector<Value>{weight_, bias_};
}

absl::StatusOr<Embedding> Embedding::Create(Graph& g, absl::string_view prefix,
                                            const EmbeddingOptions& options) {
  DAGRAD_RETURN_IF_ERROR(CheckSizes("Embedding", prefix,
                                    {options.num_embeddings, options.embedding_dim},
                                    options.dtype));
  const int64_t num = options.num_embeddings;
  Embedding m;
  if (options.padding_idx) {
    const int64_t p = *options.padding_idx;
    if (p < -num || p >= num) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Embedding '", prefix, "': padding_idx must be in [", -num, ", ", num, "), got ", p));
    }
    m.padding_row_ = p < 0 ? p + num : p;
  }
  Graph::Scope scope(g, prefix);
  m.graph_ = &g;
  m.scope_ = g.scope();
  const Initializer init =
      m.padding_row_ ? options.init.WithZeroRow(*m.padding_row_) : options.init;
  m.weight_ = g.Parameter("weight", {num, options.embedding_dim}, init, options.dtype);
  DAGRAD_RETURN_IF_ERROR(FirstError(m.parameters()));
  return m;
}

Value Embedding::operator()(Value ids) const {
  if (graph_ == nullptr) return NotCreated(ids, "Embedding");
  Graph::ScopePathGuard in_scope(*graph_, scope_);
  Value rows = dagrad::Embedding(weight_, ids);
  if (!padding_row_ || !rows.ok()) return rows;
  // The padding positions' rows, the same values, reach the weight through
  // Detach: no gradient.
  Value padding = Equal(ids, Fill(*graph_, Shape({}), *padding_row_, ids.dtype()));
  std::vector<int64_t> one_more(ids.shape().dims().begin(), ids.shape().dims().end());
  one_more.push_back(1);
  return Where(Reshape(padding, one_more), Detach(rows), rows);
}

absl::StatusOr<LayerNorm> LayerNorm::Create(Graph& g, absl::string_view prefix,
                                            const LayerNormOptions& options) {
  const int64_t D = options.normalized_shape;
  DAGRAD_RETURN_IF_ERROR(CheckSizes("LayerNorm", prefix, {D}, options.dtype));
  if (!(options.eps > 0) || !std::isfinite(options.eps)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LayerNorm '", prefix, "': eps must be a finite number > 0, got ", options.eps));
  }
  Graph::Scope scope(g, prefix);
  LayerNorm m;
  m.graph_ = &g;
  m.scope_ = g.scope();
  m.eps_ = options.eps;
  if (options.elementwise_affine) {
    m.weight_ = g.Parameter("weight", {D}, options.weight_init.value_or(Initializer::Ones()),
                            options.dtype);
    if (options.bias) {
      m.bias_ = g.Parameter("bias", {D}, options.bias_init.value_or(Initializer::Zeros()),
                            options.dtype);
    }
  }
  DAGRAD_RETURN_IF_ERROR(FirstError(m.parameters()));
  return m;
}

Value LayerNorm::operator()(Value x) const {
  if (graph_ == nullptr) return NotCreated(x, "LayerNorm");
  Graph::ScopePathGuard in_scope(*graph_, scope_);
  return dagrad::LayerNorm(x, weight_, bias_, eps_);
}

std::vector<Value> LayerNorm::parameters() const {
  std::vector<Value> params;
  for (const Value& p : {weight_, bias_}) {
    if (!p.is_null()) params.push_back(p);
  }
  return params;
}

absl::StatusOr<Dropout> Dropout::Create(Graph& g, absl::string_view prefix, double p) {
  DAGRAD_RETURN_IF_ERROR(ValidatePrefix("Dropout", prefix));
  if (absl::Status st = ValidateDropout(p); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("Dropout '", prefix, "': ", st.message()));
  }
  Graph::Scope scope(g, prefix);
  Dropout m;
  m.scope_ = g.scope();
  m.p_ = p;
  return m;
}

Value Dropout::operator()(Value x) const {
  if (p_ == 0 || !x.ok()) return x;
  Graph::ScopePathGuard in_scope(*x.graph(), scope_);
  return dagrad::Dropout(x, p_);
}

Value Activate(Value x, Activation activation) {
  switch (activation) {
    case Activation::kRelu:
      return Relu(x);
    case Activation::kGelu:
      return Gelu(x);
    case Activation::kGeluTanh:
      return Gelu(x, GeluApproximate::kTanh);
  }
  return x;
}

absl::StatusOr<Mlp> Mlp::Create(Graph& g, absl::string_view prefix, const MlpOptions& options) {
  const int64_t out = options.out_features == 0 ? options.in_features : options.out_features;
  DAGRAD_RETURN_IF_ERROR(ValidatePrefix("Mlp", prefix));
  Graph::Scope scope(g, prefix);
  Mlp m;
  m.graph_ = &g;
  m.scope_ = g.scope();
  m.activation_ = options.activation;
  DAGRAD_ASSIGN_OR_RETURN(
      m.fc1_, Linear::Create(g, "fc1", {.in_features = options.in_features,
                                        .out_features = options.hidden_features,
                                        .bias = options.bias, .dtype = options.dtype,
                                        .weight_init = options.weight_init,
                                        .bias_init = options.bias_init}));
  DAGRAD_ASSIGN_OR_RETURN(
      m.fc2_, Linear::Create(g, "fc2", {.in_features = options.hidden_features,
                                        .out_features = out, .bias = options.bias,
                                        .dtype = options.dtype,
                                        .weight_init = options.weight_init,
                                        .bias_init = options.bias_init}));
  DAGRAD_ASSIGN_OR_RETURN(m.dropout_, Dropout::Create(g, "drop", options.dropout));
  return m;
}

Value Mlp::operator()(Value x) const {
  if (graph_ == nullptr) return NotCreated(x, "Mlp");
  Graph::ScopePathGuard in_scope(*graph_, scope_);
  return dropout_(fc2_(dropout_(Activate(fc1_(x), activation_))));
}

std::vector<Value> Mlp::parameters() const {
  return ConcatParameters({fc1_.parameters(), fc2_.parameters()});
}

}  // namespace dagrad::nn
