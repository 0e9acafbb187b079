// Cross-entropy and log-softmax: PyTorch goldens (loss and gradient, every
// reduction, ignore_index), hand-worked values, the all-ignored mean,
// and build and run-time errors. The op cases are in loss_cases.cc.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using Options = CrossEntropyOptions;

// --- PyTorch goldens ----------------------------------------------------------

// Runs a golden case: output `y` of build(inputs) and the gradient of
// sum(y * g) with respect to input `wrt`, compared with torch's `dwrt`.
void CheckGolden(const std::string& name, DType dtype, const std::string& wrt,
                 const std::function<Value(const std::map<std::string, Value>&,
                                           const nlohmann::json&)>& build) {
  SCOPED_TRACE(name + (dtype == DType::kFloat32 ? " float32" : " float64"));
  ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden("loss", name));
  Graph g;
  Feeds feeds;
  std::map<std::string, Value> in;
  for (const auto& [key, tensor] : c.inputs) {
    const Tensor t = dtype == DType::kFloat32 ? ToFloat32(tensor) : tensor;
    in[key] = g.Input(key, t.dtype(), t.shape());
    feeds.push_back({in[key], t});
  }
  Value y = build(in, c.attrs);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Mul(y, in.at("g"))), {in.at(wrt)}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {y, grads[0]}, feeds));
  const bool f32 = dtype == DType::kFloat32;
  ExpectAllClose(out[0], AsDoubles(c.outputs.at("y")), f32 ? 2e-6 : 1e-12, f32 ? 2e-6 : 1e-13,
                 "y");
  ExpectAllClose(out[1], AsDoubles(c.outputs.at("d" + wrt)), f32 ? 2e-5 : 1e-11,
                 f32 ? 1e-6 : 1e-14, "d" + wrt);
}

TEST(LossGolden, CrossEntropyMatchesTorch) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, GoldenCaseNames("loss"));
  int checked = 0;
  for (const std::string& name : names) {
    if (name.rfind("ce_", 0) != 0) continue;
    ++checked;
    for (DType dtype : {DType::kFloat64, DType::kFloat32}) {
      CheckGolden(name, dtype, "logits", [](const auto& in, const nlohmann::json& attrs) {
        const std::string r = attrs["reduction"].get<std::string>();
        const Options::Reduction reduction =
            r == "mean" ? Options::kMean : r == "sum" ? Options::kSum : Options::kNone;
        return CrossEntropy(in.at("logits"), in.at("targets"),
                            {.ignore_index = attrs["ignore_index"].get<int64_t>(),
                             .reduction = reduction,
                             .label_smoothing = attrs["label_smoothing"].get<double>()});
      });
    }
  }
  EXPECT_EQ(checked, 8);
}

TEST(LossGolden, LogSoftmaxMatchesTorch) {
  for (const char* name : {"log_softmax_2d", "log_softmax_3d_wide_range"}) {
    for (DType dtype : {DType::kFloat64, DType::kFloat32}) {
      CheckGolden(name, dtype, "x", [](const auto& in, const nlohmann::json&) {
        return LogSoftmax(in.at("x"));
      });
    }
  }
}

// --- Hand-worked values -------------------------------------------------------

// Row [0, 0, 0, 0] with target 2: ln 4. Row [0, ln 2, ln 3, ln 4] (softmax
// [1, 2, 3, 4] / 10) with target 3: ln(10 / 4). The third row is ignored.
TEST(LossValues, CrossEntropyByHand) {
  Graph g;
  Value logits = g.Input("logits", DType::kFloat64, {3, 4});
  Value t = g.Input("t", DType::kInt32, {3});
  Feeds feeds = {{logits, T<double>({3, 4}, {0, 0, 0, 0, 0, std::log(2.0), std::log(3.0),
                                            std::log(4.0), 5, 6, 7, 8})},
                 {t, T<int32_t>({3}, {2, 3, -100})}};
  const double a = std::log(4.0), b = std::log(10.0 / 4.0);
  Value mean = CrossEntropy(logits, t);
  Value sum = CrossEntropy(logits, t, {.reduction = Options::kSum});
  Value none = CrossEntropy(logits, t, {.reduction = Options::kNone});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {mean, sum, none}, feeds));
  ExpectAllClose(out[0], {(a + b) / 2}, 1e-14, 0, "mean over the 2 counted rows");
  ExpectAllClose(out[1], {a + b}, 1e-14, 0, "sum");
  ExpectAllClose(out[2], {a, b, 0}, 1e-14, 0, "none");
  EXPECT_EQ(out[0].shape(), Shape());
  EXPECT_EQ(out[2].shape(), Shape({3}));
}

// Every target ignored: the mean is 0 with a zero gradient (torch: NaN).
// Rows of 2^20 float32 logits: logsumexp's sum accumulates in double, so
// log_softmax and the loss are within a few float32 roundings of float64.
TEST(LossValues, LongFloat32RowsAgreeWithFloat64) {
  constexpr int64_t kRows = 2, kC = int64_t{1} << 20;
  const Tensor x = Random(DType::kFloat32, {kRows, kC}, 3);
  Graph g;
  Value logits = g.Input("logits", DType::kFloat32, {kRows, kC});
  Value targets = g.Input("targets", DType::kInt64, {kRows});
  ASSERT_OK_AND_ASSIGN(
      auto out, RunOnce(g, {LogSoftmax(logits),
                            CrossEntropy(logits, targets, {.reduction = Options::kNone})},
                        {{logits, x}, {targets, T<int64_t>({kRows}, {5, kC - 1})}}));
  const std::vector<double> xs = AsDoubles(x);
  std::vector<double> log_softmax(xs.size()), loss(kRows);
  for (int64_t r = 0; r < kRows; ++r) {
    const double* row = xs.data() + r * kC;
    const double m = *std::max_element(row, row + kC);
    double sum = 0;
    for (int64_t k = 0; k < kC; ++k) sum += std::exp(row[k] - m);
    const double lse = m + std::log(sum);
    for (int64_t k = 0; k < kC; ++k) log_softmax[r * kC + k] = row[k] - lse;
    loss[r] = lse - row[r == 0 ? 5 : kC - 1];
  }
  // Values near -14: float32's half ulp there is 5e-7, 4e-8 relative.
  ExpectAllClose(out[0], log_softmax, 1.5e-7, 0, "log_softmax");
  ExpectAllClose(out[1], loss, 1.5e-7, 0, "cross_entropy");
}

// A large max must not absorb the log of the shifted sum: the loss of
// [1e30] * 4 is log 4 (torch's too), where max + log 4 - x[t] rounded to 0;
// [1e4, 1e4 + 1, 1e4 + 2, 1e4 - 1] lost the sum's third digit in float32.
template <typename F>
void ExpectLargeLogitsKeepTheLog() {
  const double big = std::numeric_limits<F>::max();
  const double near = std::log(std::exp(-2.0) + std::exp(-1.0) + 1 + std::exp(-3.0));
  const struct {
    std::vector<double> row;
    double smoothing, loss;
  } cases[] = {
      {{1e30, 1e30, 1e30, 1e30}, 0, std::log(4.0)},
      {{-1e30, -1e30, -1e30, -1e30}, 0, std::log(4.0)},
      {{-1e30, -1e30, -1e30, -1e30}, 0.1, std::log(4.0)},
      {{big, big, big, big}, 0.1, std::log(4.0)},
      {{1e4, 1e4 + 1, 1e4 + 2, 1e4 - 1}, 0, near},
      // Smoothed: 0.9 (m - x[2]) + 0.1 mean(m - x) + log sum, mean(m - x) = 1.5.
      {{1e4, 1e4 + 1, 1e4 + 2, 1e4 - 1}, 0.2, 0.2 * 1.5 + near},
  };
  for (const auto& c : cases) {
    Graph g;
    Value logits = g.Input("logits", DTypeOf<F>::value, {1, 4});
    Value t = g.Input("t", DType::kInt64, {1});
    Value loss = CrossEntropy(logits, t, {.label_smoothing = c.smoothing});
    std::vector<F> row(c.row.begin(), c.row.end());
    ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {loss}, {{logits, T<F>({1, 4}, row)},
                                                      {t, T<int64_t>({1}, {2})}}));
    ExpectAllClose(out[0], {c.loss}, sizeof(F) == 4 ? 2e-7 : 1e-15, 0,
                   absl::StrCat(c.row[0], " smoothing ", c.smoothing));
  }
}

TEST(LossValues, LargeLogitsKeepTheLogOfTheirSum) {
  ExpectLargeLogitsKeepTheLog<float>();
  ExpectLargeLogitsKeepTheLog<double>();
}

TEST(LossValues, AllIgnoredMeanIsZeroWithZeroGradient) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Graph g;
    Value logits = g.Input("logits", dtype, {2, 3});
    Value t = g.Input("t", DType::kInt64, {2});
    Value loss = CrossEntropy(logits, t, {.ignore_index = 1});
    ASSERT_OK_AND_ASSIGN(auto grads, Gradients(loss, {logits}));
    const Tensor lv64 = T<double>({2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor lv = dtype == DType::kFloat32 ? ToFloat32(lv64) : lv64;
    ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {loss, grads[0]},
                                           {{logits, lv}, {t, T<int64_t>({2}, {1, 1})}}));
    ExpectAllClose(out[0], {0}, 0, 0, "loss");
    ExpectAllClose(out[1], {0, 0, 0, 0, 0, 0}, 0, 0, "dlogits");
  }
}

// --- Errors -------------------------------------------------------------------

TEST(LossErrors, TargetOutOfRangeIsARunTimeErrorNamingPositionAndValue) {
  Graph g;
  Value logits = g.Input("logits", DType::kFloat32, {2, 3, 5});
  Value t = g.Input("t", DType::kInt64, {2, 3});
  Value loss = CrossEntropy(logits, t);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(loss, {logits}));
  const Tensor lv = Random(DType::kFloat32, {2, 3, 5}, 2);
  EXPECT_STATUS(RunOnce(g, {loss}, {{logits, lv}, {t, T<int64_t>({2, 3}, {0, 1, 2, 3, 4, 5})}})
                    .status(),
                absl::StatusCode::kInvalidArgument,
                "cross_entropy 'cross_entropy': targets[1, 2] = 5 is outside [0, 5) and is not "
                "ignore_index (-100)");
  EXPECT_STATUS(RunOnce(g, {loss}, {{logits, lv}, {t, T<int64_t>({2, 3}, {0, -1, 2, 3, 4, 0})}})
                    .status(),
                absl::StatusCode::kInvalidArgument, "targets[0, 1] = -1 is outside [0, 5)");
  // A plan of the gradient alone never runs the forward op: the backward op
  // checks the targets too.
  EXPECT_STATUS(
      RunOnce(g, {grads[0]}, {{logits, lv}, {t, T<int64_t>({2, 3}, {0, 1, 7, 3, 4, 0})}})
          .status(),
      absl::StatusCode::kInvalidArgument,
      "cross_entropy_grad 'grad/cross_entropy_grad': targets[0, 2] = 7 is outside [0, 5)");
}

TEST(LossErrors, BadInputsAreBuildErrorsNamingOpAndShapes) {
  Graph g;
  Value logits = g.Input("logits", DType::kFloat32, {4, 3});
  EXPECT_STATUS(CrossEntropy(logits, g.Input("tf", DType::kFloat32, {4})).status(),
                absl::StatusCode::kInvalidArgument,
                "cross_entropy 'cross_entropy': targets must be int32 or int64, got float32");
  EXPECT_STATUS(CrossEntropy(logits, g.Input("ts", DType::kInt64, {4, 3})).status(),
                absl::StatusCode::kInvalidArgument,
                "targets (4, 3) must have the logits' leading shape (4,) for logits (4, 3)");
  EXPECT_STATUS(CrossEntropy(g.Input("li", DType::kInt64, {4, 3}), g.Input("t", DType::kInt64, {4}))
                    .status(),
                absl::StatusCode::kInvalidArgument, "logits must be float32 or float64, got int64");
  EXPECT_STATUS(CrossEntropy(g.Input("l0", DType::kFloat32, {}), g.Input("t0", DType::kInt64, {}))
                    .status(),
                absl::StatusCode::kInvalidArgument, "logits must have rank >= 1");
  Value targets = g.Input("t4", DType::kInt64, {4});
  for (double e : {-0.1, 1.5, std::nan("")}) {
    EXPECT_STATUS(CrossEntropy(logits, targets, {.label_smoothing = e}).status(),
                  absl::StatusCode::kInvalidArgument,
                  absl::StrCat("label_smoothing must be in [0, 1], got ", e));
  }
}

}  // namespace
}  // namespace dagrad::testing
