// Sampling ops (ops/sampling.h): the order of ties and NaN, Multinomial's
// distribution (a chi-square bound at a fixed seed, so deterministic), its
// determinism in (seed, step), its errors, shape errors, gradients that
// stop, and DOT. PyTorch goldens: tests/autodiff/golden_ops_test.cc (argmax_*,
// topk_*); CUDA against the CPU: tests/autodiff/sampling_cases.cc.

#include "ops/sampling.h"

#include <cmath>
#include <vector>

#include "engine/dot/dot.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

std::vector<int64_t> Ints(const Tensor& t) {
  const int64_t* p = t.data<int64_t>();
  return std::vector<int64_t>(p, p + t.num_elements());
}

TEST(Sampling, TiesInIndexOrderNanFirst) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 6});
  const Feeds feeds = {
      {x, T<float>({2, 6}, {1, 3, 3, 2, 3, 0, -1, NAN, 4, NAN, 4, 0})}};
  const TopKResult top = TopK(x, 4);
  ASSERT_OK_AND_ASSIGN(auto out,
                       RunOnce(g, {ArgMax(x), top.values, top.indices}, feeds));
  EXPECT_EQ(Ints(out[0]), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(out[2]), (std::vector<int64_t>{1, 2, 4, 3, 1, 3, 2, 4}));
  const std::vector<double> v = AsDoubles(out[1]);
  EXPECT_EQ(std::vector<double>(v.begin(), v.begin() + 4),
            (std::vector<double>{3, 3, 3, 2}));
  EXPECT_TRUE(std::isnan(v[4]) && std::isnan(v[5]));
  EXPECT_EQ(v[6], 4);
  EXPECT_EQ(v[7], 4);
  EXPECT_EQ(out[0].shape(), Shape({2}));
  EXPECT_EQ(out[1].shape(), Shape({2, 4}));
}

// Rows of every length from 1 to 70 (shorter and longer than ArgMax's
// vectorised blocks of 16, ops/sampling.cc), three rows each, drawn from
// few values (ties across lanes, -0 beside 0, infinities) with a NaN at a
// random place in a third of them: each is the first NaN, else the first
// largest, as a plain loop finds it.
TEST(Sampling, ArgMaxOfRowsOfEveryLengthIsTheFirstLargest) {
  const std::vector<float> pool = {-INFINITY, -1, -0.0f, 0, 2, 7, INFINITY};
  uint32_t state = 12345;
  auto next = [&](uint32_t bound) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) % bound;
  };
  constexpr int64_t kRows = 3;
  for (int64_t len = 1; len <= 70; ++len) {
    std::vector<float> data;
    std::vector<int64_t> expected;
    for (int64_t r = 0; r < kRows; ++r) {
      std::vector<float> row(len);
      for (float& v : row) v = pool[next(pool.size())];
      if (next(3) == 0) row[next(len)] = NAN;
      int64_t best = 0;
      for (int64_t i = 0; i < len && !std::isnan(row[best]); ++i) {
        if (std::isnan(row[i]) || row[i] > row[best]) best = i;
      }
      data.insert(data.end(), row.begin(), row.end());
      expected.push_back(best);
    }
    for (DType d : {DType::kFloat32, DType::kFloat64}) {
      Graph g;
      Value x = g.Input("x", DType::kFloat32, {kRows, len});
      ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {ArgMax(Cast(x, d))},
                                             {{x, T<float>({kRows, len}, data)}}));
      EXPECT_EQ(Ints(out[0]), expected) << DTypeName(d) << ", rows of " << len;
    }
  }
}

// Counts of 200000 draws from one distribution (rows of the same weights,
// not normalised, one zero) against their expectation: Pearson's
// chi-square with 4 degrees of freedom is below 25 (p < 1e-4 for a correct
// sampler) at this seed; a zero weight is never drawn.
TEST(Sampling, MultinomialFollowsTheWeights) {
  const std::vector<double> weights = {1, 2, 0, 3, 4, 10};
  const int64_t rows = 200000, n = weights.size();
  std::vector<float> probs;
  for (int64_t r = 0; r < rows; ++r)
    probs.insert(probs.end(), weights.begin(), weights.end());
  Graph g;
  Value p = g.Input("p", DType::kFloat32, {rows, n});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Multinomial(p, 1234)},
                                         {{p, T<float>({rows, n}, probs)}}));
  ASSERT_EQ(out[0].shape(), Shape({rows, 1}));
  std::vector<int64_t> counts(n);
  for (int64_t i : Ints(out[0])) {
    ASSERT_TRUE(i >= 0 && i < n) << i;
    ++counts[i];
  }
  EXPECT_EQ(counts[2], 0);
  double chi2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (weights[i] == 0) continue;
    const double expected = rows * weights[i] / 20.0;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 25.0);
}

// The draws are a function of (seed, step, row): the same again, others
// for another seed or step; float64 probs draw as float32's equal values.
TEST(Sampling, MultinomialIsDeterministicInSeedAndStep) {
  Graph g;
  Value p = g.Input("p", DType::kFloat32, {64, 10});
  Value p64 = Cast(p, DType::kFloat64);
  const Feeds feeds = {{p, Random(DType::kFloat32, {64, 10}, 3, 0.0, 1.0)}};
  const std::vector<Value> draws = {Multinomial(p, 5), Multinomial(p, 5),
                                    Multinomial(p, 6), Multinomial(p64, 5)};
  ASSERT_OK_AND_ASSIGN(auto a, RunOnce(g, draws, feeds, {.step = 1}));
  ASSERT_OK_AND_ASSIGN(auto b, RunOnce(g, draws, feeds, {.step = 1}));
  ASSERT_OK_AND_ASSIGN(auto c, RunOnce(g, draws, feeds, {.step = 2}));
  EXPECT_EQ(Ints(a[0]), Ints(b[0]));
  EXPECT_EQ(Ints(a[0]), Ints(a[1]));
  EXPECT_EQ(Ints(a[0]), Ints(a[3]));
  EXPECT_NE(Ints(a[0]), Ints(a[2]));
  EXPECT_NE(Ints(a[0]), Ints(c[0]));
}

TEST(Sampling, MultinomialRejectsARowThatIsNoDistribution) {
  for (const std::vector<float>& bad : {std::vector<float>{0.5, 0.5, 0, 0},
                                        {0.5, 0.5, -1, 2},
                                        {0.5, 0.5, NAN, 1},
                                        {0.5, 0.5, INFINITY, 1}}) {
    Graph g;
    Value p = g.Input("p", DType::kFloat32, {2, 2});
    EXPECT_STATUS(
        RunOnce(g, {Multinomial(p, 1)}, {{p, T<float>({2, 2}, bad)}}).status(),
        absl::StatusCode::kInvalidArgument,
        "row 1 of probs is no distribution: its values must be finite and >= "
        "0, with "
        "a positive sum");
  }
}

TEST(Sampling, BuildErrors) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3, 4});
  Value empty = g.Input("empty", DType::kFloat32, {3, 0});
  Value scalar = g.Input("s", DType::kFloat32, {});
  Value flags = g.Input("b", DType::kBool, {3});
  Value ints = g.Input("i", DType::kInt64, {3});
  EXPECT_STATUS(ArgMax(x, 2).status(), absl::StatusCode::kInvalidArgument,
                "axis");
  EXPECT_STATUS(ArgMax(empty).status(), absl::StatusCode::kInvalidArgument,
                "argmax of an empty axis");
  EXPECT_STATUS(ArgMax(scalar).status(), absl::StatusCode::kInvalidArgument,
                "rank >= 1");
  EXPECT_STATUS(ArgMax(flags).status(), absl::StatusCode::kInvalidArgument,
                "must be numeric, got bool");
  EXPECT_STATUS(TopK(x, 5).values.status(), absl::StatusCode::kInvalidArgument,
                "k must be in [0, 4] (the axis' size), got 5");
  EXPECT_STATUS(TopK(x, -1, 0).indices.status(),
                absl::StatusCode::kInvalidArgument, "k must be in [0, 3]");
  EXPECT_STATUS(Multinomial(ints, 1).status(),
                absl::StatusCode::kInvalidArgument, "probs");
  EXPECT_STATUS(Multinomial(empty, 1).status(),
                absl::StatusCode::kInvalidArgument, "non-empty last axis");
}

// Gradients stop at the sampling ops: d/dx of sum(x) + sum(topk values)
// counts the sum's ones only.
TEST(Sampling, NotDifferentiable) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {2, 3});
  Value loss =
      Sum(x) + Sum(TopK(x, 2).values) + Sum(Cast(ArgMax(x), DType::kFloat64));
  ASSERT_OK_AND_ASSIGN(auto dx, Gradients(loss, {x}));
  ASSERT_OK_AND_ASSIGN(
      auto out, RunOnce(g, {dx[0]}, {{x, Random(DType::kFloat64, {2, 3}, 1)}}));
  ExpectAllClose(out[0], {1, 1, 1, 1, 1, 1}, 0, 0, "dx");
}

TEST(Sampling, ExportedToDot) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 5});
  const TopKResult top = TopK(x, 2);
  ASSERT_OK_AND_ASSIGN(
      std::string dot,
      ToDot(g, {ArgMax(x), top.values, top.indices, Multinomial(Exp(x), 3)}));
  for (const char* label :
       {"ArgMax", "TopK\\n", "TopK indices", "Multinomial", "int64"}) {
    EXPECT_NE(dot.find(label), std::string::npos) << label;
  }
}

}  // namespace
}  // namespace dagrad::testing
