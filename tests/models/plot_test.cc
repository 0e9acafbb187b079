// dagrad::plot (models/plot/): the pictures of a run hold what they draw,
// escape what they print, and are the same for the same data.

#include "models/plot/plots.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/plot/svg.h"
#include "tests/support/test_util.h"

namespace dagrad::plot {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Plot, AttentionHeatmapsDrawEveryHeadOfEveryLayerWithEscapedLabels) {
  // Two layers of three heads over two positions.
  const Tensor w = testing::T<float>({3, 2, 2}, {1, 0, 0.5, 0.5, 1, 0, 0, 1, 0.2, 0.8, 1, 0});
  ASSERT_OK_AND_ASSIGN(const std::string svg,
                       AttentionHeatmaps({w, w}, {"<a>", "&"}, "weights \"x\""));
  EXPECT_EQ(Count(svg, "layer 0, head "), 3);
  EXPECT_EQ(Count(svg, "layer 1, head "), 3);
  EXPECT_THAT(svg, HasSubstr("&lt;a&gt;"));
  EXPECT_THAT(svg, HasSubstr("&amp;"));
  EXPECT_THAT(svg, HasSubstr("weights &quot;x&quot;"));
  EXPECT_THAT(svg, Not(HasSubstr("<a>")));
  EXPECT_EQ(svg, *AttentionHeatmaps({w, w}, {"<a>", "&"}, "weights \"x\""));  // deterministic
}

// Weights of another dtype or shape, or labels not one per position, were
// read as float32 (H, L, L) anyway: a crash, or an SVG of another buffer's
// bytes.
TEST(Plot, AttentionHeatmapsRefuseWeightsThatAreNotHeadsOfSquares) {
  const Tensor good = testing::T<float>({1, 2, 2}, {1, 0, 0.5, 0.5});
  const struct {
    Tensor w;
    std::vector<std::string> labels;
    std::string message;
  } cases[] = {
      {testing::T<double>({1, 2, 2}, {1, 0, 0.5, 0.5}), {}, "float64 (1, 2, 2)"},
      {testing::T<float>({4}, {1, 0, 0.5, 0.5}), {}, "float32 (4"},
      {testing::T<float>({2, 3, 1}, {1, 0, 0.5, 0.5, 1, 1}), {}, "float32 (2, 3, 1)"},
      {good, {"a"}, "with 1 labels' L, got float32 (1, 2, 2)"},
  };
  for (const auto& c : cases) {
    EXPECT_STATUS(AttentionHeatmaps({good, c.w}, c.labels, "t").status(),
                  absl::StatusCode::kInvalidArgument,
                  absl::StrCat("AttentionHeatmaps: layer ", c.labels.empty() ? "1" : "0"));
    EXPECT_THAT(AttentionHeatmaps({good, c.w}, c.labels, "t").status().message(),
                HasSubstr(c.message));
  }
}

TEST(Plot, LossCurvesDrawBothSplits) {
  const std::string svg = LossCurves({{.step = 10, .loss = 2.0, .eval_loss = 2.5},
                                      {.step = 20, .loss = 1.0, .eval_loss = 1.5}});
  EXPECT_THAT(svg, HasSubstr("cross-entropy"));
  EXPECT_THAT(svg, HasSubstr("held-out"));
  EXPECT_THAT(svg, HasSubstr("token accuracy"));
}

// A run of one metrics row drew one-point lines, which show nothing; a
// NaN row (every step of its window skipped) was bridged by a line.
TEST(Plot, LossCurvesDotALoneRowAndBreakAtANaN) {
  const std::string one = LossCurves({{.step = 5, .loss = 2.0, .eval_loss = 2.5}});
  EXPECT_GT(Count(one, "<circle"), 0);
  EXPECT_THAT(one, Not(HasSubstr("<polyline")));
  const double nan = std::nan("");
  const std::string gap = LossCurves({{.step = 1, .loss = 3, .eval_loss = 3},
                                      {.step = 2, .loss = 2, .eval_loss = 2},
                                      {.step = 3, .loss = nan, .eval_loss = 2},
                                      {.step = 4, .loss = 1, .eval_loss = 1},
                                      {.step = 5, .loss = 1, .eval_loss = 1}});
  // Training loss: two lines either side of the NaN; held-out loss: one.
  EXPECT_EQ(Count(gap, "<circle"), 0);
  EXPECT_GE(Count(gap, "<polyline"), 3);
}

TEST(Plot, PositionalEncodingDrawsTheTableAndFourColumns) {
  ASSERT_OK_AND_ASSIGN(const std::string svg, PositionalEncoding(16, 12));
  EXPECT_THAT(svg, HasSubstr("P (16 positions x 12 dims)"));
  EXPECT_THAT(svg, HasSubstr("columns 6-9 (as d2l plots them)"));
  for (const char* col : {"col 6", "col 7", "col 8", "col 9"}) EXPECT_THAT(svg, HasSubstr(col));
  // A narrower table: its last four columns, titled as they are (it said
  // 6-9 and drew column 3).
  ASSERT_OK_AND_ASSIGN(const std::string narrow, PositionalEncoding(3, 4));
  EXPECT_THAT(narrow, HasSubstr("columns 0-3<"));
  for (const char* col : {"col 0", "col 1", "col 2", "col 3"}) EXPECT_THAT(narrow, HasSubstr(col));
  ASSERT_OK_AND_ASSIGN(const std::string two, PositionalEncoding(3, 2));
  EXPECT_THAT(two, HasSubstr("columns 0-1<"));
}

TEST(Plot, XmlEscapeEscapesTheFiveCharacters) {
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
}

}  // namespace
}  // namespace dagrad::plot
