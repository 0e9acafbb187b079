// tools/cli/example_graphs.h
//
// The built-in graphs `dagrad dot --model=NAME` draws.

#ifndef DAGRAD_TOOLS_CLI_EXAMPLE_GRAPHS_H_
#define DAGRAD_TOOLS_CLI_EXAMPLE_GRAPHS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph.h"
#include "models/nn/attention.h"

namespace dagrad::cli {

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

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_EXAMPLE_GRAPHS_H_
