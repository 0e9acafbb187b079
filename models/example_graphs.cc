#include "models/example_graphs.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/nn/attention.h"
#include "models/nn/layers.h"
#include "models/nn/positional_encoding.h"
#include "models/toy/transformer.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"

namespace dagrad::models {
namespace {

// Mean of squares: a simple scalar loss for models without targets.
Value MeanSquare(Value y) { return Mean(Mul(y, y)); }

absl::StatusOr<ExampleGraph> Mlp(Graph& g) {
  Value x = g.Input("x", DType::kFloat32, {4, 8});
  Value labels = g.Input("labels", DType::kInt64, {4});
  auto fc1 = nn::Linear::Create(g, "fc1", {.in_features = 8, .out_features = 16});
  if (!fc1.ok()) return fc1.status();
  auto fc2 = nn::Linear::Create(g, "fc2", {.in_features = 16, .out_features = 3});
  if (!fc2.ok()) return fc2.status();
  Value logits = (*fc2)(Relu((*fc1)(x)));
  Graph::Scope scope(g, "loss");
  return ExampleGraph{CrossEntropy(logits, labels), {logits}};
}

absl::StatusOr<ExampleGraph> Mha(Graph& g, nn::AttentionPath attention) {
  Value x = g.Input("x", DType::kFloat32, {2, 6, 32});
  Value lengths = g.Input("valid_lens", DType::kInt64, {2});
  // Attention dropout as d2l's MultiheadAttention has it, so every op shows.
  auto mha = nn::MultiheadAttention::Create(
      g, "mha", {.embed_dim = 32, .num_heads = 4, .dropout = 0.1, .attention = attention});
  if (!mha.ok()) return mha.status();
  // The composed path draws the weights too; the fused op never holds them.
  const bool composed = attention == nn::AttentionPath::kComposed;
  nn::AttentionOutput y =
      (*mha)(x, x, x, {.valid_lens = lengths},
             composed ? nn::AttentionWeights::kPerHead : nn::AttentionWeights::kNone);
  Graph::Scope scope(g, "loss");
  std::vector<Value> outputs = {y.output};
  if (composed) outputs.push_back(y.weights);
  return ExampleGraph{MeanSquare(y.output), outputs};
}

absl::StatusOr<ExampleGraph> PositionalEncoding(Graph& g) {
  Value x = g.Input("x", DType::kFloat32, {2, 8, 16});
  Value y = models::AddSinusoidal(x, /*dropout=*/0.1);
  Graph::Scope scope(g, "loss");
  return ExampleGraph{MeanSquare(y), {y}};
}

absl::StatusOr<ExampleGraph> Toy(Graph& g, nn::AttentionPath attention) {
  Value tokens = g.Input("tokens", DType::kInt64, {4, 8});
  Value lengths = g.Input("lengths", DType::kInt64, {4});
  Value targets = g.Input("targets", DType::kInt64, {4, 8});
  auto model = models::ToyTransformer::Create(
      g, {.vocab = 16, .seq_len = 8, .dim = 32, .heads = 4, .layers = 2, .ffn = 64,
          .dropout = 0.1, .attention = attention});
  if (!model.ok()) return model.status();
  Value logits = (*model)(tokens, lengths).logits;
  Graph::Scope scope(g, "loss");
  return ExampleGraph{CrossEntropy(logits, targets), {logits}};
}

}  // namespace

std::vector<std::string> ExampleNames() { return {"mlp", "mha", "positional_encoding", "toy"}; }

absl::StatusOr<ExampleGraph> BuildExample(const std::string& name, Graph& g,
                                          nn::AttentionPath attention) {
  absl::StatusOr<ExampleGraph> out;
  if (name == "mlp") {
    out = Mlp(g);
  } else if (name == "mha") {
    out = Mha(g, attention);
  } else if (name == "positional_encoding") {
    out = PositionalEncoding(g);
  } else if (name == "toy") {
    out = Toy(g, attention);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown model '", name, "' (",
                                                   absl::StrJoin(ExampleNames(), ", "), ")"));
  }
  if (out.ok() && !out->loss.ok()) return out->loss.status();
  return out;
}

}  // namespace dagrad::models
