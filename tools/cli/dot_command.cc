// `dagrad dot`: writes the DOT of a built-in graph and renders it.

#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/autodiff/autodiff.h"
#include "engine/dot.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/example_graphs.h"

ABSL_FLAG(std::string, model, "mlp", "built-in graph: mlp, mha, positional_encoding, toy");
ABSL_FLAG(std::string, render, "", "also render next to the .dot: svg or png");
ABSL_FLAG(bool, backward, false, "draw the gradient graph of the model's loss too");
ABSL_FLAG(std::string, collapse, "",
          "comma-separated scope paths to draw as one box each (e.g. mha)");

namespace dagrad::cli {
namespace {

int RunDot() {
  const Command cmd = DotCommand();
  const std::string out = absl::GetFlag(FLAGS_out);
  const std::string render = absl::GetFlag(FLAGS_render);
  if (out.empty()) return UsageError(cmd, "--out is required (the .dot file to write)");
  if (!render.empty() && render != "svg" && render != "png") {
    return UsageError(cmd, absl::StrCat("--render must be svg or png, got '", render, "'"));
  }
  Graph g;
  absl::StatusOr<ExampleGraph> example = BuildExample(absl::GetFlag(FLAGS_model), g);
  if (!example.ok()) return Failure(cmd, example.status());
  std::vector<Value> roots = example->outputs;
  roots.push_back(example->loss);
  if (absl::GetFlag(FLAGS_backward)) {
    auto grads = Gradients(example->loss, g.Parameters());
    if (!grads.ok()) return Failure(cmd, grads.status());
    for (const Value& v : *grads) {
      if (!v.is_null()) roots.push_back(v);
    }
  }
  DotOptions options;
  options.title = absl::StrCat(absl::GetFlag(FLAGS_model),
                               absl::GetFlag(FLAGS_backward) ? ": forward and backward" : "");
  options.losses = {example->loss};
  for (absl::string_view scope :
       absl::StrSplit(absl::GetFlag(FLAGS_collapse), ',', absl::SkipEmpty())) {
    options.collapse.emplace_back(scope);
  }
  absl::StatusOr<std::string> dot = ToDot(g, roots, options);
  if (!dot.ok()) return Failure(cmd, dot.status());
  if (absl::Status st = WriteDotFile(out, *dot); !st.ok()) return Failure(cmd, st);
  std::cout << "wrote " << out << "\n";
  if (render.empty()) return kExitOk;
  std::string image = out;
  if (absl::EndsWith(image, ".dot")) image.resize(image.size() - 4);
  image += "." + render;
  absl::Status st = RenderDot(out, render, image);
  if (absl::IsUnavailable(st)) {
    std::cout << "Graphviz is not available, so " << image << " was not rendered: "
              << st.message() << "\n";
    return kExitOk;
  }
  if (!st.ok()) return Failure(cmd, st);
  std::cout << "wrote " << image << "\n";
  return kExitOk;
}

}  // namespace

Command DotCommand() {
  return {"dot", "write the DOT (and SVG/PNG) of a built-in graph",
          {"model", "out", "render", "backward", "collapse"}, RunDot};
}

}  // namespace dagrad::cli
