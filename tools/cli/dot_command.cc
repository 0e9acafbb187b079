// `dagrad dot`: writes the DOT of a built-in graph, or of an ONNX model
// (--model=file.onnx, ops/onnx/run.h), and renders it.

#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/dot/dot.h"
#include "engine/view/viewer_html.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "models/example_graphs.h"
#include "tools/cli/onnx_model.h"
#ifdef DAGRAD_HAVE_ONNX
#include "ops/reduce.h"
#endif

ABSL_FLAG(std::string, model, "",
          "dot: a built-in graph (mlp, mha, positional_encoding, toy; default mlp) or an ONNX file; "
          "eval: an ONNX file or a Hugging Face GPT-2 directory; generate, tokenize: a Hugging "
          "Face GPT-2 directory (config.json, model.safetensors, vocab.json, merges.txt)");
ABSL_DECLARE_FLAG(std::string, input);  // eval_command.cc
ABSL_FLAG(std::string, render, "", "also render next to the .dot: svg or png");
ABSL_FLAG(bool, html, false, "write --out as the interactive viewer's page (HTML) instead of DOT");
ABSL_FLAG(bool, backward, false, "draw the gradient graph of the model's loss too");
ABSL_FLAG(std::string, collapse, "",
          "comma-separated scope paths to draw as one box each (e.g. mha)");

namespace dagrad::cli {
namespace {

// DrawnGraph is what dot draws: a graph, the values to draw back from,
// and the loss (null for an ONNX model drawn forward only).
struct DrawnGraph {
  std::unique_ptr<Graph> graph;
  std::vector<Value> roots;
  Value loss;
};

// OnnxDrawnGraph imports --model=file.onnx with the shapes of --input (or
// symbolic dims of 1), drawn from its outputs; its loss, for --backward,
// is the sum of its first output.
absl::StatusOr<DrawnGraph> OnnxDrawnGraph(const std::string& model) {
#ifdef DAGRAD_HAVE_ONNX
  DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnxForInputs(model, absl::GetFlag(FLAGS_input)));
  DrawnGraph drawn{std::move(m.graph), {}, Value()};
  for (const OnnxValue& out : m.outputs) drawn.roots.push_back(out.value);
  if (!absl::GetFlag(FLAGS_backward)) return drawn;
  if (m.outputs.empty() || !IsFloating(m.outputs[0].value.dtype())) {
    return absl::InvalidArgumentError("--backward needs a model whose first output is float");
  }
  drawn.loss = Sum(m.outputs[0].value);
  drawn.roots.push_back(drawn.loss);
  return drawn;
#else
  return NoOnnx(model);
#endif
}

// ExampleDrawnGraph builds the built-in graph --model names.
absl::StatusOr<DrawnGraph> ExampleDrawnGraph(const std::string& model) {
  if (!absl::GetFlag(FLAGS_input).empty()) {
    return absl::InvalidArgumentError("--input is for --model=file.onnx");
  }
  DrawnGraph drawn{std::make_unique<Graph>(), {}, Value()};
  DAGRAD_ASSIGN_OR_RETURN(const nn::AttentionPath attention, AttentionFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(models::ExampleGraph example,
                          models::BuildExample(model, *drawn.graph, attention));
  drawn.roots = example.outputs;
  drawn.roots.push_back(example.loss);
  drawn.loss = example.loss;
  return drawn;
}

// BuildDrawnGraph builds --model's graph and, with --backward, the
// gradients of its loss with respect to its parameters.
absl::StatusOr<DrawnGraph> BuildDrawnGraph() {
  const std::string model = absl::GetFlag(FLAGS_model).empty() ? "mlp" : absl::GetFlag(FLAGS_model);
  DAGRAD_ASSIGN_OR_RETURN(DrawnGraph drawn,
                          IsOnnxPath(model) ? OnnxDrawnGraph(model) : ExampleDrawnGraph(model));
  if (!absl::GetFlag(FLAGS_backward)) return drawn;
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads,
                          Gradients(drawn.loss, drawn.graph->Parameters()));
  for (const Value& v : grads) {
    if (!v.is_null()) drawn.roots.push_back(v);
  }
  return drawn;
}

// Render draws the DOT file `out` as an svg or png beside it, or says why
// it cannot (Graphviz is not installed).
absl::Status Render(const std::string& out, const std::string& format) {
  const std::string image =
      absl::StrCat(absl::EndsWith(out, ".dot") ? out.substr(0, out.size() - 4) : out, ".", format);
  absl::Status st = RenderDot(out, format, image);
  if (absl::IsUnavailable(st)) {
    std::cout << "Graphviz is not available, so " << image << " was not rendered: "
              << st.message() << "\n";
    return absl::OkStatus();
  }
  DAGRAD_RETURN_IF_ERROR(st);
  std::cout << "wrote " << image << "\n";
  return absl::OkStatus();
}

// CheckCollapseScope: --collapse names a scope some node of `g` is in (or
// under); a misspelt one would silently collapse nothing.
absl::Status CheckCollapseScope(const Graph& g, const std::string& scope) {
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const std::string& s = g.node(id).scope;
    if (s == scope || absl::StartsWith(s, scope + "/")) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--collapse: no node of the graph is in scope '", scope, "'"));
}

absl::Status Dot() {
  const std::string out = absl::GetFlag(FLAGS_out), render = absl::GetFlag(FLAGS_render);
  if (out.empty()) return absl::InvalidArgumentError("--out is required (the .dot file to write)");
  DAGRAD_RETURN_IF_ERROR(AttentionFromFlags().status());
  if (!render.empty() && render != "svg" && render != "png") {
    return absl::InvalidArgumentError(absl::StrCat("--render must be svg or png, got '", render, "'"));
  }
  if (absl::GetFlag(FLAGS_html) && !render.empty()) {
    return absl::InvalidArgumentError("--render draws the DOT file, which --html does not write");
  }
  if (absl::GetFlag(FLAGS_html) && !absl::GetFlag(FLAGS_collapse).empty()) {
    return absl::InvalidArgumentError(
        "--collapse folds scopes of the DOT file; the --html page opens with every scope "
        "collapsed, and a click opens one");
  }
  const std::string model = absl::GetFlag(FLAGS_model);
  DAGRAD_RETURN_IF_ERROR(RefuseOverwrite(
      out, "out", {{IsOnnxPath(model) ? model : "", "model"}, {absl::GetFlag(FLAGS_input), "input"}}));
  DAGRAD_ASSIGN_OR_RETURN(DrawnGraph drawn, BuildDrawnGraph());
  DotOptions options;
  options.title = absl::StrCat(model,
                               absl::GetFlag(FLAGS_backward) ? ": forward and backward" : "");
  if (!drawn.loss.is_null()) options.losses = {drawn.loss};
  for (absl::string_view scope :
       absl::StrSplit(absl::GetFlag(FLAGS_collapse), ',', absl::SkipEmpty())) {
    options.collapse.emplace_back(scope);
    DAGRAD_RETURN_IF_ERROR(CheckCollapseScope(*drawn.graph, options.collapse.back()));
  }
  std::string note;
  if (absl::GetFlag(FLAGS_html)) {
    DAGRAD_RETURN_IF_ERROR(WriteViewerPage(*drawn.graph, drawn.roots,
                                           {.title = options.title, .losses = options.losses}, out,
                                           &note));
  } else {
    DAGRAD_ASSIGN_OR_RETURN(const std::string dot, ToDot(*drawn.graph, drawn.roots, options));
    DAGRAD_RETURN_IF_ERROR(WriteDotFile(out, dot));
  }
  std::cout << note << (note.empty() ? "" : "\n") << "wrote " << out << "\n";
  return render.empty() ? absl::OkStatus() : Render(out, render);
}

int RunDot() { return ExitCode(DotCommand(), Dot()); }

}  // namespace

Command DotCommand() {
  return {"dot", "write the DOT (and SVG/PNG) of a built-in graph or an ONNX model",
          {"model", "input", "out", "render", "backward", "collapse", "attention", "html"}, RunDot};
}

}  // namespace dagrad::cli
