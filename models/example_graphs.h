// models/example_graphs.h
//
// Small graphs that show what dagrad builds, to draw (`dagrad dot
// --model=NAME`) or to try the engine on: an MLP with a cross-entropy loss,
// multi-head attention, a positional encoding, the toy transformer.
//
//   Graph g;
//   DAGRAD_ASSIGN_OR_RETURN(ExampleGraph mha,
//                           BuildExample("mha", g, nn::AttentionPath::kComposed));
//   DAGRAD_ASSIGN_OR_RETURN(std::string dot, ToDot(g, {mha.loss}));

#ifndef DAGRAD_MODELS_EXAMPLE_GRAPHS_H_
#define DAGRAD_MODELS_EXAMPLE_GRAPHS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "models/nn/attention.h"

namespace dagrad::models {

struct ExampleGraph {
  Value loss;                  // a scalar to differentiate
  std::vector<Value> outputs;  // what the forward graph computes
};

// ExampleNames lists the models: mlp, mha, positional_encoding, toy.
std::vector<std::string> ExampleNames();

// BuildExample adds model `name` to `g`, its attention by `attention` (the
// fused op draws as one node; mha draws its weights, and so the composed
// subgraph, only with kComposed); InvalidArgument for an unknown name
// (listing the known ones).
absl::StatusOr<ExampleGraph> BuildExample(const std::string& name, Graph& g,
                                          nn::AttentionPath attention);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_EXAMPLE_GRAPHS_H_
