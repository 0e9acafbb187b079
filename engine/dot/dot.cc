#include "engine/dot/dot.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"
#include "engine/op.h"

namespace dagrad {
namespace {

enum Style {
  kInput,
  kParameter,
  kState,
  kConstant,
  kForward,
  kGradient,
  kOptimizer,
  kCommunication,
  kLoss,
  kCollapsed,
  kNumStyles
};

struct StyleDef {
  const char* legend;
  const char* attrs;
};

// Shapes differ as well as colours, so that a grey print still tells them apart.
constexpr StyleDef kStyles[kNumStyles] = {
    {"input", "shape=invhouse, style=filled, fillcolor=\"#cfe2ff\""},
    {"parameter", "shape=cylinder, style=filled, fillcolor=\"#ffe08a\""},
    {"variable (optimizer state)",
     "shape=cylinder, style=\"filled,dashed\", fillcolor=\"#e9ecef\""},
    {"constant", "shape=note, style=filled, fillcolor=\"#f8f9fa\""},
    {"forward op", "shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\""},
    {"gradient op", "shape=ellipse, style=filled, fillcolor=\"#f8d7da\", color=\"#b02a37\""},
    {"optimizer op", "shape=hexagon, style=filled, fillcolor=\"#d1e7dd\", color=\"#146c43\""},
    {"collective (all-reduce)",
     "shape=parallelogram, style=\"filled,bold\", fillcolor=\"#ffd8a8\", color=\"#d9480f\""},
    {"loss", "shape=doubleoctagon, style=filled, fillcolor=\"#ff8787\", penwidth=2"},
    {"collapsed scope", "shape=box3d, style=filled, fillcolor=\"#e2d9f3\""},
};

Style StyleOf(const Node& n) {
  switch (n.kind) {
    case NodeKind::kInput: return kInput;
    case NodeKind::kVariable: return n.trainable ? kParameter : kState;
    case NodeKind::kConstant: return kConstant;
    case NodeKind::kOp: break;
  }
  switch (n.role) {
    case NodeRole::kGradient: return kGradient;
    case NodeRole::kOptimizer: return kOptimizer;
    case NodeRole::kCommunication: return kCommunication;
    case NodeRole::kForward: break;
  }
  return kForward;
}

// Text escapes user text for the inside of a DOT quoted string. Graphviz
// reads backslash sequences in labels (\n, \l, and \N, \G: the node's and
// graph's names), so a backslash is doubled; '&' would start an entity;
// control characters and invalid bytes are shown as visible escapes, since
// a raw newline or a byte that is not UTF-8 breaks the file or the render.
std::string Text(absl::string_view s) {
  std::string out;
  for (char c : PrintableText(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '&': out += "&amp;"; break;
      default: out += c;
    }
  }
  return out;
}

// Id turns a scope path into a DOT identifier: letters and digits kept,
// every other byte as _xx, so distinct paths give distinct ids.
std::string Id(absl::string_view prefix, absl::string_view path) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(prefix);
  for (char c : path) {
    const auto b = static_cast<uint8_t>(c);
    if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')) {
      out += c;
    } else {
      out += '_';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

std::string Parent(const std::string& scope) {
  const size_t slash = scope.rfind('/');
  return slash == std::string::npos ? "" : scope.substr(0, slash);
}

std::string LastComponent(const std::string& scope) {
  const size_t slash = scope.rfind('/');
  return slash == std::string::npos ? scope : scope.substr(slash + 1);
}

// ClusterOf is the cluster that draws `scope`: the scope itself, or its
// ancestor kMaxClusterDepth levels deep (dot.h), so that the clusters'
// nesting (written by recursion, each line naming its whole path) stays
// bounded whatever the depth of the names (an ONNX node "a/a/.../a").
std::string ClusterOf(const std::string& scope) {
  size_t slash = 0;
  for (int level = 1; level <= kMaxClusterDepth; ++level, ++slash) {
    slash = scope.find('/', slash);  // the end of component `level`
    if (slash == std::string::npos) return scope;
  }
  return scope.substr(0, slash - 1);
}

bool Under(const std::string& scope, const std::string& root) {
  return scope.size() >= root.size() && scope.compare(0, root.size(), root) == 0 &&
         (scope.size() == root.size() || scope[root.size()] == '/');
}

std::string NodeLabel(const Node& n) {
  std::string label;
  if (n.op != nullptr) {
    absl::StrAppend(&label, Text(n.op->dot_label.empty() ? n.op->name : n.op->dot_label), "\\n");
  }
  absl::StrAppend(&label, Text(n.name), "\\n", n.shape.ToString());
  if (n.dtype != DType::kFloat32) absl::StrAppend(&label, " ", DTypeName(n.dtype));
  return label;
}

struct Cluster {
  std::vector<NodeId> nodes;
  std::vector<std::string> boxes;  // collapsed scopes drawn here
  std::set<std::string> children;
};

class DotWriter {
 public:
  DotWriter(const Graph& g, const DotOptions& options) : g_(g), options_(options) {}

  std::string Write(const std::vector<bool>& drawn, const std::vector<bool>& is_loss) {
    is_loss_ = &is_loss;
    std::map<std::string, Cluster> clusters;  // by scope path; "" is the top level
    clusters[""];
    const auto place = [&](const std::string& scope) -> Cluster& {
      for (std::string s = scope; !s.empty(); s = Parent(s)) {
        clusters[Parent(s)].children.insert(s);
      }
      return clusters[scope];
    };
    for (NodeId id = 0; id < g_.num_nodes(); ++id) {
      if (!drawn[id]) continue;
      const Node& n = g_.node(id);
      const std::string* root = CollapsedUnder(n.scope);
      if (root == nullptr) {
        place(ClusterOf(n.scope)).nodes.push_back(id);
        continue;
      }
      if (box_counts_[*root]++ == 0) place(ClusterOf(Parent(*root))).boxes.push_back(*root);
      box_of_[id] = *root;
    }

    out_ = "digraph dagrad {\n";
    Line(1, "graph [fontname=\"Helvetica\", fontsize=12, rankdir=TB, newrank=true];");
    if (!options_.title.empty()) {
      Line(1, absl::StrCat("label=\"", Text(options_.title), "\"; labelloc=t;"));
    }
    Line(1, "node [fontname=\"Helvetica\", fontsize=10];");
    Line(1, "edge [color=\"#495057\", arrowsize=0.7];");
    if (options_.legend) WriteLegend();
    WriteCluster(clusters, "", 1);
    WriteEdges(drawn);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  // CollapsedUnder returns the outermost collapse path `scope` is under.
  const std::string* CollapsedUnder(const std::string& scope) const {
    const std::string* best = nullptr;
    for (const std::string& c : options_.collapse) {
      if (Under(scope, c) && (best == nullptr || c.size() < best->size())) best = &c;
    }
    return best;
  }

  void Line(int depth, absl::string_view text) {
    out_.append(2 * depth, ' ');
    absl::StrAppend(&out_, text, "\n");
  }

  std::string Rep(NodeId id) const {
    auto it = box_of_.find(id);
    return it == box_of_.end() ? absl::StrCat("n", id) : Id("collapsed_", it->second);
  }

  void WriteLegend() {
    // Scope ids never hold "__" followed by a non-hex letter, so this id
    // cannot collide with a scope's.
    Line(1, "subgraph cluster__legend {");
    Line(2, "label=\"legend\"; style=\"rounded,dashed\"; color=\"#adb5bd\";");
    for (int s = 0; s < kNumStyles; ++s) {
      Line(2, absl::StrCat("legend_", s, " [label=\"", kStyles[s].legend, "\", ",
                           kStyles[s].attrs, "];"));
    }
    // Invisible edges stack the examples in one column.
    for (int s = 0; s + 1 < kNumStyles; ++s) {
      Line(2, absl::StrCat("legend_", s, " -> legend_", s + 1, " [style=invis];"));
    }
    Line(1, "}");
  }

  void WriteCluster(const std::map<std::string, Cluster>& clusters, const std::string& scope,
                    int depth) {
    const Cluster& c = clusters.at(scope);
    if (!scope.empty()) {
      Line(depth - 1, absl::StrCat("subgraph ", Id("cluster_", scope), " {"));
      Line(depth, absl::StrCat("label=\"", Text(LastComponent(scope)), "\"; tooltip=\"",
                               Text(scope), "\"; style=rounded; color=\"#adb5bd\";"));
    }
    for (NodeId id : c.nodes) {
      const Node& n = g_.node(id);
      const Style style = (*is_loss_)[id] ? kLoss : StyleOf(n);
      Line(depth, absl::StrCat("n", id, " [label=\"", NodeLabel(n), "\", tooltip=\"",
                               Text(n.path()), "\", ", kStyles[style].attrs, "];"));
    }
    for (const std::string& box : c.boxes) {
      const int count = box_counts_.at(box);
      Line(depth, absl::StrCat(Id("collapsed_", box), " [label=\"", Text(box), "\\n(", count,
                               count == 1 ? " node" : " nodes", ")\", tooltip=\"", Text(box),
                               "\", ", kStyles[kCollapsed].attrs, "];"));
    }
    for (const std::string& child : c.children) WriteCluster(clusters, child, depth + 1);
    if (!scope.empty()) Line(depth - 1, "}");
  }

  // WriteEdges draws each input edge in consumer order. Edges between two
  // ordinary nodes are all kept (x * x has two); edges of collapsed scopes
  // are drawn once per pair, and those inside one scope not at all.
  void WriteEdges(const std::vector<bool>& drawn) {
    std::set<std::pair<std::string, std::string>> seen;
    for (NodeId id = 0; id < g_.num_nodes(); ++id) {
      if (!drawn[id]) continue;
      const Node& n = g_.node(id);
      const std::string to = Rep(id);
      for (NodeId in : n.inputs) {
        if (in == kNoNode) continue;
        const std::string from = Rep(in);
        const bool boxed = box_of_.contains(id) || box_of_.contains(in);
        if (boxed && (from == to || !seen.emplace(from, to).second)) continue;
        std::string attrs;
        if (!boxed && n.role == NodeRole::kGradient) attrs = " [color=\"#b02a37\"]";
        if (!boxed && n.role == NodeRole::kOptimizer) attrs = " [color=\"#146c43\"]";
        if (!boxed && n.role == NodeRole::kCommunication) attrs = " [color=\"#d9480f\"]";
        Line(1, absl::StrCat(from, " -> ", to, attrs, ";"));
      }
    }
  }

  const Graph& g_;
  const DotOptions& options_;
  const std::vector<bool>* is_loss_ = nullptr;
  std::map<NodeId, std::string> box_of_;        // collapsed node -> its box
  std::map<std::string, int> box_counts_;       // box -> nodes in it
  std::string out_;
};

absl::Status CheckValue(const Graph& g, const Value& v, absl::string_view what, size_t i) {
  if (v.is_null()) {
    return absl::InvalidArgumentError(absl::StrCat("ToDot: ", what, "[", i, "] is a null Value"));
  }
  if (v.graph() != &g) {
    return absl::InvalidArgumentError(
        absl::StrCat("ToDot: ", what, "[", i, "] belongs to another graph"));
  }
  if (!v.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ToDot: ", what, "[", i, "] is an error: ", v.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ToDot(const Graph& g, absl::Span<const Value> roots,
                                  const DotOptions& options) {
  for (size_t i = 0; i < roots.size(); ++i) {
    if (absl::Status s = CheckValue(g, roots[i], "roots", i); !s.ok()) return s;
  }
  std::vector<bool> is_loss(g.num_nodes(), false);
  for (size_t i = 0; i < options.losses.size(); ++i) {
    if (absl::Status s = CheckValue(g, options.losses[i], "losses", i); !s.ok()) return s;
    is_loss[options.losses[i].id()] = true;
  }
  for (const std::string& c : options.collapse) {
    if (c.empty()) {
      return absl::InvalidArgumentError(
          "ToDot: an empty collapse path would collapse the whole graph");
    }
  }
  const std::vector<bool> drawn =
      roots.empty() ? std::vector<bool>(g.num_nodes(), true) : DependedOn(g, roots);
  return DotWriter(g, options).Write(drawn, is_loss);
}

absl::Status WriteDotFile(const std::string& path, const std::string& dot) {
  return WriteFileAtomically(path, dot);
}

}  // namespace dagrad
