// Runs every registered gradcheck case, and checks that every differentiable
// op is exercised by at least one case.

#include <set>

#include "engine/autodiff/autodiff.h"
#include "engine/op.h"
#include "engine/philox.h"
#include "ops/registry.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

class GradCheckTest : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradCheckTest, MatchesFiniteDifferences) {
  const GradCase& c = GetParam();
  const uint64_t seed = StableHash64(c.name.data(), c.name.size());
  ASSERT_OK(GradCheck(c, seed));
}

INSTANTIATE_TEST_SUITE_P(Ops, GradCheckTest, ::testing::ValuesIn(AllGradCases()),
                         [](const auto& info) { return info.param.name; });

// Backward-only kernels whose own derivative (a second derivative through
// them) is not implemented; reaching one from a loss is an Unimplemented
// error naming it, which autodiff_test checks.
//   gelu_grad: a third derivative through GELU is out of scope.
//   layer_norm_grad: LayerNorm's fused dx; a second derivative in x would
//     need a third fused kernel (dgamma and dbeta are ordinary ops and do
//     have second derivatives). layer_norm_test checks the error.
//   cross_entropy_grad: cross-entropy's fused backward; a second derivative
//     of the loss is out of scope.
const std::set<std::string> kBackwardOnly = {"gelu_grad", "layer_norm_grad",
                                             "cross_entropy_grad"};

// Ops a case exercises: every op node whose output depends on an input.
std::set<std::string> CoveredOps() {
  std::set<std::string> covered;
  for (const GradCase& c : AllGradCases()) {
    Graph g;
    std::vector<Value> inputs;
    for (const GradInput& in : c.inputs) {
      const DType d = in.value ? in.value->dtype() : DType::kFloat64;
      inputs.push_back(g.Input(in.name, d, in.value ? in.value->shape() : in.shape));
    }
    Value y = c.build(g, inputs);
    if (!y.ok()) continue;
    std::vector<bool> depends(g.num_nodes(), false);
    for (const Value& v : inputs) depends[v.id()] = true;
    for (NodeId id = 0; id < g.num_nodes(); ++id) {
      const Node& n = g.node(id);
      for (NodeId in : n.inputs) {
        if (in != kNoNode && depends[in]) depends[id] = true;
      }
      if (depends[id] && n.kind == NodeKind::kOp) covered.insert(std::string(n.op->name));
    }
  }
  return covered;
}

TEST(GradCheckCoverage, EveryDifferentiableOpHasACase) {
  const std::set<std::string> covered = CoveredOps();
  for (const OpDef* op : AllOps()) {
    const std::string name(op->name);
    if (!op->differentiable) continue;
    if (op->grad == nullptr) {
      EXPECT_TRUE(kBackwardOnly.count(name))
          << "op '" << name << "' is differentiable but has no gradient rule";
      continue;
    }
    EXPECT_TRUE(covered.count(name)) << "op '" << name << "' has no gradcheck case";
  }
}

}  // namespace
}  // namespace dagrad::testing
