// DOT export: deterministic output, styles per kind and role, nested scope
// clusters, collapsed scopes, subsets, hostile names that must not break
// the file, and rendering with Graphviz when it is installed.

#include "engine/dot/dot.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"
#include "engine/op.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A forward pass in PyTorch-like scopes, its backward pass, and an SGD step
// with momentum, built the same way every time.
struct Model {
  Graph g;
  Value x, lengths, w1, b1, w2, half, y, loss, momentum, update;
  std::vector<Value> grads;

  Model() {
    x = g.Input("x", DType::kFloat32, {2, 3});
    lengths = g.Input("lengths", DType::kInt64, {2});
    {
      Graph::Scope s(g, "encoder/layers/0");
      Value h;
      {
        Graph::Scope a(g, "self_attn");
        w1 = g.Parameter("in_proj_weight", {4, 3}, Initializer::XavierUniform());
        b1 = g.Parameter("in_proj_bias", {4}, Initializer::Zeros());
        h = Relu(Linear(x, w1, b1));
      }
      Graph::Scope l(g, "linear1");
      w2 = g.Parameter("weight", {2, 4}, Initializer::XavierUniform());
      y = Linear(h, w2);
    }
    half = g.Constant(Tensor::Scalar<float>(0.5f), "half");
    loss = Mean(y * y) * half;
    grads = *Gradients(loss, {w1, w2});
    Graph::RoleScope role(g, NodeRole::kOptimizer);
    Graph::Scope s(g, "sgd");
    momentum = g.Variable("momentum", {4, 3}, Initializer::Zeros());
    update = w1 - (momentum * 0.9 + grads[0]) * 0.1;
  }
};

std::string Dot(const Graph& g, absl::Span<const Value> roots, const DotOptions& o = {}) {
  auto dot = ToDot(g, roots, o);
  EXPECT_TRUE(dot.ok()) << dot.status();
  return dot.ok() ? *dot : "";
}

// NodeLine returns the line declaring node `v`, or "".
std::string NodeLine(const std::string& dot, const Value& v) {
  const std::string prefix = absl::StrCat("n", v.id(), " [");
  for (absl::string_view line : absl::StrSplit(dot, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(line, prefix)) return std::string(line);
  }
  return "";
}

int CountLines(const std::string& dot, absl::string_view want) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(dot, '\n')) {
    n += absl::StripAsciiWhitespace(line) == want;
  }
  return n;
}

// Clusters maps each cluster id to its enclosing cluster ("" at the top),
// and each node id ("n5") to the cluster declaring it.
std::map<std::string, std::string> Clusters(const std::string& dot) {
  std::map<std::string, std::string> parent;
  std::vector<std::string> open = {""};
  for (absl::string_view line : absl::StrSplit(dot, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "subgraph ") && absl::ConsumeSuffix(&line, " {")) {
      parent[std::string(line)] = open.back();
      open.emplace_back(line);
    } else if (line == "}" && open.size() > 1) {
      open.pop_back();
    } else if (line.size() > 1 && line[0] == 'n' && absl::StrContains(line, " [label=")) {
      parent[std::string(line.substr(0, line.find(' ')))] = open.back();
    }
  }
  return parent;
}

// DotSyntaxProblem returns "" when `dot` is well formed as far as quoting
// goes: valid UTF-8, no control bytes but newlines, every quoted string
// closed on its line, braces and brackets balanced outside strings.
std::string DotSyntaxProblem(const std::string& dot) {
  if (!IsValidUtf8(dot)) return "not valid UTF-8";
  bool in_string = false;
  int braces = 0, brackets = 0;
  for (size_t i = 0; i < dot.size(); ++i) {
    const char c = dot[i];
    if (static_cast<uint8_t>(c) < 0x20 && c != '\n') return absl::StrCat("control byte at ", i);
    if (in_string) {
      if (c == '\n') return absl::StrCat("newline inside a string at ", i);
      if (c == '\\') {
        if (++i == dot.size() || dot[i] == '\n') return absl::StrCat("backslash at ", i);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{') ++braces;
    if (c == '}' && --braces < 0) return absl::StrCat("unbalanced } at ", i);
    if (c == '[') ++brackets;
    if (c == ']' && --brackets < 0) return absl::StrCat("unbalanced ] at ", i);
  }
  if (in_string || braces != 0 || brackets != 0) return "unclosed string, brace or bracket";
  return "";
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST(Dot, SameGraphSameBytes) {
  Model a, b;
  const DotOptions opts{.title = "step", .collapse = {"grad"}, .losses = {a.loss}};
  const DotOptions opts_b{.title = "step", .collapse = {"grad"}, .losses = {b.loss}};
  const std::string dot = Dot(a.g, {}, opts);
  EXPECT_EQ(dot, Dot(a.g, {}, opts));
  EXPECT_EQ(dot, Dot(b.g, {}, opts_b));
  EXPECT_EQ(DotSyntaxProblem(dot), "");
  EXPECT_TRUE(absl::StartsWith(dot, "digraph dagrad {\n"));
  EXPECT_THAT(dot, HasSubstr("label=\"step\"; labelloc=t;"));
}

TEST(Dot, NodesShowOpNameShapeAndNonDefaultDType) {
  Model m;
  const std::string dot = Dot(m.g, {});
  EXPECT_THAT(NodeLine(dot, m.y), HasSubstr("label=\"Linear\\nlinear\\n(2, 2)\""));
  EXPECT_THAT(NodeLine(dot, m.y), HasSubstr("tooltip=\"encoder/layers/0/linear1/linear\""));
  EXPECT_THAT(NodeLine(dot, m.lengths), HasSubstr("label=\"lengths\\n(2,) int64\""));
  EXPECT_THAT(NodeLine(dot, m.w1), HasSubstr("label=\"in_proj_weight\\n(4, 3)\""));
  EXPECT_THAT(NodeLine(dot, m.half), HasSubstr("label=\"half\\n()\""));
}

TEST(Dot, EachKindAndRoleHasItsStyle) {
  Model m;
  const std::string dot = Dot(m.g, {}, {.losses = {m.loss}});
  EXPECT_THAT(NodeLine(dot, m.x), HasSubstr("shape=invhouse"));
  EXPECT_THAT(NodeLine(dot, m.w1), HasSubstr("shape=cylinder, style=filled,"));
  EXPECT_THAT(NodeLine(dot, m.momentum), HasSubstr("shape=cylinder, style=\"filled,dashed\""));
  EXPECT_THAT(NodeLine(dot, m.half), HasSubstr("shape=note"));
  EXPECT_THAT(NodeLine(dot, m.y), HasSubstr("shape=box, style=\"rounded,filled\""));
  EXPECT_THAT(NodeLine(dot, m.grads[0]), HasSubstr("shape=ellipse"));
  EXPECT_THAT(NodeLine(dot, m.update), HasSubstr("shape=hexagon"));
  EXPECT_THAT(NodeLine(dot, m.loss), HasSubstr("shape=doubleoctagon"));
  // Edges into gradient and optimizer ops are coloured like them.
  EXPECT_THAT(dot, HasSubstr(absl::StrCat(" -> n", m.grads[0].id(), " [color=\"#b02a37\"];")));
  EXPECT_THAT(dot, HasSubstr(absl::StrCat(" -> n", m.update.id(), " [color=\"#146c43\"];")));
}

TEST(Dot, LegendShowsEveryStyleAndCanBeLeftOut) {
  Model m;
  const std::string dot = Dot(m.g, {});
  EXPECT_THAT(dot, HasSubstr("subgraph cluster__legend {"));
  for (const char* style : {"input", "parameter", "variable (optimizer state)", "constant",
                            "forward op", "gradient op", "optimizer op", "loss",
                            "collapsed scope"}) {
    EXPECT_THAT(dot, HasSubstr(absl::StrCat("[label=\"", style, "\", "))) << style;
  }
  EXPECT_THAT(Dot(m.g, {}, {.legend = false}), Not(HasSubstr("legend")));
}

TEST(Dot, ScopesBecomeNestedClusters) {
  Model m;
  const auto parent = Clusters(Dot(m.g, {}));
  EXPECT_EQ(parent.at("cluster_encoder"), "");
  EXPECT_EQ(parent.at("cluster_encoder_2flayers"), "cluster_encoder");
  EXPECT_EQ(parent.at("cluster_encoder_2flayers_2f0"), "cluster_encoder_2flayers");
  EXPECT_EQ(parent.at("cluster_encoder_2flayers_2f0_2fself_5fattn"),
            "cluster_encoder_2flayers_2f0");
  EXPECT_EQ(parent.at("cluster_encoder_2flayers_2f0_2flinear1"), "cluster_encoder_2flayers_2f0");
  EXPECT_EQ(parent.at(absl::StrCat("n", m.w1.id())), "cluster_encoder_2flayers_2f0_2fself_5fattn");
  EXPECT_EQ(parent.at(absl::StrCat("n", m.x.id())), "");
  EXPECT_EQ(parent.at(absl::StrCat("n", m.update.id())), "cluster_sgd");
  // Autodiff's nodes sit under grad/<forward scope>.
  EXPECT_EQ(parent.at("cluster_grad_2fencoder"), "cluster_grad");
  const std::string dot = Dot(m.g, {});
  EXPECT_THAT(dot, HasSubstr("label=\"self_attn\"; tooltip=\"encoder/layers/0/self_attn\";"));
}

// Scopes nest as deep as names do (an ONNX node "a/a/.../a" imports as
// one scope per part): 20000 levels overflowed the stack, clusters written
// by recursion, and the file grew as the square of the depth. Clusters
// stop at kMaxClusterDepth; the node's tooltip keeps its whole path.
TEST(Dot, ScopesDeeperThanTheLimitAreDrawnInTheirAncestor) {
  Graph g;
  std::vector<std::unique_ptr<Graph::Scope>> scopes;
  for (int i = 0; i < 20000; ++i) scopes.push_back(std::make_unique<Graph::Scope>(g, "a"));
  const Value x = g.Input("x", DType::kFloat32, {2});
  scopes.clear();
  const std::string dot = Dot(g, {});
  const auto parent = Clusters(dot);
  std::string deepest = "cluster_a";
  for (int i = 1; i < kMaxClusterDepth; ++i) deepest += "_2fa";
  EXPECT_EQ(parent.at(absl::StrCat("n", x.id())), deepest);
  EXPECT_FALSE(parent.contains(deepest + "_2fa"));
  EXPECT_LT(dot.size(), 200000u);
  EXPECT_THAT(dot, HasSubstr(x.path()));
}

TEST(Dot, CollapsedScopesBecomeOneNodeWithEdgesKept) {
  Model m;
  const std::string dot = Dot(m.g, {}, {.collapse = {"encoder/layers/0/self_attn", "encoder"}});
  // The outer path wins: everything under "encoder" is one box at the top.
  const std::string box = "collapsed_encoder";
  const auto parent = Clusters(dot);
  for (const auto& [id, p] : parent) {
    EXPECT_FALSE(absl::StartsWith(id, "cluster_encoder")) << id;
  }
  for (Value v : {m.w1, m.b1, m.w2, m.y}) EXPECT_EQ(NodeLine(dot, v), "") << v.path();
  EXPECT_THAT(dot, HasSubstr(absl::StrCat(box, " [label=\"encoder\\n(6 nodes)\"")));
  EXPECT_THAT(dot, HasSubstr("shape=box3d"));
  // x feeds the box once; the box feeds the loss's product once although
  // y is read twice (y * y), and feeds the gradient nodes.
  EXPECT_EQ(CountLines(dot, absl::StrCat("n", m.x.id(), " -> ", box, ";")), 1);
  const Value yy = m.g.Find("mul");
  ASSERT_TRUE(yy.ok());
  EXPECT_EQ(CountLines(dot, absl::StrCat(box, " -> n", yy.id(), ";")), 1);
  EXPECT_THAT(dot, HasSubstr(absl::StrCat(box, " -> n")));
  EXPECT_EQ(DotSyntaxProblem(dot), "");
  // Without collapsing, the two reads of y are two edges.
  EXPECT_EQ(CountLines(Dot(m.g, {}), absl::StrCat("n", m.y.id(), " -> n", yy.id(), ";")), 2);
}

TEST(Dot, CollapsedScopeSitsInItsParentsCluster) {
  Model m;
  const std::string dot = Dot(m.g, {}, {.collapse = {"encoder/layers/0/self_attn"}});
  const auto parent = Clusters(dot);
  EXPECT_FALSE(parent.contains("cluster_encoder_2flayers_2f0_2fself_5fattn"));
  EXPECT_THAT(dot, HasSubstr("collapsed_encoder_2flayers_2f0_2fself_5fattn [label=\"encoder/"
                             "layers/0/self_attn\\n(4 nodes)\""));
  // The box is declared inside encoder/layers/0's cluster.
  const size_t cluster = dot.find("subgraph cluster_encoder_2flayers_2f0 {");
  const size_t box = dot.find("collapsed_encoder_2flayers_2f0_2fself_5fattn [");
  const size_t next = dot.find("subgraph cluster_encoder_2flayers_2f0_2flinear1 {");
  EXPECT_LT(cluster, box);
  EXPECT_LT(box, next);
  EXPECT_EQ(CountLines(dot, absl::StrCat("n", m.x.id(),
                                         " -> collapsed_encoder_2flayers_2f0_2fself_5fattn;")),
            1);
}

TEST(Dot, RootsSelectWhatTheyDependOn) {
  Model m;
  const std::string forward = Dot(m.g, {m.loss}, {.legend = false});
  EXPECT_THAT(forward, Not(HasSubstr("shape=ellipse")));  // no gradient ops
  EXPECT_THAT(forward, Not(HasSubstr("cluster_grad")));
  EXPECT_THAT(forward, Not(HasSubstr("cluster_sgd")));
  EXPECT_EQ(NodeLine(forward, m.lengths), "");  // nothing reads it
  EXPECT_NE(NodeLine(forward, m.w1), "");
  const std::string all = Dot(m.g, {}, {.legend = false});
  EXPECT_NE(NodeLine(all, m.lengths), "");
  EXPECT_THAT(all, HasSubstr("shape=hexagon"));
  // A loss that is not drawn is only a style.
  EXPECT_EQ(Dot(m.g, {m.w1}, {.losses = {m.loss}, .legend = false}).find("doubleoctagon"),
            std::string::npos);
}

TEST(Dot, BadArgumentsAreErrors) {
  Model m;
  Graph other;
  Value foreign = other.Input("z", DType::kFloat32, {1});
  Value bad = Add(m.x, m.g.Input("wrong", DType::kFloat32, {5}));
  EXPECT_STATUS(ToDot(m.g, {Value()}).status(), absl::StatusCode::kInvalidArgument,
                "roots[0] is a null Value");
  EXPECT_STATUS(ToDot(m.g, {m.x, foreign}).status(), absl::StatusCode::kInvalidArgument,
                "roots[1] belongs to another graph");
  EXPECT_STATUS(ToDot(m.g, {bad}).status(), absl::StatusCode::kInvalidArgument,
                "roots[0] is an error: add 'add");
  EXPECT_STATUS(ToDot(m.g, {}, {.losses = {foreign}}).status(),
                absl::StatusCode::kInvalidArgument, "losses[0] belongs to another graph");
  EXPECT_STATUS(ToDot(m.g, {}, {.collapse = {""}}).status(), absl::StatusCode::kInvalidArgument,
                "empty collapse path");
  Graph empty;
  ASSERT_OK_AND_ASSIGN(std::string dot, ToDot(empty, {}, {.legend = false}));
  EXPECT_EQ(DotSyntaxProblem(dot), "");
}

// An op whose DOT label is itself hostile.
const OpDef kWeird = {
    .name = "weird",
    .dot_label = "<op> \"q\" \\N {a|b} &amp;",
    .infer = [](const InferContext& ctx) -> absl::StatusOr<TensorType> { return ctx.in(0); },
};

const char* const kHostile[] = {
    "q\"uote",  "back\\slash\\N\\G\\L", "new\nline\r", "<b>{x|y}<\\b>", "amp&lt;&#65;",
    "\xc3\xa9\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x99\x82", "ctl\x01\x7f\x1b[31m", "bad\xff\xfeutf8",
    "c1\xc2\x85", "\"];\nevil -> x [label=\"", "}", "\\", " ", "cluster_x", "n0"};

// HostileGraph uses every hostile string as a scope, a parameter name and
// an op name, and wraps an op with a hostile label around them.
struct HostileGraph {
  Graph g;
  Value sum;
  HostileGraph() {
    Value acc = g.Input("in\"put", DType::kFloat32, {2});
    for (const char* s : kHostile) {
      Graph::Scope scope(g, s);
      Value w = g.Parameter(s, {2}, Initializer::Ones());
      acc = g.AddOp(kWeird, {Add(acc, w)}, Attrs(), s);
    }
    sum = Sum(acc);
  }
};

TEST(Dot, HostileNamesCannotBreakTheFile) {
  HostileGraph h;
  ASSERT_OK(h.g.status());
  const DotOptions opts{.title = "title \"with\" \\N\nnewline",
                        .collapse = {kHostile[3], kHostile[9]},
                        .losses = {h.sum}};
  const std::string dot = Dot(h.g, {}, opts);
  EXPECT_EQ(DotSyntaxProblem(dot), "") << dot;
  EXPECT_THAT(dot, HasSubstr("q\\\"uote"));
  EXPECT_THAT(dot, HasSubstr("back\\\\slash\\\\N\\\\G\\\\L"));  // no \N substitution
  EXPECT_THAT(dot, HasSubstr("new\\\\nline\\\\r"));             // shown, not a line break
  EXPECT_THAT(dot, HasSubstr("amp&amp;lt;&amp;#65;"));          // no entity decoding
  EXPECT_THAT(dot, HasSubstr("\xc3\xa9\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x99\x82"));  // kept
  EXPECT_THAT(dot, HasSubstr("ctl\\\\x01\\\\x7f\\\\x1b[31m"));
  EXPECT_THAT(dot, HasSubstr("bad\\\\xff\\\\xfeutf8"));
  EXPECT_THAT(dot, HasSubstr("c1\\\\x85"));
  EXPECT_THAT(dot, HasSubstr("label=\"<op> \\\"q\\\" \\\\N {a|b} &amp;amp;\\n"));
  EXPECT_THAT(dot, HasSubstr("label=\"title \\\"with\\\" \\\\N\\\\nnewline\"; labelloc=t;"));
  // Scopes that look like ids stay labels; ids come from the encoding.
  EXPECT_THAT(dot, HasSubstr("subgraph cluster_cluster_5fx {"));
  EXPECT_THAT(dot, HasSubstr("subgraph cluster_n0 {"));
  // Collapsed hostile scopes are boxes with escaped labels.
  EXPECT_THAT(dot, HasSubstr("collapsed__3cb_3e_7bx_7cy_7d_3c_5cb_3e [label=\"<b>{x|y}<\\\\b>\\n"));
  EXPECT_EQ(dot, Dot(h.g, {}, opts));
}

TEST(DotRender, RendersScopesCollapseAndHostileNamesWithoutWarnings) {
  if (DotProgram().empty()) {
    GTEST_SKIP() << "Graphviz's dot is not installed (DotProgram() is empty): RenderDot is "
                    "not tested";
  }
  const std::string dir = NewTempDir("dot");
  HostileGraph h;
  Model m;
  const std::pair<std::string, std::string> cases[] = {
      {"hostile", Dot(h.g, {}, {.title = "hostile \"names\"\n\\N",
                                .collapse = {kHostile[3]}, .losses = {h.sum}})},
      {"model", Dot(m.g, {}, {.title = "model", .collapse = {"encoder/layers/0/self_attn"},
                              .losses = {m.loss}})},
  };
  for (const auto& [name, dot] : cases) {
    const std::string dot_path = absl::StrCat(dir, "/", name, ".dot");
    ASSERT_OK(WriteDotFile(dot_path, dot));
    ASSERT_OK_AND_ASSIGN(std::string back, ReadFile(dot_path));
    EXPECT_EQ(back, dot);
    for (const char* format : {"svg", "png"}) {
      const std::string out = absl::StrCat(dir, "/", name, ".", format);
      ASSERT_OK(RenderDot(dot_path, format, out));
      ASSERT_OK_AND_ASSIGN(std::string image, ReadFile(out));
      EXPECT_THAT(image, HasSubstr(std::string(format) == "svg" ? "<svg" : "PNG")) << out;
    }
  }
  ASSERT_OK_AND_ASSIGN(std::string svg, ReadFile(dir + "/hostile.svg"));
  EXPECT_THAT(svg, HasSubstr("\xe6\x97\xa5\xe6\x9c\xac"));  // non-ASCII survives
  EXPECT_THAT(svg, HasSubstr("back\\slash\\N"));          // drawn literally
}

TEST(DotRender, DotErrorsAndWarningsAreErrorsAndLeaveNoImage) {
  if (DotProgram().empty()) GTEST_SKIP() << "Graphviz's dot is not installed";
  const std::string dir = NewTempDir("dot");
  ASSERT_OK(WriteDotFile(dir + "/broken.dot", "digraph { a -> }\n"));
  EXPECT_STATUS(RenderDot(dir + "/broken.dot", "svg", dir + "/broken.svg"),
                absl::StatusCode::kInvalidArgument, "syntax error");
  ASSERT_OK(WriteDotFile(dir + "/warn.dot", "digraph { a [shape=nosuchshape]; }\n"));
  EXPECT_STATUS(RenderDot(dir + "/warn.dot", "svg", dir + "/warn.svg"),
                absl::StatusCode::kInvalidArgument, "printed warnings: Warning:");
  EXPECT_FALSE(Exists(dir + "/broken.svg"));
  EXPECT_FALSE(Exists(dir + "/warn.svg"));
  struct stat st;
  int files = 0;
  for (const char* f : {"/broken.dot", "/warn.dot"}) files += stat((dir + f).c_str(), &st) == 0;
  EXPECT_EQ(files, 2);
}

// A png over cairo's 32767 pixels is drawn scaled down, and dot says so:
// that notice was taken for a warning, and the image refused.
TEST(DotRender, APngTooTallForCairoIsScaledNotRefused) {
  if (DotProgram().empty()) GTEST_SKIP() << "Graphviz's dot is not installed";
  const std::string dir = NewTempDir("dot");
  ASSERT_OK(WriteDotFile(dir + "/tall.dot", "digraph { node [height=100]; a -> b -> c -> d; }\n"));
  ASSERT_OK(RenderDot(dir + "/tall.dot", "png", dir + "/tall.png"));
  ASSERT_OK_AND_ASSIGN(const std::string png, ReadFile(dir + "/tall.png"));
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

// A relative path that begins with '-' reached dot as an option ("Missing
// argument for -o flag").
TEST(DotRender, APathThatBeginsWithADashIsAFileToDot) {
  if (DotProgram().empty()) GTEST_SKIP() << "Graphviz's dot is not installed";
  const std::string dir = NewTempDir("dot");
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  ASSERT_OK(WriteDotFile("-x.dot", "digraph { a -> b; }\n"));
  const absl::Status rendered = RenderDot("-x.dot", "svg", "-x.svg");
  std::filesystem::current_path(before);
  EXPECT_TRUE(rendered.ok()) << rendered;
  EXPECT_TRUE(Exists(dir + "/-x.svg"));
}

TEST(DotRender, MissingGraphvizIsUnavailable) {
  const std::string dir = NewTempDir("dot");
  ASSERT_OK(WriteDotFile(dir + "/g.dot", "digraph { a -> b; }\n"));
  EXPECT_STATUS(RenderDot(dir + "/g.dot", "svg", dir + "/g.svg", "/nonexistent/graphviz/dot"),
                absl::StatusCode::kUnavailable,
                "Graphviz is not available (cannot run '/nonexistent/graphviz/dot': No such file");
  EXPECT_FALSE(Exists(dir + "/g.svg"));
  EXPECT_STATUS(RenderDot(dir + "/g.dot", "svg", dir + "/g.svg", "dagrad-no-such-program"),
                absl::StatusCode::kUnavailable, "install it (apt-get install graphviz)");
}

TEST(DotRender, ArgumentErrors) {
  const std::string dir = NewTempDir("dot");
  EXPECT_STATUS(RenderDot(dir + "/none.dot", "svg", dir + "/none.svg"),
                absl::StatusCode::kNotFound, "none.dot");
  ASSERT_OK(WriteDotFile(dir + "/g.dot", "digraph { a -> b; }\n"));
  EXPECT_STATUS(RenderDot(dir + "/g.dot", "pdf; rm -rf /", dir + "/g.pdf"),
                absl::StatusCode::kInvalidArgument, "is not \"svg\" or \"png\"");
  EXPECT_STATUS(RenderDot(dir + "/g.dot", "svg", dir + "/no/such/dir/g.svg"),
                absl::StatusCode::kNotFound, "cannot write '" + dir + "/no/such/dir/g.svg'");
  EXPECT_STATUS(WriteDotFile(dir + "/no/such/dir/g.dot", "digraph {}\n"),
                absl::StatusCode::kNotFound, "no/such/dir/g.dot");
}

}  // namespace
}  // namespace dagrad::testing
