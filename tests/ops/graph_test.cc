// Graph building: shapes, scopes, names, initializers, and the errors users
// can cause.

#include <limits>

#include "engine/executor.h"
#include "engine/graph.h"
#include "ops/elementwise.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(Shape, BroadcastingRules) {
  EXPECT_EQ(*BroadcastShapes(Shape({2, 1, 4}), Shape({3, 1})), Shape({2, 3, 4}));
  EXPECT_EQ(*BroadcastShapes(Shape(), Shape({5})), Shape({5}));
  EXPECT_EQ(*BroadcastShapes(Shape({0, 1}), Shape({1, 3})), Shape({0, 3}));
  EXPECT_FALSE(BroadcastShapes(Shape({2, 3}), Shape({4})).ok());
  EXPECT_TRUE(IsBroadcastableTo(Shape({3, 1}), Shape({2, 3, 4})));
  EXPECT_FALSE(IsBroadcastableTo(Shape({2, 3, 4}), Shape({3, 4})));
  EXPECT_EQ(Shape({2, 3}).ToString(), "(2, 3)");
  EXPECT_EQ(Shape({7}).ToString(), "(7,)");
  EXPECT_EQ(Shape().ToString(), "()");
  EXPECT_EQ(Shape().num_elements(), 1);
}

TEST(Shape, ValidateDimsCatchesNegativeAndOverflow) {
  EXPECT_EQ(*ValidateDims({2, 3, 4}), 24);
  EXPECT_STATUS(ValidateDims({2, -1}).status(), absl::StatusCode::kInvalidArgument,
                "negative dimension -1");
  const int64_t big = int64_t{1} << 40;
  EXPECT_STATUS(ValidateDims({big, big}).status(), absl::StatusCode::kInvalidArgument,
                "overflows int64");
  EXPECT_EQ(*ValidateDims({big, big, 0}), 0);
}

// Writes reads `mutates` bit by bit; input 34 of an op of many inputs is
// past the mask, not bit 2 again (x86 takes a 32-bit shift count mod 32).
TEST(OpDef, WritesNoInputPastTheMask) {
  const OpDef adam_like = {.name = "writer", .mutates = 0b101};
  EXPECT_TRUE(adam_like.Writes(0));
  EXPECT_FALSE(adam_like.Writes(1));
  EXPECT_TRUE(adam_like.Writes(2));
  for (size_t i : {31, 32, 34, 66, 1000}) EXPECT_FALSE(adam_like.Writes(i)) << i;
  const OpDef masked = {.name = "masked", .nondiff_inputs = 0b10};
  EXPECT_FALSE(masked.NoGradient(0));
  EXPECT_TRUE(masked.NoGradient(1));
  for (size_t i : {33, 65}) EXPECT_FALSE(masked.NoGradient(i)) << i;
}

TEST(Graph, ScopesNamesAndPaths) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value y;
  {
    Graph::Scope enc(g, "encoder");
    Graph::Scope layer(g, "layer0");
    Value w = g.Parameter("w", {2}, Initializer::Ones());
    EXPECT_EQ(w.path(), "encoder/layer0/w");
    y = Mul(x, w);
    Value z = Mul(y, w);
    EXPECT_EQ(y.path(), "encoder/layer0/mul");
    EXPECT_EQ(z.path(), "encoder/layer0/mul_1");
  }
  EXPECT_EQ(g.scope(), "");
  EXPECT_EQ(g.Find("encoder/layer0/mul"), y);
  EXPECT_TRUE(g.Find("nope").is_null());
  EXPECT_EQ(g.Parameters().size(), 1u);
  EXPECT_EQ(y.node().scope, "encoder/layer0");
}

TEST(Graph, ScopePathGuardRestoresThePathWhenItEnds) {
  Graph g;
  Graph::Scope enc(g, "encoder");
  auto build = [&](bool fail) -> Value {
    Graph::ScopePathGuard in_grad(g, "grad/encoder");
    if (fail) return Value();
    return g.Input("x", DType::kFloat32, {2});
  };
  EXPECT_TRUE(build(true).is_null());
  EXPECT_EQ(g.scope(), "encoder");
  EXPECT_EQ(build(false).path(), "grad/encoder/x");
  EXPECT_EQ(g.scope(), "encoder");
}

TEST(Graph, DeclarationErrors) {
  Graph g;
  g.Input("x", DType::kFloat32, {2});
  EXPECT_STATUS(g.Input("x", DType::kFloat32, {2}).status(), absl::StatusCode::kInvalidArgument,
                "input 'x': duplicate path");
  EXPECT_STATUS(g.Input("neg", DType::kFloat32, {2, -3}).status(),
                absl::StatusCode::kInvalidArgument, "negative dimension -3");
  const int64_t big = int64_t{1} << 33;
  EXPECT_STATUS(g.Parameter("huge", {big, big}, Initializer::Zeros()).status(),
                absl::StatusCode::kInvalidArgument, "overflows int64");
  EXPECT_STATUS(g.Parameter("u", {2}, Initializer::Uniform(1, -1)).status(),
                absl::StatusCode::kInvalidArgument, "low <= high");
  EXPECT_STATUS(g.Parameter("n", {2}, Initializer::Normal(0, -1)).status(),
                absl::StatusCode::kInvalidArgument, "stddev >= 0");
  EXPECT_STATUS(g.Parameter("xv", {2}, Initializer::XavierUniform()).status(),
                absl::StatusCode::kInvalidArgument, "rank >= 2");
  EXPECT_STATUS(g.Parameter("i", {2}, Initializer::Zeros(), DType::kInt64).status(),
                absl::StatusCode::kInvalidArgument, "must be floating");
  EXPECT_STATUS(g.Input("", DType::kFloat32, {1}).status(), absl::StatusCode::kInvalidArgument,
                "empty name");
  EXPECT_STATUS(g.Parameter("a/b", {1}, Initializer::Zeros()).status(),
                absl::StatusCode::kInvalidArgument, "must not contain '/'");
}

// A constant is its value when created (issue 23, bug 9): changing the
// caller's tensor afterwards changes no path that reads it — fetched live,
// folded at compile time (Neg of a constant), or compiled again later.
TEST(Graph, ConstantIsAValueNotTheCallersBuffer) {
  Graph g;
  Tensor t = T<float>({2}, {1, 2});
  Value c = g.Constant(t);
  Value folded = Neg(c);
  t.data<float>()[0] = 100;
  Value later = g.Constant(t);  // made after the change: sees it
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({c, folded, later}));
  t.data<float>()[1] = 200;
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {}));
  ExpectAllClose(out[0], {1, 2}, 0, 0, "live constant");
  ExpectAllClose(out[1], {-1, -2}, 0, 0, "folded");
  ExpectAllClose(out[2], {100, 2}, 0, 0, "constant made after the first change");
  ASSERT_OK_AND_ASSIGN(auto again, RunOnce(g, {c, Neg(c) * 1.0}));
  ExpectAllClose(again[0], {1, 2}, 0, 0, "compiled after both changes");
  ExpectAllClose(again[1], {-1, -2}, 0, 0, "folded after both changes");
}

TEST(Initializer, DeterministicAndInRange) {
  Graph g;
  Value u = g.Parameter("u", {1000}, Initializer::Uniform(-0.5, 0.25));
  Value n = g.Parameter("n", {20000}, Initializer::Normal(1.0, 2.0));
  Value x = g.Parameter("x", {30, 20}, Initializer::XavierUniform());
  Value c = g.Parameter("c", {3}, Initializer::Constant(4.5));
  Executor a(g, {.seed = 7}), b(g, {.seed = 7}), other(g, {.seed = 8});
  ASSERT_OK_AND_ASSIGN(Tensor ua, a.Read(u));
  ASSERT_OK_AND_ASSIGN(Tensor ub, b.Read(u));
  ASSERT_OK_AND_ASSIGN(Tensor uo, other.Read(u));
  EXPECT_EQ(ua.ToVector<float>(), ub.ToVector<float>());
  EXPECT_NE(ua.ToVector<float>(), uo.ToVector<float>());
  for (float v : ua.ToVector<float>()) {
    EXPECT_GE(v, -0.5f);
    EXPECT_LT(v, 0.25f);
  }
  ASSERT_OK_AND_ASSIGN(Tensor nv, a.Read(n));
  double mean = 0, var = 0;
  for (float v : nv.ToVector<float>()) mean += v;
  mean /= nv.num_elements();
  for (float v : nv.ToVector<float>()) var += (v - mean) * (v - mean);
  var /= nv.num_elements();
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.05);
  ASSERT_OK_AND_ASSIGN(Tensor xv, a.Read(x));
  const float bound = std::sqrt(6.0f / (30 + 20));
  float max_abs = 0;
  for (float v : xv.ToVector<float>()) max_abs = std::max(max_abs, std::abs(v));
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.9f * bound);
  ASSERT_OK_AND_ASSIGN(Tensor cv, a.Read(c));
  ExpectAllClose(cv, {4.5, 4.5, 4.5}, 0, 0, "constant");
}

TEST(Initializer, ExplicitSeedOverridesExecutorSeed) {
  Graph g;
  Value p = g.Parameter("p", {8}, Initializer::Normal(0, 1).WithSeed(3));
  Executor a(g, {.seed = 1}), b(g, {.seed = 2});
  EXPECT_EQ(a.Read(p)->ToVector<float>(), b.Read(p)->ToVector<float>());
}

}  // namespace
}  // namespace dagrad::testing
