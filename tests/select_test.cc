// where: hand-worked values, errors, finite-difference gradient cases
// (broadcast included). PyTorch goldens are in golden_ops_test.cc.

#include "engine/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/select.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using In = std::vector<Value>;

Tensor Bools(const Shape& shape, const std::vector<bool>& v) {
  return *Tensor::FromVector<bool>(shape, v);
}

DAGRAD_GRADCHECK(where_same_shape,
                 {{"cond", {2, 3}, Bools({2, 3}, {true, false, false, true, true, false})},
                  {"a", {2, 3}},
                  {"b", {2, 3}}},
                 [](Graph&, const In& in) { return Where(in[0], in[1], in[2]); });
// Every input broadcast along a different axis: (2,1,4), (3,1), (4,) -> (2,3,4).
DAGRAD_GRADCHECK(where_broadcast_all,
                 {{"cond", {2, 1, 4},
                   Bools({2, 1, 4}, {true, false, true, true, false, false, true, false})},
                  {"a", {3, 1}},
                  {"b", {4}}},
                 [](Graph&, const In& in) { return Where(in[0], in[1], in[2]); });
// A 0-d b (a fill value), and a condition broadcast over rows.
DAGRAD_GRADCHECK(where_scalar_b_row_cond,
                 {{"cond", {3}, Bools({3}, {false, true, true})}, {"a", {2, 3}}, {"b", {}}},
                 [](Graph&, const In& in) { return Where(in[0], in[1], in[2]); });
// where's gradient is itself a where: a second derivative through it.
DAGRAD_GRADCHECK(where_second_order,
                 {{"cond", {4}, Bools({4}, {true, false, true, false})}, {"a", {4}}, {"b", {4}}},
                 [](Graph&, const In& in) {
                   Value y = Where(in[0], Mul(in[1], in[1]), Mul(in[2], in[1]));
                   auto grads = Gradients(Sum(Mul(y, y)), {in[1]});
                   return grads.ok() ? (*grads)[0] : y.graph()->Error(grads.status());
                 });

TEST(Where, HandWorkedValues) {
  Graph g;
  Value cond = g.Input("cond", DType::kBool, {2, 1});
  Value a = g.Input("a", DType::kFloat32, {2, 3});
  Value i = g.Input("i", DType::kInt64, {3});
  Feeds feeds = {{cond, T<bool>({2, 1}, {true, false})},
                 {a, T<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                 {i, T<int64_t>({3}, {7, 8, 9})}};
  Value masked = Where(cond, a, ScalarLike(a, -1.0));
  Value picked = Where(cond, i, Cast(Cast(i, DType::kFloat32) * 10.0, DType::kInt64));
  EXPECT_EQ(masked.shape(), Shape({2, 3}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {masked, picked}, feeds));
  ExpectAllClose(out[0], {1, 2, 3, -1, -1, -1}, 0, 0, "float");
  EXPECT_EQ(out[1].dtype(), DType::kInt64);
  ExpectAllClose(out[1], {7, 8, 9, 70, 80, 90}, 0, 0, "int64");
}

// Where sends g to a where cond holds and to b elsewhere; a broadcast b
// gets the sum of what its elements received.
TEST(Where, GradientsSplitByCondition) {
  Graph g;
  Value cond = g.Input("cond", DType::kBool, {2, 2});
  Value a = g.Input("a", DType::kFloat64, {2, 2});
  Value b = g.Input("b", DType::kFloat64, {});
  Value w = g.Input("w", DType::kFloat64, {2, 2});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Mul(Where(cond, a, b), w)), {a, b}));
  EXPECT_EQ(grads[1].shape(), Shape({}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0], grads[1]},
                                         {{cond, T<bool>({2, 2}, {true, false, false, true})},
                                          {w, T<double>({2, 2}, {1, 2, 3, 4})}}));
  ExpectAllClose(out[0], {1, 0, 0, 4}, 0, 0, "da");
  ExpectAllClose(out[1], {5}, 0, 0, "db = 2 + 3");
}

TEST(Where, Errors) {
  Graph g;
  Value cond = g.Input("cond", DType::kBool, {2, 3});
  Value fcond = g.Input("fcond", DType::kFloat32, {2, 3});
  Value a = g.Input("a", DType::kFloat32, {2, 3});
  Value b = g.Input("b", DType::kFloat32, {4});
  Value b64 = g.Input("b64", DType::kFloat64, {3});
  EXPECT_STATUS(Where(fcond, a, a).status(), absl::StatusCode::kInvalidArgument,
                "where 'where': cond must be bool, got float32 [inputs: float32 (2, 3), float32 "
                "(2, 3), float32 (2, 3)]");
  EXPECT_STATUS(Where(cond, a, b64).status(), absl::StatusCode::kInvalidArgument,
                "dtypes differ: float32 vs float64");
  EXPECT_STATUS(Where(cond, a, b).status(), absl::StatusCode::kInvalidArgument,
                "shapes (2, 3) and (4,) do not broadcast");
  EXPECT_STATUS(Where(Value(), a, a).status(), absl::StatusCode::kInvalidArgument,
                "where: required input 0 is a null Value");
}

}  // namespace
}  // namespace dagrad::testing
