// Reductions and shape ops: hand values, views, errors (their op cases are
// in reduce_cases.cc and shape_cases.cc).

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/executor.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(Reduce, HandComputedValues) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 3});
  Feeds feeds = {{x, T<float>({2, 3}, {1, 5, 3, -4, 2, 6})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Sum(x), Sum(x, {0}), Mean(x, {1}, true),
                                             Max(x, {-1}), Max(x, {0})},
                                         feeds));
  ExpectAllClose(out[0], {13}, 0, 0, "sum");
  ExpectAllClose(out[1], {-3, 7, 9}, 0, 0, "sum axis 0");
  EXPECT_EQ(out[2].shape(), Shape({2, 1}));
  ExpectAllClose(out[2], {3, 4.0 / 3}, 1e-6, 0, "mean");
  ExpectAllClose(out[3], {5, 6}, 0, 0, "max");
  ExpectAllClose(out[4], {1, 5, 6}, 0, 0, "max axis 0");
}

// Float32 Sum and Mean over ~1.3e7 elements, along every axis position
// (last, first, middle, two leading, two apart, all) and so through every
// kernel path, against a float64 reference with one tolerance: the result
// rounded once to float32 (half an ulp, 2^-24 relative, plus slack for the
// order of the double sums). Accumulating in float32 misses by ~1e-4.
struct ReduceCase {
  std::vector<int64_t> dims;  // three, reshaping the same data
  std::vector<int64_t> axes;
};

// ReferenceSums sums x viewed as `dims` over `axes` in double, row-major
// over the kept axes.
std::vector<double> ReferenceSums(const std::vector<float>& x, const ReduceCase& c) {
  bool reduced[3] = {false, false, false};
  for (int64_t a : c.axes) reduced[a] = true;
  if (c.axes.empty()) reduced[0] = reduced[1] = reduced[2] = true;
  int64_t kept_size[3];
  int64_t outputs = 1;
  for (int d = 0; d < 3; ++d) {
    kept_size[d] = reduced[d] ? 1 : c.dims[d];
    outputs *= kept_size[d];
  }
  std::vector<double> sums(outputs, 0.0);
  int64_t i = 0;
  for (int64_t a = 0; a < c.dims[0]; ++a) {
    for (int64_t b = 0; b < c.dims[1]; ++b) {
      const int64_t row = ((reduced[0] ? 0 : a) * kept_size[1] + (reduced[1] ? 0 : b)) *
                          kept_size[2];
      for (int64_t k = 0; k < c.dims[2]; ++k) sums[row + (reduced[2] ? 0 : k)] += x[i++];
    }
  }
  return sums;
}

TEST(Reduce, LargeFloat32SumsAndMeansAgreeWithFloat64OnEveryPath) {
  constexpr int64_t kN = 12600000;
  const std::vector<ReduceCase> cases = {
      {{3, kN / 3, 1}, {1}},         {{kN / 3, 3, 1}, {0}},      {{3, kN / 9, 3}, {1}},
      {{kN / 900, 30, 30}, {0, 1}},  {{kN / 12, 3, 4}, {0, 2}},  {{1000, kN / 1000, 1}, {0}},
      {{kN, 1, 1}, {}}};
  // Values in [0.5, 1.5) from a multiplicative hash: all positive, so the
  // sums are large and an error cannot cancel.
  std::vector<float> data(kN);
  for (int64_t i = 0; i < kN; ++i) {
    data[i] = 0.5f + static_cast<float>((static_cast<uint64_t>(i) * 2654435761u) % 16777216u) /
                         16777216.0f;
  }
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {kN});
  std::vector<Value> fetches;
  for (const ReduceCase& c : cases) {
    Value v = Reshape(x, c.dims);
    fetches.push_back(Sum(v, c.axes));
    fetches.push_back(Mean(v, c.axes));
  }
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, fetches, {{x, T<float>({kN}, data)}}));
  constexpr double kRtol = 1.2e-7;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<double> sums = ReferenceSums(data, cases[i]);
    const double count = static_cast<double>(kN) / static_cast<double>(sums.size());
    std::vector<double> means;
    for (double s : sums) means.push_back(s / count);
    const std::string what = absl::StrCat("dims ", absl::StrJoin(cases[i].dims, "x"),
                                          " axes {", absl::StrJoin(cases[i].axes, ","), "}");
    ExpectAllClose(out[2 * i], sums, kRtol, 0, "sum " + what);
    ExpectAllClose(out[2 * i + 1], means, kRtol, 0, "mean " + what);
  }
}

TEST(Reduce, MaxSharesGradientAmongTies) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {4});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Max(x), {x}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0]}, {{x, T<double>({4}, {3, 1, 3, 2})}}));
  ExpectAllClose(out[0], {0.5, 0, 0.5, 0}, 0, 0, "max grad");
}

TEST(Shape, ValuesOfPermuteSliceConcat) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 3});
  Feeds feeds = {{x, T<float>({2, 3}, {0, 1, 2, 3, 4, 5})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Transpose(x, 0, 1), Slice(x, 1, 0, 3, 2),
                                             Concat({x, x}, 0), Reshape(x, {3, -1}),
                                             BroadcastTo(Slice(x, 0, 1, 2), Shape({2, 2, 3})),
                                             Slice(x, 1, -2, 100)},
                                         feeds));
  ExpectAllClose(out[0], {0, 3, 1, 4, 2, 5}, 0, 0, "transpose");
  ExpectAllClose(out[1], {0, 2, 3, 5}, 0, 0, "slice step 2");
  ExpectAllClose(out[2], {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}, 0, 0, "concat");
  EXPECT_EQ(out[3].shape(), Shape({3, 2}));
  ExpectAllClose(out[4], {3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5}, 0, 0, "broadcast_to");
  ExpectAllClose(out[5], {1, 2, 4, 5}, 0, 0, "negative start, clamped end");
}

TEST(Shape, ReshapeOfAnIntermediateIsAView) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {4, 8});
  Value y = Reshape(Exp(x), {32});
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({Sum(y)}));
  EXPECT_EQ(plan->info().num_views, 1);
  // The view shares its input's storage root.
  EXPECT_EQ(plan->info().root[y.id()], plan->info().root[y.node().inputs[0]]);
}

TEST(Shape, Errors) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 3});
  EXPECT_STATUS(Reshape(x, {4, -1}).status(), absl::StatusCode::kInvalidArgument,
                "reshape 'reshape': cannot infer -1");
  EXPECT_STATUS(Reshape(x, {-1, -1}).status(), absl::StatusCode::kInvalidArgument,
                "more than one -1");
  EXPECT_STATUS(Reshape(x, {7}).status(), absl::StatusCode::kInvalidArgument,
                "holds 7 elements, input holds 6");
  const int64_t big = int64_t{1} << 31;
  EXPECT_STATUS(Reshape(x, {big, big, big}).status(), absl::StatusCode::kInvalidArgument,
                "target shape (2147483648, 2147483648, 2147483648) has an element count that "
                "overflows int64");
  Value empty = g.Input("empty", DType::kFloat32, {0});
  Value none = Reshape(empty, {int64_t{1} << 62, int64_t{1} << 62, 0});
  ASSERT_OK(none.status());
  EXPECT_EQ(none.shape().num_elements(), 0);
  EXPECT_STATUS(Permute(x, {0, 0}).status(), absl::StatusCode::kInvalidArgument,
                "not a permutation");
  EXPECT_STATUS(Transpose(x, 0, 2).status(), absl::StatusCode::kInvalidArgument,
                "out of range");
  EXPECT_STATUS(BroadcastTo(x, Shape({3, 3})).status(), absl::StatusCode::kInvalidArgument,
                "(2, 3) does not broadcast to (3, 3)");
  EXPECT_STATUS(Concat({x, Reshape(x, {3, 2})}, 0).status(), absl::StatusCode::kInvalidArgument,
                "differs from input 0");
  // Sizes whose sum wraps: four of 2^62 and 6 gave (6,).
  const Value quarter = x.graph()->Input("quarter", DType::kBool, {int64_t{1} << 62});
  const Value six = x.graph()->Input("six", DType::kBool, {6});
  EXPECT_STATUS(Concat({quarter, quarter, quarter, quarter, six}, 0).status(),
                absl::StatusCode::kInvalidArgument,
                "the inputs' sizes along axis 0 sum past int64 at input 1");
  EXPECT_STATUS(Slice(x, 2, 0, 1).status(), absl::StatusCode::kInvalidArgument,
                "axis 2 is out of range for rank 2");
  EXPECT_STATUS(Slice(x, 0, 0, 1, 0).status(), absl::StatusCode::kInvalidArgument, "step 0");
  EXPECT_STATUS(Sum(x, {1, -1}).status(), absl::StatusCode::kInvalidArgument, "repeated");
  EXPECT_STATUS(Max(x, {5}).status(), absl::StatusCode::kInvalidArgument,
                "axis 5 is out of range for rank 2");
}

TEST(Shape, ContiguousSlicesAreViewsOthersCopies) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {4, 3});
  Value e = Exp(x);
  Value rows = Slice(e, 0, 1, 3);     // rows 1..2: one contiguous block
  Value cols = Slice(Slice(e, 0, 0, 2), 1, 0, 2);  // columns: strided
  Value y = Concat({rows * 2.0, cols}, 1);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  EXPECT_EQ(plan->info().root[rows.id()], plan->info().root[e.id()]);
  EXPECT_EQ(plan->info().offset[rows.id()], 3 * 4);
  EXPECT_NE(plan->info().root[cols.id()], plan->info().root[e.id()]);
  const std::vector<float> xs = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, T<float>({4, 3}, xs)}}));
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) want.push_back(2 * std::exp(xs[(r + 1) * 3 + c]));
    for (int c = 0; c < 2; ++c) want.push_back(std::exp(xs[r * 3 + c]));
  }
  ExpectAllClose(out[0], want, 1e-6, 0, "rows*2 | cols");
}

TEST(Autodiff, GradientsOfSlicesThatTileAValueAreConcatenated) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {6, 2});
  Value a = Slice(x, 0, 0, 2), b = Slice(x, 0, 2, 3), c = Slice(x, 0, 3, 6);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(a * 1.0) + Sum(b * 2.0) + Sum(c * 3.0), {x}));
  EXPECT_EQ(grads[0].node().op->name, "concat");
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0]}, {{x, Random(DType::kFloat64, {6, 2}, 1)}}));
  ExpectAllClose(out[0], {1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 3, 3}, 0, 0, "d/dx");
  // Overlapping slices are summed as usual.
  ASSERT_OK_AND_ASSIGN(auto sums, Gradients(Sum(Slice(x, 0, 0, 4)) + Sum(Slice(x, 0, 2, 6)), {x}));
  EXPECT_NE(sums[0].node().op->name, "concat");
  ASSERT_OK_AND_ASSIGN(out, RunOnce(g, {sums[0]}, {{x, Random(DType::kFloat64, {6, 2}, 1)}}));
  ExpectAllClose(out[0], {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1}, 0, 0, "overlap");
}

}  // namespace
}  // namespace dagrad::testing
