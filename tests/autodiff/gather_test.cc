// gather, embedding and scatter_add: hand-worked values, build-time and
// run-time errors. Their op cases are in gather_cases.cc, PyTorch goldens in
// golden_ops_test.cc.

#include "engine/executor.h"
#include "ops/autodiff/autodiff.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(Gather, HandWorkedValues) {
  Graph g;
  Value p = g.Input("p", DType::kFloat32, {3, 2});
  Value rows = g.Input("rows", DType::kInt64, {2, 2});
  Value cols = g.Input("cols", DType::kInt32, {3});
  Value one = g.Input("one", DType::kInt32, {});
  Feeds feeds = {{p, T<float>({3, 2}, {0, 1, 2, 3, 4, 5})},
                 {rows, T<int64_t>({2, 2}, {2, 0, 2, 1})},
                 {cols, T<int32_t>({3}, {1, 1, 0})},
                 {one, Tensor::Scalar<int32_t>(2)}};
  Value by_rows = Gather(p, rows), by_cols = Gather(p, cols, 1), row2 = Gather(p, one);
  EXPECT_EQ(by_rows.shape(), Shape({2, 2, 2}));
  EXPECT_EQ(by_cols.shape(), Shape({3, 3}));
  EXPECT_EQ(row2.shape(), Shape({2}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {by_rows, by_cols, row2}, feeds));
  ExpectAllClose(out[0], {4, 5, 0, 1, 4, 5, 2, 3}, 0, 0, "rows");
  ExpectAllClose(out[1], {1, 1, 0, 3, 3, 2, 5, 5, 4}, 0, 0, "cols");
  ExpectAllClose(out[2], {4, 5}, 0, 0, "scalar index");
}

TEST(Gather, AnyDTypeOfParams) {
  Graph g;
  Value mask = g.Input("mask", DType::kBool, {3});
  Value idx = g.Input("idx", DType::kInt64, {4});
  Feeds feeds = {{mask, T<bool>({3}, {true, false, true})},
                 {idx, T<int64_t>({4}, {1, 2, 0, 1})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Gather(mask, idx)}, feeds));
  EXPECT_EQ(out[0].dtype(), DType::kBool);
  ExpectAllClose(out[0], {0, 1, 1, 0}, 0, 0, "bool params");
}

// Every row of an embedding's gradient counts how often its id occurs.
TEST(Gather, EmbeddingGradientCountsRepeatedIds) {
  Graph g;
  Value table = g.Input("table", DType::kFloat32, {4, 2});
  Value ids = g.Input("ids", DType::kInt64, {3});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Embedding(table, ids)), {table}));
  EXPECT_EQ(grads[0].node().op->name, "scatter_add");
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0]}, {{ids, T<int64_t>({3}, {1, 3, 1})}}));
  ExpectAllClose(out[0], {0, 0, 2, 2, 0, 0, 1, 1}, 0, 0, "counts");
}

TEST(ScatterAdd, HandWorkedValues) {
  Graph g;
  Value idx = g.Input("idx", DType::kInt32, {3});
  Value upd = g.Input("upd", DType::kFloat64, {3, 2});
  Feeds feeds = {{idx, T<int32_t>({3}, {0, 2, 0})},
                 {upd, T<double>({3, 2}, {1, 2, 3, 4, 5, 6})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {ScatterAdd(idx, upd, 3)}, feeds));
  ExpectAllClose(out[0], {6, 8, 0, 0, 3, 4}, 0, 0, "scatter_add");
}

// Large enough to be split over 4 threads: many indices hit few rows, and
// each output element must count them exactly whatever the split.
void CheckScatterAddAcrossThreads() {
  Graph g;
  const int64_t k = 1000, inner = 64;
  std::vector<int64_t> ids(k);
  for (int64_t i = 0; i < k; ++i) ids[i] = i % 7;
  Value idx = g.Input("idx", DType::kInt64, {k});
  Value upd = g.Input("upd", DType::kFloat32, {k, inner});
  // 4001 rows of 2 x 3 outputs: the threads' ranges split rows.
  Value mid = g.Input("mid", DType::kFloat32, {4001, 5, 3});
  Value idx5 = g.Input("idx5", DType::kInt64, {5});
  Feeds feeds = {{idx, T<int64_t>({k}, ids)},
                 {upd, T<float>({k, inner}, std::vector<float>(k * inner, 1.0f))},
                 {mid, T<float>({4001, 5, 3}, std::vector<float>(4001 * 15, 1.0f))},
                 {idx5, T<int64_t>({5}, {1, 1, 0, 1, 1})}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {ScatterAdd(idx, upd, 7), ScatterAdd(idx5, mid, 2, 1)},
                                         feeds));
  // 1000 = 7 * 142 + 6: ids 0..5 occur 143 times, id 6 142 times.
  std::vector<double> want;
  for (int r = 0; r < 7; ++r) want.insert(want.end(), inner, r < 6 ? 143 : 142);
  ExpectAllClose(out[0], want, 0, 0, "last-axis rows");
  std::vector<double> want_mid;
  for (int o = 0; o < 4001; ++o) {
    want_mid.insert(want_mid.end(), 3, 1);  // index 0 once
    want_mid.insert(want_mid.end(), 3, 4);  // index 1 four times
  }
  ExpectAllClose(out[1], want_mid, 0, 0, "middle axis");
}

TEST(ScatterAdd, RepeatedIndicesAccumulateAcrossThreads) {
  const int threads = NumThreads();
  ASSERT_TRUE(SetNumThreads(4).ok());
  CheckScatterAddAcrossThreads();  // returns early on a failed ASSERT
  EXPECT_TRUE(SetNumThreads(threads).ok());
}

// An embedding gradient where one id (padding, say) fills 2^18 positions:
// its row sums 2^18 float32 updates in double, within half an ulp of the
// float64 sum (float32 accumulation is off by ~1e-5).
TEST(ScatterAdd, ManyRepeatsOfOneIndexAgreeWithFloat64) {
  constexpr int64_t kK = int64_t{1} << 18, kInner = 3;
  std::vector<int64_t> ids(kK, 1);
  ids[7] = 0;
  const Tensor upd = Random(DType::kFloat32, {kK, kInner}, 4, 0.5, 1.5);
  Graph g;
  Value idx = g.Input("idx", DType::kInt64, {kK});
  Value u = g.Input("upd", DType::kFloat32, {kK, kInner});
  ASSERT_OK_AND_ASSIGN(auto out,
                       RunOnce(g, {ScatterAdd(idx, u, 2)}, {{idx, T<int64_t>({kK}, ids)}, {u, upd}}));
  const std::vector<double> v = AsDoubles(upd);
  std::vector<double> want(2 * kInner, 0.0);
  for (int64_t i = 0; i < kK; ++i) {
    for (int64_t j = 0; j < kInner; ++j) want[ids[i] * kInner + j] += v[i * kInner + j];
  }
  ExpectAllClose(out[0], want, 1.2e-7, 0, "scatter_add");
}

TEST(Gather, IndexOutOfRangeIsARunTimeError) {
  Graph g;
  Value p = g.Input("p", DType::kFloat32, {5, 3});
  Value idx = g.Input("idx", DType::kInt64, {2, 3});
  Value neg = g.Input("neg", DType::kInt32, {2});
  Value y;
  {
    Graph::Scope s(g, "embed");
    y = Gather(p, idx);
  }
  ASSERT_OK(y.status());  // indices are data: nothing is known when building
  const Tensor pv = T<float>({5, 3}, std::vector<float>(15, 1.0f));
  EXPECT_STATUS(RunOnce(g, {y}, {{p, pv}, {idx, T<int64_t>({2, 3}, {0, 1, 2, 3, 4, 5})}}).status(),
                absl::StatusCode::kInvalidArgument,
                "gather 'embed/gather': indices[1, 2] = 5 is out of range [0, 5) for axis 0 of "
                "params (5, 3) (indices (2, 3))");
  EXPECT_STATUS(RunOnce(g, {Gather(p, neg, 1)}, {{p, pv}, {neg, T<int32_t>({2}, {-1, 0})}})
                    .status(),
                absl::StatusCode::kInvalidArgument,
                "indices[0] = -1 is out of range [0, 3) for axis 1 of params (5, 3)");
}

TEST(ScatterAdd, IndexOutOfRangeIsARunTimeError) {
  Graph g;
  Value idx = g.Input("idx", DType::kInt64, {3});
  Value upd = g.Input("upd", DType::kFloat32, {3, 2});
  EXPECT_STATUS(RunOnce(g, {ScatterAdd(idx, upd, 3)},
                        {{idx, T<int64_t>({3}, {0, 1, 3})},
                         {upd, T<float>({3, 2}, {1, 2, 3, 4, 5, 6})}})
                    .status(),
                absl::StatusCode::kInvalidArgument,
                "scatter_add 'scatter_add': indices[2] = 3 is out of range [0, 3) for axis 0 of "
                "the output (3, 2)");
}

// With constant params and indices the gather is folded, so a bad index is
// found when compiling.
TEST(Gather, BadConstantIndexFailsCompile) {
  Graph g;
  Value p = g.Constant(T<float>({2}, {1, 2}));
  Value idx = g.Constant(T<int64_t>({1}, {2}));
  Executor exec(g);
  EXPECT_STATUS(exec.Compile({Gather(p, idx)}).status(), absl::StatusCode::kInvalidArgument,
                "gather 'gather': indices[0] = 2 is out of range [0, 2)");
}

TEST(Gather, BuildErrors) {
  Graph g;
  Value p = g.Input("p", DType::kFloat32, {4, 3});
  Value idx = g.Input("idx", DType::kInt64, {2});
  Value fidx = g.Input("fidx", DType::kFloat32, {2});
  Value scalar = g.Input("scalar", DType::kFloat32, {});
  Value upd = g.Input("upd", DType::kFloat32, {2, 3});
  Value iupd = g.Input("iupd", DType::kInt64, {2, 3});
  EXPECT_STATUS(Gather(p, fidx).status(), absl::StatusCode::kInvalidArgument,
                "gather 'gather': indices must be int32 or int64, got float32 [inputs: float32 "
                "(4, 3), float32 (2,)]");
  EXPECT_STATUS(Gather(p, idx, 2).status(), absl::StatusCode::kInvalidArgument,
                "axis 2 is out of range for rank 2");
  EXPECT_STATUS(Gather(p, idx, -3).status(), absl::StatusCode::kInvalidArgument,
                "axis -3 is out of range for rank 2");
  EXPECT_STATUS(Gather(scalar, idx).status(), absl::StatusCode::kInvalidArgument,
                "params must have rank >= 1");
  EXPECT_STATUS(Embedding(p, fidx).status(), absl::StatusCode::kInvalidArgument,
                "indices must be int32 or int64");
  EXPECT_STATUS(ScatterAdd(idx, iupd, 4).status(), absl::StatusCode::kInvalidArgument,
                "scatter_add 'scatter_add': updates must be float32 or float64, got int64");
  EXPECT_STATUS(ScatterAdd(fidx, upd, 4).status(), absl::StatusCode::kInvalidArgument,
                "indices must be int32 or int64, got float32");
  EXPECT_STATUS(ScatterAdd(idx, upd, -1).status(), absl::StatusCode::kInvalidArgument,
                "n must be >= 0, got -1");
  EXPECT_STATUS(ScatterAdd(idx, upd, 4, 1).status(), absl::StatusCode::kInvalidArgument,
                "updates (2, 3) must have the indices' shape (2,) at axis 1");
  EXPECT_STATUS(ScatterAdd(idx, upd, 4, -1).status(), absl::StatusCode::kInvalidArgument,
                "axis must be in [0, 1] (the rank of updates (2, 3) less that of indices (2,)), "
                "got -1");
  EXPECT_STATUS(ScatterAdd(idx, upd, 4, 2).status(), absl::StatusCode::kInvalidArgument,
                "axis must be in [0, 1]");
}

}  // namespace
}  // namespace dagrad::testing
