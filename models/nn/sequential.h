// models/nn/sequential.h
//
// nn::Sequential is torch.nn.Sequential: layers applied in order, the i-th
// created under prefix "<i>" of the Sequential's scope, so its parameters
// are named "0.weight", "2.bias", ... A parameterless step (an activation)
// takes an index too, as in PyTorch.
//
//   // setup: Features2
//   DAGRAD_ASSIGN_OR_RETURN(nn::Sequential net, nn::Sequential::Create(g, "net"));
//   DAGRAD_RETURN_IF_ERROR(net.Append<nn::Linear>({.in_features = 2, .out_features = 16}));
//   net.Append([](Value h) { return Relu(h); });
//   DAGRAD_RETURN_IF_ERROR(net.Append<nn::Linear>({.in_features = 16, .out_features = 1}));
//   Value y = net(x);   // x (B, 2) -> (B, 1); named_parameters "0.weight", ..., "2.bias"

#ifndef DAGRAD_MODELS_NN_SEQUENTIAL_H_
#define DAGRAD_MODELS_NN_SEQUENTIAL_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "models/nn/module.h"

namespace dagrad::nn {

class Sequential {
 public:
  Sequential() = default;  // empty until assigned one made by Create
  // InvalidArgument for a bad prefix (module.h).
  static absl::StatusOr<Sequential> Create(Graph& g, absl::string_view prefix);

  // Append creates a Layer (Linear, LayerNorm, Mlp, ...) from `options`
  // (Layer::Options) under prefix "<index>" and appends it; the errors of
  // Layer::Create, and FailedPrecondition on a Sequential Create did not make.
  template <typename Layer>
  absl::Status Append(const typename Layer::Options& options);

  // Append adds a step without parameters, e.g. an activation.
  void Append(std::function<Value(Value)> step) { steps_.push_back(std::move(step)); }

  Value operator()(Value x) const;
  Value Forward(Value x) const { return (*this)(x); }

  int size() const { return static_cast<int>(steps_.size()); }
  const std::vector<Value>& parameters() const { return parameters_; }
  NamedParameters named_parameters() const { return RelativeNames(scope_, parameters_); }

 private:
  Graph* graph_ = nullptr;
  std::string scope_;
  std::vector<std::function<Value(Value)>> steps_;
  std::vector<Value> parameters_;
};

template <typename Layer>
absl::Status Sequential::Append(const typename Layer::Options& options) {
  if (graph_ == nullptr) return absl::FailedPreconditionError("Sequential::Append before Create");
  Graph::ScopePathGuard in_scope(*graph_, scope_);
  absl::StatusOr<Layer> layer = Layer::Create(*graph_, absl::StrCat(size()), options);
  if (!layer.ok()) return layer.status();
  for (const Value& p : layer->parameters()) parameters_.push_back(p);
  steps_.push_back([l = *std::move(layer)](Value x) { return l(x); });
  return absl::OkStatus();
}

}  // namespace dagrad::nn

#endif  // DAGRAD_MODELS_NN_SEQUENTIAL_H_
