// Positional encodings: the notebooks' sinusoidal values, folding, errors,
// rotary embedding by hand (finite-difference checks: the
// positional_encoding case, model_cases.cc).

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "models/nn/attention.h"
#include "models/nn/positional_encoding.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(Sinusoidal, NotebookValues) {
  Graph g;
  Value pe = models::SinusoidalTable(g, 3, 4);
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {pe}));
  EXPECT_EQ(out[0].shape(), Shape({3, 4}));
  ExpectAllClose(out[0],
                 {0, 1, 0, 1,                                  // position 0
                  0.841471, 0.540302, 0.010000, 0.999950,      // position 1
                  0.909297, -0.416147, 0.019999, 0.999800},    // position 2
                 0, 1e-6, "P");
}

TEST(Sinusoidal, MatchesTheFormulaEverywhere) {
  const int64_t L = 50, d = 16;
  Graph g;
  Value pe = models::SinusoidalTable(g, L, d, DType::kFloat64);
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {pe}));
  std::vector<double> want;
  for (int64_t i = 0; i < L; ++i) {
    for (int64_t c = 0; c < d; ++c) {
      const double angle = i / std::pow(10000.0, (c - c % 2) / double(d));
      want.push_back(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  ExpectAllClose(out[0], want, 1e-12, 1e-12, "P");
}

TEST(Sinusoidal, TableIsFoldedIntoAConstant) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 5, 8});
  Value y = models::AddSinusoidal(x);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  EXPECT_GT(plan->info().num_folded, 5);
  ASSERT_EQ(plan->info().steps.size(), 1u);  // only x + P remains
  EXPECT_EQ(g.node(plan->info().steps[0]).op->name, "add");
  EXPECT_EQ(g.node(plan->info().steps[0]).scope, "positional_encoding");
}

TEST(Sinusoidal, OddOrTinyDimensionsAreErrors) {
  Graph g;
  EXPECT_STATUS(models::SinusoidalTable(g, 4, 5).status(), absl::StatusCode::kInvalidArgument,
                "even dim >= 2, got max_len 4, dim 5");
  EXPECT_STATUS(models::SinusoidalTable(g, 0, 4).status(), absl::StatusCode::kInvalidArgument,
                "max_len >= 1");
  Value x = g.Input("x", DType::kFloat32, {2, 3});
  EXPECT_STATUS(models::AddSinusoidal(x).status(), absl::StatusCode::kInvalidArgument,
                "must be (B, T, E)");
}

// Sizes whose subgraph fails (2^60 positions, 2^62 rows of nothing, a
// start past float64's exact integers) crashed, the helpers reading the
// shape of an error Value; they are errors naming the size.
TEST(Sinusoidal, HugeSizesAreErrorsNotCrashes) {
  Graph g;
  EXPECT_STATUS(models::SinusoidalTable(g, int64_t{1} << 60, 4).status(),
                absl::StatusCode::kInvalidArgument, "arange");
  Value empty = g.Input("empty", DType::kFloat32, {1, int64_t{1} << 62, 0});
  EXPECT_FALSE(models::ApplyRotary(empty).ok());
  Value x = g.Input("x", DType::kFloat32, {1, 2, 4});
  EXPECT_STATUS(models::ApplyRotary(x, 10000, int64_t{1} << 60).status(),
                absl::StatusCode::kInvalidArgument,
                "positions 1152921504606846976 to 1152921504606846976 + 2 - 1 must lie within "
                "+-2^53");
  EXPECT_TRUE(models::ApplyRotary(x, 10000, -(int64_t{1} << 53)).ok());
}

TEST(Rotary, RotatesAdjacentPairsByPosition) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {2, 4});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {models::ApplyRotary(x)},
                                         {{x, T<double>({2, 4}, {1, 0, 0, 1, 1, 0, 0, 1})}}));
  // Position 0: unchanged. Position 1: pair 0 by 1 rad, pair 1 by 0.01 rad.
  ExpectAllClose(out[0],
                 {1, 0, 0, 1, std::cos(1.0), std::sin(1.0), -std::sin(0.01), std::cos(0.01)},
                 1e-12, 1e-12, "rope");
  EXPECT_STATUS(models::ApplyRotary(g.Input("odd", DType::kFloat64, {2, 3})).status(),
                absl::StatusCode::kInvalidArgument, "D even");
}

// A base of 0, below 0 or not finite made every rotated value NaN, and
// MultiheadAttention's rotary_base passed it on unchecked.
TEST(Rotary, ABaseThatIsNotAPositiveNumberIsAnError) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {2, 4});
  for (double base : {0.0, -2.0, std::nan(""), double{INFINITY}}) {
    EXPECT_STATUS(models::ApplyRotary(x, base).status(), absl::StatusCode::kInvalidArgument,
                  absl::StrCat("rotary embedding needs a finite base > 0, got ", base));
    EXPECT_STATUS(nn::MultiheadAttention::Create(
                      g, "mha", {.embed_dim = 4, .num_heads = 2, .rotary = true, .rotary_base = base})
                      .status(),
                  absl::StatusCode::kInvalidArgument, "rotary_base must be finite and > 0");
  }
}

// Positions from `start`: rows of a longer sequence's rotation.
TEST(Rotary, StartContinuesASequence) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {2, 5, 4});
  ASSERT_OK_AND_ASSIGN(auto out,
                       RunOnce(g, {Slice(models::ApplyRotary(x), 1, 3, 5),
                                   models::ApplyRotary(Slice(x, 1, 3, 5), 10000.0, 3)},
                               {{x, Random(DType::kFloat64, {2, 5, 4}, 2)}}));
  ExpectAllClose(out[1], AsDoubles(out[0]), 1e-15, 1e-15, "positions 3, 4");
}

// Positions fed at run time: each row rotates as that row of the whole
// sequence does, in any order (a cached block's new tokens).
TEST(Rotary, FedPositionsRotateAsThoseRowsOfTheSequence) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {2, 5, 4});
  Value positions = g.Input("positions", DType::kInt64, {2});
  auto rows_4_and_1 = [](Value v) { return Concat({Slice(v, 1, 4, 5), Slice(v, 1, 1, 2)}, 1); };
  ASSERT_OK_AND_ASSIGN(
      auto out, RunOnce(g, {rows_4_and_1(models::ApplyRotary(x)),
                            models::ApplyRotary(rows_4_and_1(x), positions)},
                        {{x, Random(DType::kFloat64, {2, 5, 4}, 2)},
                         {positions, T<int64_t>({2}, {4, 1})}}));
  ExpectAllClose(out[1], AsDoubles(out[0]), 1e-15, 1e-15, "positions 4, 1");
  EXPECT_STATUS(models::ApplyRotary(x, positions).status(), absl::StatusCode::kInvalidArgument,
                "rotary embedding of x (2, 5, 4) needs int64 positions (5), got int64 (2,)");
}

TEST(LearnedPositional, AddsTheTableRowsAndChecksLength) {
  Graph g;
  models::LearnedPositionalEmbedding pos(g, "pos", 4, 3);
  EXPECT_EQ(pos.weight().path(), "pos/weight");
  Value x = g.Input("x", DType::kFloat32, {1, 5, 3});
  EXPECT_STATUS(pos(x).status(), absl::StatusCode::kInvalidArgument, "cannot add to x (1, 5, 3)");
}


}  // namespace
}  // namespace dagrad::testing
