// where: hand-worked values and errors. Its op case is in select_cases.cc,
// PyTorch goldens in golden_ops_test.cc.

#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/select.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

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
