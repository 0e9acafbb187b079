// engine/dot/dot.h
//
// Graphviz DOT export of a graph, or of the part of it some values depend
// on: the forward pass, the backward pass autodiff built, an optimizer step.
//
//   DotOptions opts{.title = "toy transformer, one training step",
//                   .collapse = {"encoder/layers/1"}, .losses = {loss}};
//   DAGRAD_ASSIGN_OR_RETURN(std::string dot, ToDot(g, {loss, update}, opts));
//   DAGRAD_RETURN_IF_ERROR(WriteDotFile("step.dot", dot));
//   DAGRAD_RETURN_IF_ERROR(RenderDot("step.dot", "svg", "step.svg"));
//
// What is drawn:
//   - each node as a box showing its op's DOT label (OpDef::dot_label), its
//     name, and its shape, plus the dtype when it is not float32; its full
//     path is the tooltip;
//   - kinds and roles in distinct shapes and colours: inputs, parameters
//     (trainable variables), other variables (optimizer state), constants,
//     forward ops, gradient ops (NodeRole::kGradient), optimizer ops
//     (NodeRole::kOptimizer), collectives (NodeRole::kCommunication), the
//     losses, collapsed scopes; a legend shows
//     each style;
//   - name scopes as nested clusters labelled with the scope's own name, so
//     a subgraph builder (multi-head attention, positional encoding) is a
//     box around its ops; autodiff's nodes sit under "grad/..."; scopes
//     nested deeper than kMaxClusterDepth are drawn in their ancestor at
//     that depth (their nodes' tooltips keep the whole path);
//   - a collapsed scope, with everything under it, as one node labelled
//     with its path and node count; edges to and from it are drawn once.
//
// The output is deterministic, so it can be diffed and tested: node ids are
// "n<NodeId>", cluster and collapsed-node ids are derived from the scope
// path, and everything is written in node-id and scope-path order. Names
// are escaped so that no name, scope or op label can break the file:
// quotes, backslashes, control characters and bytes that are not UTF-8
// become visible escapes (a name "a\nb" shows as a\nb on one line), '&' is
// written as an entity, and labels are plain quoted strings, never record
// or HTML labels, so <, >, {, } and | are ordinary characters.

#ifndef DAGRAD_ENGINE_DOT_DOT_H_
#define DAGRAD_ENGINE_DOT_DOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/graph.h"

namespace dagrad {

// kMaxClusterDepth: the deepest scope drawn as a cluster of its own.
inline constexpr int kMaxClusterDepth = 64;

struct DotOptions {
  // title is drawn above the graph; empty for none.
  std::string title;
  // collapse lists scope paths, as Node::scope spells them (e.g.
  // "encoder/layers/0/self_attn"), each drawn as one node standing for every
  // node in it and in the scopes under it. An outer path wins over an inner
  // one; a path no drawn node is under draws nothing.
  std::vector<std::string> collapse;
  // losses are drawn in the loss style (they are drawn only if reached).
  std::vector<Value> losses;
  // legend adds a cluster with one example node per style.
  bool legend = true;
};

// ToDot returns the DOT text of `roots` and every node they depend on, or
// of the whole graph when `roots` is empty.
//
// Errors: InvalidArgument for a root or loss that is null, an error Value
// or of another graph, and for an empty collapse path.
//
//   DAGRAD_ASSIGN_OR_RETURN(std::string dot, ToDot(g, {}));          // everything
//   DAGRAD_ASSIGN_OR_RETURN(std::string fwd, ToDot(g, {logits}, {.legend = false}));
absl::StatusOr<std::string> ToDot(const Graph& g, absl::Span<const Value> roots,
                                  const DotOptions& options = {});

// WriteDotFile writes `dot` to `path` atomically (WriteFileAtomically).
//
// Errors: those of WriteFileAtomically (NotFound for a missing directory, ...).
//
//   // setup: Files
//   DAGRAD_RETURN_IF_ERROR(WriteDotFile("model.dot", dot));
absl::Status WriteDotFile(const std::string& path, const std::string& dot);

// DotProgram is Graphviz's `dot`: the one CMake found (DAGRAD_DOT_PROGRAM)
// when it is still executable, else the first on the PATH (unset: the
// system's default path, where posix_spawnp looks too), else "" (none).
//
//   if (DotProgram().empty()) std::cerr << "no Graphviz: DOT files only\n";
std::string DotProgram();

// RenderDot runs Graphviz, `<program> -T<format> -o <out> <dot_path>`, to
// draw the DOT file at `dot_path` as "svg" or "png" into `out_path`. The
// program is `dot_program` when given, else DotProgram(). It is started directly
// (posix_spawn, no shell), its output captured; the image is written to a
// temporary file and renamed to `out_path` only on success, so a failure
// leaves no partial image.
//
// Errors: InvalidArgument for another format; the errno's code (NotFound,
// PermissionDenied, ...) when `dot_path` cannot be read or `out_path`
// cannot be created; Unavailable when the program cannot be started (Graphviz
// not installed: the message says so); InvalidArgument when dot exits with
// an error or prints any warning, with its output in the message (a png
// over cairo's 32767 pixels, which dot scales down to fit and says so, is
// written, not refused); Internal
// when it is killed by a signal.
//
//   // setup: Files
//   absl::Status s = RenderDot("model.dot", "svg", "model.svg");
//   if (absl::IsUnavailable(s)) std::cerr << "no Graphviz: " << s << "\n";
absl::Status RenderDot(const std::string& dot_path, const std::string& format,
                       const std::string& out_path, const std::string& dot_program = "");

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_DOT_DOT_H_
