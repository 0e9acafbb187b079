// PyTorch goldens run through dagrad's ops. The cases are written by
// tools/goldens/basic_ops.py (unary, binary, reduce, shape and matmul ops),
// tools/goldens/nn_ops.py (layer_norm, gather, where, fill, arange) and
// tools/goldens/edges.py (NaN, +-inf and zeros through all of those and the
// softmax and loss families, values and gradients);
// each case name maps, explicitly, to the dagrad builder it checks, keyed in
// the op's case file (tests/<family>_cases.cc, with DAGRAD_GOLDENS), with
// its op attributes read from the case so the two sides cannot drift.
//
// A case with an input "gy" also checks the backward pass: autodiff's
// gradients with seed gy against torch.autograd's, one output grad_<x> per
// input x.
//
// Goldens are torch's float64 results rounded once to the output dtype, so
// float32 outputs are held to float32 tolerance, float64 outputs to 1e-12,
// integer and bool outputs exactly.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "ops/autodiff/autodiff.h"
#include "ops/registry.h"
#include "tests/support/golden.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// The golden files of tools/goldens/*.py; their cases' builders are keyed
// in the ops' case files (tests/autodiff/support/golden_registry.h).
const std::vector<std::string> kGoldenFiles = {"basic_ops", "nn_ops", "edges"};

const std::map<std::string, GoldenBuilder>& BuildersOf(const std::string& file) {
  static const std::map<std::string, GoldenBuilder> none;
  auto it = Goldens().files.find(file);
  return it == Goldens().files.end() ? none : it->second;
}

// A built case: the graph's fetches with the golden outputs they match.
struct Built {
  std::vector<Value> fetches;
  std::vector<std::string> outputs;
};

absl::StatusOr<Built> BuildCase(Graph& g, const GoldenCase& c, const GoldenBuilder& golden) {
  GoldenInputs in;
  for (const auto& [name, t] : c.inputs) in[name] = g.Input(name, t.dtype(), t.shape());
  Value y = golden.build(g, in, c.attrs);
  if (!y.ok()) return y.status();
  Built b{{y}, {"out"}};
  if (!in.count("gy")) return b;
  std::vector<Value> wrt;
  for (const auto& [name, t] : c.outputs) {
    if (!absl::StartsWith(name, "grad_")) continue;
    b.outputs.push_back(name);
    wrt.push_back(in.at(name.substr(5)));
  }
  auto grads = Gradients(y, wrt, in.at("gy"));
  if (!grads.ok()) return grads.status();
  for (const Value& v : *grads) {
    if (!v.ok()) return absl::InternalError("autodiff gave no gradient for a golden input");
    b.fetches.push_back(v);
  }
  return b;
}

struct CaseName {
  std::string file, name;
};

void PrintTo(const CaseName& c, std::ostream* os) { *os << c.file << "/" << c.name; }

std::vector<CaseName> AllCases() {
  std::vector<CaseName> all;
  for (const std::string& file : kGoldenFiles) {
    for (const auto& [name, golden] : BuildersOf(file)) all.push_back({file, name});
  }
  return all;
}

class GoldenOpsTest : public ::testing::TestWithParam<CaseName> {};

TEST_P(GoldenOpsTest, MatchesPyTorch) {
  const auto& [file, name] = GetParam();
  const GoldenBuilder& golden = BuildersOf(file).at(name);
  ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden(file, name));
  Graph g;
  ASSERT_OK_AND_ASSIGN(Built b, BuildCase(g, c, golden));
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(b.fetches));
  // Feed only what the plan reads: zeros_like reads no values.
  Feeds feeds;
  for (NodeId id : plan->info().inputs) {
    feeds.push_back({g.value(id), c.inputs.at(g.node(id).name)});
  }
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, feeds));
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor& want = c.outputs.at(b.outputs[i]);
    const std::string what = absl::StrCat(file, "/", name, " ", b.outputs[i]);
    EXPECT_EQ(out[i].dtype(), want.dtype()) << what;
    EXPECT_EQ(out[i].shape(), want.shape()) << what;
    const DType d = want.dtype();
    const double rtol = d == DType::kFloat32 ? golden.rtol : d == DType::kFloat64 ? 1e-12 : 0;
    const double atol = d == DType::kFloat32 ? golden.atol : d == DType::kFloat64 ? 1e-13 : 0;
    ExpectAllClose(out[i], AsDoubles(want), rtol, atol, what);
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenOpsTest, ::testing::ValuesIn(AllCases()),
                         [](const auto& info) { return info.param.file + "_" + info.param.name; });

// The generators and the case files name the same cases, each once.
TEST(GoldenOps, EveryCaseHasABuilderAndEveryBuilderACase) {
  EXPECT_THAT(Goldens().duplicates, ::testing::IsEmpty()) << "golden builders registered twice";
  for (const auto& [file, builders] : Goldens().files) {
    EXPECT_THAT(kGoldenFiles, ::testing::Contains(file)) << "builders of no golden file";
  }
  for (const std::string& file : kGoldenFiles) {
    const std::map<std::string, GoldenBuilder>* cases = &BuildersOf(file);
    ASSERT_OK_AND_ASSIGN(auto names, GoldenCaseNames(file));
    const std::set<std::string> in_file(names.begin(), names.end());
    for (const std::string& n : in_file) {
      EXPECT_TRUE(cases->count(n)) << file << ".json case " << n << " has no builder";
    }
    for (const auto& [n, golden] : *cases) {
      EXPECT_TRUE(in_file.count(n)) << "builder " << n << " has no case in " << file << ".json";
    }
  }
}

// Every op appears in some golden graph (forward or backward), but those
// torch has no deterministic twin of or that talk to other processes, which
// their own tests check against hand-worked values.
TEST(GoldenOps, EveryOpHasAGolden) {
  const std::set<std::string> without = {
      "sgd_update", "adam_update",                              // optimizer_test.cc
      "write_at",                                               // write_at_test.cc
      "dropout", "attention", "attention_grad", "multinomial",  // random draws
      "all_reduce", "all_reduce_start", "all_reduce_wait",      // collectives
      "sum_of_squares"};                                        // sum_of_squares_test.cc
  std::set<std::string> covered;
  for (const CaseName& cn : AllCases()) {
    ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden(cn.file, cn.name));
    Graph g;
    ASSERT_OK(BuildCase(g, c, BuildersOf(cn.file).at(cn.name)).status());
    for (NodeId id = 0; id < g.num_nodes(); ++id) {
      if (g.node(id).kind == NodeKind::kOp) covered.insert(std::string(g.node(id).op->name));
    }
  }
  for (const OpDef* op : AllOps()) {
    if (without.count(std::string(op->name))) continue;
    EXPECT_TRUE(covered.count(std::string(op->name))) << "op " << op->name << " has no golden";
  }
}

}  // namespace
}  // namespace dagrad::testing
